"""The PostgreSQL schema: its own append-only list of migrations, with the same ledger table.

The tables and columns are those of the SQLite schema after its migrations (archive/migrations.py),
so every query of the archive modules runs on both. What differs:

- Text columns compare bytewise (COLLATE "C"), as SQLite's do: orders, exports and ranges agree.
- The full-text indexes are plain tables (archive/postgres/pg_fulltext.py): per table a row per record with
  its token count, and its postings (term, column, count). BM25 is computed from them the way
  FTS5's bm25() does, from the same tokens (FTS5's own tokenizers, run in process).
- The scope counters of SQLite's m003 are kept by PL/pgSQL triggers.
- ``archive_writes`` counts vector writes per server connection, the way SQLite's
  ``PRAGMA data_version`` tells a connection that another one committed (index/vectors.py).
- The SQLite functions the queries use and PostgreSQL lacks are created here.

Several servers starting at once on an empty database: every migration runs in one write
transaction with its ledger row, and write transactions hold the archive's write lock (pg.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..connection import Connection

Migration = Callable[[Any], None]
MIGRATIONS: list[Migration] = []
FULLTEXT_TABLES = {
    "events_fts": 3,
    "memories_fts": 2,
    "events_ngrams": 3,
    "memories_ngrams": 2,
    "events_passages": 3,
}


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


_FUNCTIONS = """
CREATE FUNCTION unixepoch(modifier text) RETURNS double precision LANGUAGE sql VOLATILE
    AS $$ SELECT extract(epoch FROM clock_timestamp())::double precision $$;
