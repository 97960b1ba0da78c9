"""The PostgreSQL backend's statements as written, before any server runs them (archive/postgres/pg.py, pg_fulltext)."""

from __future__ import annotations

from memlikehuman.archive.postgres import pg, pg_fulltext


def test_an_event_insert_returns_its_sequence_in_the_same_statement() -> None:
    sql = pg.translate("INSERT INTO events (event_id, text) VALUES (?, ?)")

    assert sql == "INSERT INTO events (event_id, text) VALUES (%s, %s) RETURNING sequence AS mlh_inserted_rowid"


def test_a_memory_insert_returns_its_id_in_the_same_statement() -> None:
    assert pg.translate("INSERT INTO memories (content) VALUES (?)").endswith(" RETURNING id AS mlh_inserted_rowid")


def test_inserts_into_other_tables_or_from_a_select_are_left_as_written() -> None:
    for sql in (
        "INSERT INTO cues (event_sequence, position) VALUES (?, ?)",
        "INSERT INTO events (event_id) SELECT event_id FROM staged",
        "INSERT INTO memories (content) VALUES (?) ON CONFLICT DO NOTHING",
    ):
        assert "RETURNING" not in pg.translate(sql)


def test_postings_count_each_stemmed_term_per_column() -> None:
    total, found = pg_fulltext.postings("events_fts", ["Running runs", "Ana", "ran"])

    assert total == 4
    assert sorted(found) == [("ana", 1, 1), ("ran", 2, 1), ("run", 0, 2)]


def test_an_ngram_table_keeps_its_terms_unstemmed() -> None:
    _, found = pg_fulltext.postings("events_ngrams", ["running"])

    assert found == [("running", 0, 1)]