CREATE FUNCTION mlh_total_step(acc double precision, value double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE AS $$ SELECT acc + coalesce(value, 0) $$;
CREATE AGGREGATE total(double precision) (SFUNC = mlh_total_step, STYPE = double precision, INITCOND = '0');
CREATE FUNCTION mlh_concat_step(acc text, value text, separator text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN value IS NULL THEN acc WHEN acc IS NULL THEN value
                                        ELSE acc || separator || value END $$;
CREATE AGGREGATE group_concat(text, text) (SFUNC = mlh_concat_step, STYPE = text);
CREATE FUNCTION mlh_array_step(acc json[], value json) RETURNS json[]
    LANGUAGE sql IMMUTABLE AS $$ SELECT array_append(acc, value) $$;
CREATE FUNCTION mlh_array_text(acc json[]) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(array_to_json(acc)::text, '[]') $$;
CREATE AGGREGATE json_group_array(json) (
    SFUNC = mlh_array_step, STYPE = json[], INITCOND = '{}', FINALFUNC = mlh_array_text);
"""

_TABLES = """
CREATE TABLE events (
    sequence          bigserial PRIMARY KEY,
    event_id          text COLLATE "C" NOT NULL UNIQUE,
    persona_id        text COLLATE "C" NOT NULL,
    project_id        text COLLATE "C" NOT NULL,
    session_id        text COLLATE "C" NOT NULL,
    role              text COLLATE "C" NOT NULL,
    source            text COLLATE "C" NOT NULL,
    category          text COLLATE "C" NOT NULL,
    kind              text COLLATE "C" NOT NULL DEFAULT 'record',
    text              text COLLATE "C" NOT NULL,
    occurred_at       text COLLATE "C" NOT NULL,
    occurred_at_given bigint NOT NULL,
    recorded_at       text COLLATE "C" NOT NULL,
    payload_hash      text COLLATE "C" NOT NULL,
    extraction_state  text COLLATE "C" NOT NULL,
    extraction_error  text COLLATE "C"
);
CREATE INDEX events_by_scope ON events(persona_id, project_id, sequence);
CREATE INDEX events_by_session ON events(persona_id, project_id, session_id, sequence);
CREATE INDEX events_by_state ON events(extraction_state) WHERE extraction_state != 'complete';
CREATE INDEX events_by_time ON events(persona_id, project_id, occurred_at);

CREATE TABLE cues (
    event_sequence bigint NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
    position       bigint NOT NULL,
    kind           text COLLATE "C" NOT NULL,
    key            text COLLATE "C" NOT NULL,
    label          text COLLATE "C",
    PRIMARY KEY (event_sequence, position)
);
CREATE INDEX cues_by_key ON cues(key);

CREATE TABLE memories (
    id              bigserial PRIMARY KEY,
    memory_id       text COLLATE "C" NOT NULL UNIQUE,
    event_sequence  bigint NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
    persona_id      text COLLATE "C" NOT NULL,
    project_id      text COLLATE "C" NOT NULL,
    session_id      text COLLATE "C" NOT NULL,
    content         text COLLATE "C" NOT NULL,
    quote           text COLLATE "C" NOT NULL,
    kind            text COLLATE "C" NOT NULL,
    basis           text COLLATE "C" NOT NULL,
    category        text COLLATE "C" NOT NULL,
    subject         text COLLATE "C",
    gist            text COLLATE "C",
    valid_from      text COLLATE "C" NOT NULL,
    valid_to        text COLLATE "C",
    recorded_at     text COLLATE "C" NOT NULL,
    supersedes      bigint REFERENCES memories(id) ON DELETE SET NULL,
    superseded_by   bigint REFERENCES memories(id) ON DELETE SET NULL,
    revoked_at      text COLLATE "C",
    revoke_reason   text COLLATE "C",
    replaced_by     bigint REFERENCES memories(id) ON DELETE SET NULL,
    known_from      text COLLATE "C"
);
CREATE INDEX memories_by_scope ON memories(persona_id, project_id, id);
CREATE INDEX memories_by_event ON memories(event_sequence);
CREATE INDEX memories_by_subject ON memories(persona_id, project_id, subject) WHERE subject IS NOT NULL;
CREATE INDEX memories_by_supersedes ON memories(supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX memories_by_superseded_by ON memories(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE INDEX memories_by_replaced_by ON memories(replaced_by) WHERE replaced_by IS NOT NULL;

CREATE TABLE corrections (
    event_sequence  bigint PRIMARY KEY REFERENCES events(sequence) ON DELETE CASCADE,
    original_id     bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    reason          text COLLATE "C" NOT NULL
);
CREATE INDEX corrections_by_original ON corrections(original_id);

CREATE TABLE event_vectors (
    event_sequence bigint PRIMARY KEY REFERENCES events(sequence) ON DELETE CASCADE,
    model          text COLLATE "C" NOT NULL,
    dim            bigint NOT NULL,
    vector         bytea NOT NULL
);
CREATE TABLE memory_vectors (
    memory_rowid   bigint PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    model          text COLLATE "C" NOT NULL,
    dim            bigint NOT NULL,
    vector         bytea NOT NULL
);

CREATE TABLE checkpoints (
    id                 bigserial PRIMARY KEY,
    checkpoint_id      text COLLATE "C" NOT NULL UNIQUE,
    persona_id         text COLLATE "C" NOT NULL,
    project_id         text COLLATE "C" NOT NULL,
    session_id         text COLLATE "C" NOT NULL,
    covered_event_id   text COLLATE "C" NOT NULL,
    covered_sequence   bigint NOT NULL,
    state              text COLLATE "C",
    created_at         text COLLATE "C" NOT NULL,
    invalidated_at     text COLLATE "C",
    invalidated_reason text COLLATE "C"
);
CREATE INDEX checkpoints_by_scope ON checkpoints(persona_id, project_id, session_id, id);

CREATE TABLE persona_versions (
    persona_id  text COLLATE "C" NOT NULL,
    version     bigint NOT NULL,
    text        text COLLATE "C" NOT NULL,
    created_at  text COLLATE "C" NOT NULL,
    PRIMARY KEY (persona_id, version)
);

CREATE TABLE extraction_claims (
    event_sequence  bigint PRIMARY KEY REFERENCES events(sequence) ON DELETE CASCADE,
    persona_id      text COLLATE "C" NOT NULL,
    project_id      text COLLATE "C" NOT NULL,
    claimed_by      text COLLATE "C",
    claimed_until   double precision,
    attempts        bigint NOT NULL DEFAULT 0,
    retry_at        double precision
);
CREATE INDEX extraction_claims_by_scope ON extraction_claims(persona_id, project_id);

CREATE TABLE event_dates (
    event_sequence bigint NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
    day_from       text COLLATE "C" NOT NULL,
    day_to         text COLLATE "C" NOT NULL,
    PRIMARY KEY (event_sequence, day_from, day_to)
);
CREATE INDEX event_dates_by_day ON event_dates (day_from);
"""

_COUNTERS = """
CREATE TABLE scope_counts (
    persona_id text COLLATE "C" NOT NULL,
    project_id text COLLATE "C" NOT NULL,
    events     bigint NOT NULL,
    pending    bigint NOT NULL,
    failed     bigint NOT NULL,
    PRIMARY KEY (persona_id, project_id)
);
CREATE TABLE scope_vector_counts (
    persona_id text COLLATE "C" NOT NULL,
    project_id text COLLATE "C" NOT NULL,
    model      text COLLATE "C" NOT NULL,
    events     bigint NOT NULL,
    PRIMARY KEY (persona_id, project_id, model)
);

CREATE FUNCTION mlh_scope_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO scope_counts AS s VALUES (NEW.persona_id, NEW.project_id, 1,
            (NEW.extraction_state = 'pending')::int, (NEW.extraction_state = 'failed')::int)
        ON CONFLICT (persona_id, project_id) DO UPDATE SET events = s.events + 1,
            pending = s.pending + excluded.pending, failed = s.failed + excluded.failed;
        RETURN NEW;
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE scope_counts
        SET pending = pending + (NEW.extraction_state = 'pending')::int - (OLD.extraction_state = 'pending')::int,
            failed = failed + (NEW.extraction_state = 'failed')::int - (OLD.extraction_state = 'failed')::int
        WHERE persona_id = NEW.persona_id AND project_id = NEW.project_id;
        RETURN NEW;
    END IF;
    UPDATE scope_counts
    SET events = events - 1, pending = pending - (OLD.extraction_state = 'pending')::int,
        failed = failed - (OLD.extraction_state = 'failed')::int
    WHERE persona_id = OLD.persona_id AND project_id = OLD.project_id;
    UPDATE scope_vector_counts SET events = events - 1
    WHERE persona_id = OLD.persona_id AND project_id = OLD.project_id
      AND model IN (SELECT model FROM event_vectors WHERE event_sequence = OLD.sequence);
    RETURN OLD;
END $$;
CREATE TRIGGER scope_counts_insert AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION mlh_scope_counts();
CREATE TRIGGER scope_counts_state AFTER UPDATE OF extraction_state ON events FOR EACH ROW
    WHEN (OLD.extraction_state IS DISTINCT FROM NEW.extraction_state) EXECUTE FUNCTION mlh_scope_counts();
-- BEFORE: the event's vectors are still there to be counted out (the cascade deletes them after).
CREATE TRIGGER scope_counts_delete BEFORE DELETE ON events FOR EACH ROW EXECUTE FUNCTION mlh_scope_counts();

CREATE FUNCTION mlh_vector_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE scope_vector_counts SET events = events - 1
        WHERE model = OLD.model AND (persona_id, project_id) =
            (SELECT persona_id, project_id FROM events WHERE sequence = OLD.event_sequence);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO scope_vector_counts AS s
            SELECT persona_id, project_id, NEW.model, 1 FROM events WHERE sequence = NEW.event_sequence
        ON CONFLICT (persona_id, project_id, model) DO UPDATE SET events = s.events + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER scope_vector_counts_insert AFTER INSERT ON event_vectors FOR EACH ROW
    EXECUTE FUNCTION mlh_vector_counts();
CREATE TRIGGER scope_vector_counts_model AFTER UPDATE OF model ON event_vectors FOR EACH ROW
    WHEN (OLD.model IS DISTINCT FROM NEW.model) EXECUTE FUNCTION mlh_vector_counts();
CREATE TRIGGER scope_vector_counts_delete AFTER DELETE ON event_vectors FOR EACH ROW
    EXECUTE FUNCTION mlh_vector_counts();

CREATE TABLE archive_writes (pid integer PRIMARY KEY, n bigint NOT NULL);
CREATE FUNCTION mlh_archive_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO archive_writes AS w VALUES (pg_backend_pid(), 1)
    ON CONFLICT (pid) DO UPDATE SET n = w.n + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER event_vectors_written AFTER INSERT OR UPDATE OR DELETE ON event_vectors
    FOR EACH STATEMENT EXECUTE FUNCTION mlh_archive_write();
CREATE TRIGGER memory_vectors_written AFTER INSERT OR UPDATE OR DELETE ON memory_vectors
    FOR EACH STATEMENT EXECUTE FUNCTION mlh_archive_write();
"""


def _fulltext_tables() -> str:
    """p001's full-text tables: the statistics, and the word and n-gram tables."""
    stats = [
        'CREATE TABLE fulltext_stats (name text COLLATE "C" PRIMARY KEY, rows bigint NOT NULL,'
        " tokens bigint NOT NULL);",
        """CREATE FUNCTION mlh_fulltext_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO fulltext_stats AS s VALUES (TG_TABLE_NAME, 1, NEW.tokens)
        ON CONFLICT (name) DO UPDATE SET rows = s.rows + 1, tokens = s.tokens + NEW.tokens;
        RETURN NULL;
    END IF;
    UPDATE fulltext_stats SET rows = rows - 1, tokens = tokens - OLD.tokens WHERE name = TG_TABLE_NAME;
    RETURN NULL;
END $$;""",
    ]
    tables = ("events_fts", "memories_fts", "events_ngrams", "memories_ngrams")
    return "\n".join([*stats, *map(_fulltext_pair, tables)])


def _fulltext_pair(table: str) -> str:
    """A full-text "table": its rows (rowid, token count), its postings, and its statistics' trigger."""
    return f"""
CREATE TABLE {table} (rowid bigint PRIMARY KEY, tokens integer NOT NULL);
CREATE TABLE {table}_terms (
    term   text COLLATE "C" NOT NULL,
    rowid  bigint NOT NULL REFERENCES {table}(rowid) ON DELETE CASCADE,
    col    smallint NOT NULL,
    tf     integer NOT NULL,
    PRIMARY KEY (term, rowid, col)
);
CREATE INDEX {table}_terms_by_row ON {table}_terms(rowid);
CREATE TRIGGER {table}_stats AFTER INSERT OR DELETE ON {table} FOR EACH ROW EXECUTE FUNCTION mlh_fulltext_stats();
"""


@migration
def p001_create_archive(conn: Any) -> None:
    conn.script(_FUNCTIONS + _TABLES + _COUNTERS + _fulltext_tables())


@migration
def p002_alias_evidence(conn: Any) -> None:
    # SQLite's m009 (speaker aliases): the evidence rows, and the events still to be read.
    conn.script(
        """
CREATE TABLE alias_evidence (
    event_sequence     bigint NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
    addressed_sequence bigint NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
    persona_id         text COLLATE "C" NOT NULL,
    project_id         text COLLATE "C" NOT NULL,
    speaker            text COLLATE "C" NOT NULL,
    name               text COLLATE "C" NOT NULL,
    PRIMARY KEY (event_sequence, name)
);
CREATE INDEX alias_evidence_by_scope ON alias_evidence (persona_id, project_id, speaker, name);
CREATE INDEX alias_evidence_by_addressed ON alias_evidence (addressed_sequence);
CREATE TABLE alias_backfill (done bigint NOT NULL, upto bigint NOT NULL);
INSERT INTO alias_backfill (done, upto) SELECT 0, sequence FROM events ORDER BY sequence DESC LIMIT 1;
"""
    )


@migration
def p003_memory_extractor(conn: Any) -> None:
    # SQLite's m010: who made each memory; NULL for memories made before it.
    # (the quotes as released: a frozen migration's tokens are hashed)
    conn.execute("ALTER TABLE memories ADD COLUMN extractor text COLLATE \"C\"")  # fmt: skip


@migration
def p004_memory_repeats(conn: Any) -> None:
    # SQLite's m011: items a later event stated again, kept as spans of its text (no text of their own).
    conn.script(
        """
CREATE TABLE repeats (
    memory_id      bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    event_sequence bigint NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
    quote_start    bigint NOT NULL,
    quote_length   bigint NOT NULL,
    kind           text COLLATE "C" NOT NULL,
    basis          text COLLATE "C" NOT NULL,
    same_subject   integer NOT NULL,
    valid_from     text COLLATE "C" NOT NULL,
    extractor      text COLLATE "C",
    PRIMARY KEY (memory_id, event_sequence)
);
CREATE INDEX repeats_by_event ON repeats (event_sequence);
"""
    )


@migration
def p005_memory_sources_and_tombstones(conn: Any) -> None:
    # SQLite's m012: provenance (further stating events, what the extraction prompt showed) in place
    # of the repeats, whose rows move here; the tombstones of forgotten IDs and the key of their digests.
    conn.script(
        """
CREATE TABLE memory_sources (
    memory_id      bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    event_sequence bigint NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
    quote_start    bigint,
    quote_length   bigint,
    PRIMARY KEY (memory_id, event_sequence)
);
CREATE INDEX memory_sources_by_event ON memory_sources (event_sequence);
CREATE TABLE memory_shown (
    memory_id bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    shown_id  bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    PRIMARY KEY (memory_id, shown_id)
);
CREATE INDEX memory_shown_by_shown ON memory_shown (shown_id);
INSERT INTO memory_sources (memory_id, event_sequence, quote_start, quote_length)
    SELECT memory_id, event_sequence, quote_start, quote_length FROM repeats;
DROP TABLE repeats;
CREATE TABLE tombstones (digest text COLLATE "C" PRIMARY KEY);
CREATE TABLE archive_meta (name text COLLATE "C" PRIMARY KEY, value text COLLATE "C" NOT NULL);
"""
    )


# The dimensions that get an HNSW index (pgvector indexes one fixed dimension per index): the common
# embedding sizes, up to HNSW's limit of 2,000 for `vector`. Another dimension is searched exactly.
PGVECTOR_DIMS = (384, 512, 768, 1024, 1536)


def pgvector_columns(conn: Any) -> None:
    """Vectors in pgvector's `vector` column (the extension exists): the column, the move of every bytea
    vector into it, a trigger that moves what is written as bytea from then on, an HNSW index (cosine)
    per dimension of PGVECTOR_DIMS. Frozen with p006, which runs it, as does pgvector.adopt later."""
    conn.script(
        """
-- float32 little-endian bytes as a vector (zero for subnormals, infinities and NaN, which no embedder makes)
CREATE FUNCTION mlh_vector(b bytea) RETURNS vector LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT array_agg(CASE WHEN (u >> 23) & 255 IN (0, 255) THEN 0::real
                      ELSE ((CASE WHEN u >> 31 = 1 THEN -1 ELSE 1 END) * (1 + (u & 8388607) / 8388608.0::float8)
                            * power(2::float8, ((u >> 23) & 255) - 127))::real END ORDER BY i)::vector
FROM (SELECT i, get_byte(b, 4 * i)::bigint | (get_byte(b, 4 * i + 1)::bigint << 8)
                | (get_byte(b, 4 * i + 2)::bigint << 16) | (get_byte(b, 4 * i + 3)::bigint << 24) AS u
      FROM generate_series(0, length(b) / 4 - 1) i) f
$$;
CREATE FUNCTION mlh_vector_column() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.vector IS NOT NULL AND NEW.dim > 0 AND length(NEW.vector) = 4 * NEW.dim THEN
        NEW.embedding := mlh_vector(NEW.vector);
        NEW.vector := NULL;
    END IF;
    RETURN NEW;
END $$;
ALTER TABLE event_vectors ALTER COLUMN vector DROP NOT NULL, ADD COLUMN embedding vector;
ALTER TABLE memory_vectors ALTER COLUMN vector DROP NOT NULL, ADD COLUMN embedding vector;
CREATE TRIGGER event_vectors_embedding BEFORE INSERT OR UPDATE ON event_vectors FOR EACH ROW
    EXECUTE FUNCTION mlh_vector_column();
CREATE TRIGGER memory_vectors_embedding BEFORE INSERT OR UPDATE ON memory_vectors FOR EACH ROW
    EXECUTE FUNCTION mlh_vector_column();
UPDATE event_vectors SET vector = vector WHERE vector IS NOT NULL;
UPDATE memory_vectors SET vector = vector WHERE vector IS NOT NULL;
"""
    )
    for dim in (384, 512, 768, 1024, 1536):  # PGVECTOR_DIMS when released (a frozen function names no constant)
        for table in ("event_vectors", "memory_vectors"):
            conn.script(
                f"CREATE INDEX {table}_hnsw_{dim} ON {table} USING hnsw ((embedding::vector({dim})) vector_cosine_ops)"
                f" WITH (m = 16, ef_construction = 64) WHERE dim = {dim}"
            )


def pgvector_creatable(conn: Any) -> bool:
    """Whether the database has the extension `vector`, or the role could create it now (then it does)."""
    import psycopg

    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return True
    if not conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
        return False
    conn.execute("SAVEPOINT mlh_pgvector")
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error:  # the role may not create it (docs/team.md: the owner, or a superuser, does)
        conn.execute("ROLLBACK TO SAVEPOINT mlh_pgvector")
        return False
    conn.execute("RELEASE SAVEPOINT mlh_pgvector")
    return True


@migration
def p006_vectors_in_pgvector(conn: Any) -> None:
    # Where the server has pgvector (docs/decisions/2026-12-07-pgvector.md): vectors move into a `vector`
    # column searched by HNSW. Without it nothing changes; pgvector.adopt does it once it is installed.
    if pgvector_creatable(conn):
        pgvector_columns(conn)


@migration
def p007_passage_fulltext(conn: Any) -> None:
    # SQLite's m013: the passage index (fulltext.PASSAGES), filled for an existing archive by
    # fulltext.complete_passages; the marker keeps recall on events_fts until then.
    conn.script(
        _fulltext_pair("events_passages")
        + "INSERT INTO archive_meta (name, value) SELECT 'passages_pending_through', max(sequence)::text FROM events"
        " HAVING count(*) > 0;"
    )


@migration
def p008_passage_context(conn: Any) -> None:
    # SQLite's m014: the passage rows are written again with 300 characters of the turn before, by
    # fulltext.complete_passages; the marker keeps recall on events_fts until then. TRUNCATE, not a
    # DELETE of each row through its statistics trigger: it takes one statement at any size and leaves
    # no dead rows holding the old terms; the table's statistics go with it.
    conn.script(
        "TRUNCATE events_passages_terms, events_passages;"
        " DELETE FROM fulltext_stats WHERE name = 'events_passages';"
        " INSERT INTO archive_meta (name, value) SELECT 'passages_pending_through', max(sequence)::text FROM events"
        " HAVING count(*) > 0 ON CONFLICT (name) DO UPDATE SET value = excluded.value;"
    )


def schema_version(db: Connection) -> int:
    """How many migrations the database has applied (0 for a new one)."""
    if not db.scalar("SELECT to_regclass('schema_migrations') IS NOT NULL AS present"):
        return 0
    return int(db.scalar("SELECT count(*) FROM schema_migrations") or 0)


def create_ledger(db: Connection) -> None:
    """The ledger table, only when missing: CREATE ... IF NOT EXISTS still needs the right to create,
    which a member's role of a team archive may lack (docs/team.md: the owner role migrates)."""
    if not db.scalar("SELECT to_regclass('schema_migrations') IS NOT NULL AS present"):
        with db.write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations"
                " (id integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)"
            )
