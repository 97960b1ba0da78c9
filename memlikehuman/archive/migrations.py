"""The schema, as an append-only list of migrations with a ledger.

Released migrations are never edited: a change is a new function appended to MIGRATIONS.
Each migration runs in one transaction together with its ledger row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .migrations_frozen import m004_index_all

Migration = Callable[[Any], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    """Register a migration; order of definition is order of application."""
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_create_archive(conn: Any) -> None:
    conn.execute(
        """
        -- sequence is the coverage sequence: AUTOINCREMENT never reuses a value, and a
        -- write transaction assigns it, so it increases strictly in commit order.
        CREATE TABLE events (
            sequence          INTEGER PRIMARY KEY AUTOINCREMENT,
            event_id          TEXT NOT NULL UNIQUE,
            persona_id        TEXT NOT NULL,
            project_id        TEXT NOT NULL,
            session_id        TEXT NOT NULL,
            role              TEXT NOT NULL,
            source            TEXT NOT NULL,
            category          TEXT NOT NULL,
            kind              TEXT NOT NULL DEFAULT 'record',  -- record | correction
            text              TEXT NOT NULL,
            occurred_at       TEXT NOT NULL,
            occurred_at_given INTEGER NOT NULL,
            recorded_at       TEXT NOT NULL,
            payload_hash      TEXT NOT NULL,
            extraction_state  TEXT NOT NULL,                   -- complete | pending | failed
            extraction_error  TEXT
        );
        CREATE INDEX events_by_scope ON events(persona_id, project_id, sequence);
        CREATE INDEX events_by_session ON events(persona_id, project_id, session_id, sequence);
        CREATE INDEX events_by_state ON events(extraction_state) WHERE extraction_state != 'complete';

        CREATE TABLE cues (
            event_sequence INTEGER NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
            position       INTEGER NOT NULL,
            kind           TEXT NOT NULL,                      -- text | photo
            key            TEXT NOT NULL,
            label          TEXT,
            PRIMARY KEY (event_sequence, position)
        );
        CREATE INDEX cues_by_key ON cues(key);

        -- Contentless: the text lives once, in events; secure-delete removes a deleted
        -- row's terms from the index itself, so forgetting leaves no tokens behind.
        CREATE VIRTUAL TABLE events_fts USING fts5(
            text, attribution, context,
            content='', contentless_delete=1,
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO events_fts(events_fts, rank) VALUES ('secure-delete', 1);

        CREATE TABLE memories (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id       TEXT NOT NULL UNIQUE,
            event_sequence  INTEGER NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
            persona_id      TEXT NOT NULL,
            project_id      TEXT NOT NULL,
            session_id      TEXT NOT NULL,
            content         TEXT NOT NULL,
            quote           TEXT NOT NULL,
            kind            TEXT NOT NULL,   -- fact | preference | event | plan | emotion | persona | reference
            basis           TEXT NOT NULL,   -- stated | inferred
            category        TEXT NOT NULL,
            subject         TEXT,
            gist            TEXT,
            valid_from      TEXT NOT NULL,
            valid_to        TEXT,
            recorded_at     TEXT NOT NULL,
            supersedes      INTEGER REFERENCES memories(id) ON DELETE SET NULL,
            superseded_by   INTEGER REFERENCES memories(id) ON DELETE SET NULL,
            revoked_at      TEXT,
            revoke_reason   TEXT,
            replaced_by     INTEGER REFERENCES memories(id) ON DELETE SET NULL
        );
        CREATE INDEX memories_by_scope ON memories(persona_id, project_id, id);
        CREATE INDEX memories_by_event ON memories(event_sequence);
        CREATE INDEX memories_by_subject ON memories(persona_id, project_id, subject) WHERE subject IS NOT NULL;

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, attribution,
            content='', contentless_delete=1,
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);

        -- A correction event (events.kind = 'correction') revokes one memory and derives its replacement.
        CREATE TABLE corrections (
            event_sequence  INTEGER PRIMARY KEY REFERENCES events(sequence) ON DELETE CASCADE,
            original_id     INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            reason          TEXT NOT NULL
        );
        CREATE INDEX corrections_by_original ON corrections(original_id);

        CREATE TABLE event_vectors (
            event_sequence INTEGER PRIMARY KEY REFERENCES events(sequence) ON DELETE CASCADE,
            model          TEXT NOT NULL,
            dim            INTEGER NOT NULL,
            vector         BLOB NOT NULL
        );
        CREATE TABLE memory_vectors (
            memory_rowid   INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
            model          TEXT NOT NULL,
            dim            INTEGER NOT NULL,
            vector         BLOB NOT NULL
        );

        CREATE TABLE checkpoints (
            id               INTEGER PRIMARY KEY AUTOINCREMENT,
            checkpoint_id    TEXT NOT NULL UNIQUE,
            persona_id       TEXT NOT NULL,
            project_id       TEXT NOT NULL,
            session_id       TEXT NOT NULL,
            covered_event_id TEXT NOT NULL,
            covered_sequence INTEGER NOT NULL,
            state            TEXT,            -- JSON; wiped when a forget invalidates it
            created_at       TEXT NOT NULL,
            invalidated_at   TEXT,
            invalidated_reason TEXT
        );
        CREATE INDEX checkpoints_by_scope ON checkpoints(persona_id, project_id, session_id, id);

        -- Core persona: each CLI edit is a new version; the newest is current.
        CREATE TABLE persona_versions (
            persona_id  TEXT NOT NULL,
            version     INTEGER NOT NULL,
            text        TEXT NOT NULL,
            created_at  TEXT NOT NULL,
            PRIMARY KEY (persona_id, version)
        );
        """
    )


@migration
def m002_index_memory_links(conn: Any) -> None:
    # Deleting a memory (memory_forget) makes SQLite look up every memory that links to it through
    # these ON DELETE SET NULL keys, and forgetting re-links them: without an index each lookup scans
    # all memories (measured 51 ms -> 4 ms per forgotten event at 10k memories). Partial: most are NULL.
    conn.execute(
        """
        CREATE INDEX memories_by_supersedes ON memories(supersedes) WHERE supersedes IS NOT NULL;
        CREATE INDEX memories_by_superseded_by ON memories(superseded_by) WHERE superseded_by IS NOT NULL;
        CREATE INDEX memories_by_replaced_by ON memories(replaced_by) WHERE replaced_by IS NOT NULL;
        """
    )


@migration
def m003_count_events_per_scope(conn: Any) -> None:
    # memory_recall reports coverage (events, pending, failed, without vectors) on every call.
    # Counting them takes ~75 ms per recall at 70k events in a scope (the rows hold the text);
    # triggers keep exact counts in the same transactions, so a recall reads two rows instead.
    # Event deletion: SQLite deletes the event row before its cascaded vectors, so the event's
    # BEFORE DELETE trigger counts its vectors out and the vector trigger skips orphans.
    conn.execute(
        """
        CREATE TABLE scope_counts (
            persona_id TEXT NOT NULL,
            project_id TEXT NOT NULL,
            events     INTEGER NOT NULL,
            pending    INTEGER NOT NULL,
            failed     INTEGER NOT NULL,
            PRIMARY KEY (persona_id, project_id)
        ) WITHOUT ROWID;
        CREATE TABLE scope_vector_counts (
            persona_id TEXT NOT NULL,
            project_id TEXT NOT NULL,
            model      TEXT NOT NULL,
            events     INTEGER NOT NULL,   -- events of the scope with a vector of this model
            PRIMARY KEY (persona_id, project_id, model)
        ) WITHOUT ROWID;

        INSERT INTO scope_counts
            SELECT persona_id, project_id, count(*), total(extraction_state = 'pending'),
                   total(extraction_state = 'failed')
            FROM events GROUP BY persona_id, project_id;
        INSERT INTO scope_vector_counts
            SELECT e.persona_id, e.project_id, v.model, count(*)
            FROM event_vectors v JOIN events e ON e.sequence = v.event_sequence
            GROUP BY e.persona_id, e.project_id, v.model;

        CREATE TRIGGER scope_counts_insert AFTER INSERT ON events BEGIN
            INSERT INTO scope_counts VALUES (NEW.persona_id, NEW.project_id, 1,
                NEW.extraction_state = 'pending', NEW.extraction_state = 'failed')
            ON CONFLICT (persona_id, project_id) DO UPDATE SET events = events + 1,
                pending = pending + excluded.pending, failed = failed + excluded.failed;
        END;
        CREATE TRIGGER scope_counts_state AFTER UPDATE OF extraction_state ON events
        WHEN OLD.extraction_state IS NOT NEW.extraction_state BEGIN
            UPDATE scope_counts
            SET pending = pending + (NEW.extraction_state = 'pending') - (OLD.extraction_state = 'pending'),
                failed = failed + (NEW.extraction_state = 'failed') - (OLD.extraction_state = 'failed')
            WHERE persona_id = NEW.persona_id AND project_id = NEW.project_id;
        END;
        CREATE TRIGGER scope_counts_delete BEFORE DELETE ON events BEGIN
            UPDATE scope_counts
            SET events = events - 1, pending = pending - (OLD.extraction_state = 'pending'),
                failed = failed - (OLD.extraction_state = 'failed')
            WHERE persona_id = OLD.persona_id AND project_id = OLD.project_id;
            UPDATE scope_vector_counts SET events = events - 1
            WHERE persona_id = OLD.persona_id AND project_id = OLD.project_id
              AND model IN (SELECT model FROM event_vectors WHERE event_sequence = OLD.sequence);
        END;
        CREATE TRIGGER scope_vector_counts_insert AFTER INSERT ON event_vectors BEGIN
            INSERT INTO scope_vector_counts
                SELECT persona_id, project_id, NEW.model, 1 FROM events WHERE sequence = NEW.event_sequence
            ON CONFLICT (persona_id, project_id, model) DO UPDATE SET events = events + 1;
        END;
        CREATE TRIGGER scope_vector_counts_model AFTER UPDATE OF model ON event_vectors
        WHEN OLD.model IS NOT NEW.model BEGIN
            UPDATE scope_vector_counts SET events = events - 1
            WHERE model = OLD.model AND (persona_id, project_id) =
                (SELECT persona_id, project_id FROM events WHERE sequence = OLD.event_sequence);
            INSERT INTO scope_vector_counts
                SELECT persona_id, project_id, NEW.model, 1 FROM events WHERE sequence = NEW.event_sequence
            ON CONFLICT (persona_id, project_id, model) DO UPDATE SET events = events + 1;
        END;
        CREATE TRIGGER scope_vector_counts_delete AFTER DELETE ON event_vectors BEGIN
            UPDATE scope_vector_counts SET events = events - 1
            WHERE model = OLD.model AND (persona_id, project_id) =
                (SELECT persona_id, project_id FROM events WHERE sequence = OLD.event_sequence);
        END;
        """
    )


@migration
def m004_purgeable_fulltext(conn: Any) -> None:
    # m001's tables used contentless_delete=1, where a DELETE only writes a tombstone: a forgotten
    # row's terms stayed readable in the index segments until an 'optimize' rewrote the whole
    # index (~0.4-0.7 s per forget at 100k events). Plain contentless tables delete with the FTS5
    # 'delete' command and the row's exact values (fulltext.unindex_*), and with secure-delete the
    # terms leave the b-tree at once. The rows are rebuilt from the stored records, by a frozen copy
    # of the fulltext code of the day (migrations_frozen.py), so later changes there cannot alter it.
    conn.execute(
        """
        DROP TABLE events_fts;
        DROP TABLE memories_fts;
        CREATE VIRTUAL TABLE events_fts USING fts5(
            text, attribution, context,
            content='',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO events_fts(events_fts, rank) VALUES ('secure-delete', 1);
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, attribution,
            content='',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);
        """
    )
    m004_index_all(conn)


@migration
def m005_known_from_and_event_times(conn: Any) -> None:
    # known_from: since when a memory is known, for memory_recall's as_of. It is its event's time,
    # except for the replacement a correction stores: a correction says the original was wrong, so
    # the replacement takes the original's place in time (before, a correction was known only from
    # its own date, and as_of before it found neither version). The value is derived, never exported.
    # events_by_time: recall's coverage counts the events of a scope that occurred after as_of
    # (an occurred_at ahead of the clock hides an event; the count says so).
    conn.execute(
        """
        ALTER TABLE memories ADD COLUMN known_from TEXT;
        UPDATE memories SET known_from = (SELECT occurred_at FROM events WHERE sequence = memories.event_sequence);
        CREATE INDEX events_by_time ON events(persona_id, project_id, occurred_at);
        """
    )
    # A frozen copy of memories.settle_known_from: a chain of corrections is followed one step per pass.
    for _ in range(1_000):
        conn.execute(
            "UPDATE memories SET known_from = (SELECT o.known_from FROM corrections c JOIN memories o"
            " ON o.id = c.original_id WHERE c.event_sequence = memories.event_sequence)"
            " WHERE event_sequence IN (SELECT event_sequence FROM corrections) AND known_from IS NOT"
            " (SELECT o.known_from FROM corrections c JOIN memories o ON o.id = c.original_id"
            "  WHERE c.event_sequence = memories.event_sequence)"
        )
        if not conn.changes():
            break


@migration
def m006_ngram_fulltext(conn: Any) -> None:
    # The word index finds nothing inside Chinese, Japanese or Thai text (no spaces: a sentence is
    # one token) nor a Korean, Russian or Arabic word with a glued particle or ending.
    # These tables hold character n-grams of the same values (memlikehuman/ngrams.py). The
    # 'ascii' tokenizer splits only at ASCII spaces and punctuation, so each n-gram is one term.
    # Only the tables are created here: the rows of an existing archive are written afterwards by
    # fulltext.complete_ngrams (live code, in committed batches with progress) when the archive is
    # opened, so that the values indexed are always the ones today's 'delete' recomputes.
    conn.execute(
        """
        CREATE VIRTUAL TABLE events_ngrams USING fts5(
            text, attribution, context,
            content='',
            tokenize='ascii'
        );
        INSERT INTO events_ngrams(events_ngrams, rank) VALUES ('secure-delete', 1);
        CREATE VIRTUAL TABLE memories_ngrams USING fts5(
            content, attribution,
            content='',
            tokenize='ascii'
        );
        INSERT INTO memories_ngrams(memories_ngrams, rank) VALUES ('secure-delete', 1);
        """
    )


@migration
def m007_extraction_claims(conn: Any) -> None:
    # Background extraction: a worker claims a pending event for a lease before it asks
    # the model, so several processes on one archive never extract the same event at once, and a
    # claim of a killed process expires (claimed_until) and is picked up again. attempts/retry_at
    # hold the bounded backoff of transient provider failures. Rows hold no text; forgetting an
    # event deletes its row with it. The scope columns let recall count in-flight events cheaply.
    conn.execute(
        """
        CREATE TABLE extraction_claims (
            event_sequence  INTEGER PRIMARY KEY REFERENCES events(sequence) ON DELETE CASCADE,
            persona_id      TEXT NOT NULL,
            project_id      TEXT NOT NULL,
            claimed_by      TEXT,              -- host:pid:token of the worker; NULL when not claimed
            claimed_until   REAL,              -- unix seconds the lease ends; NULL when not claimed
            attempts        INTEGER NOT NULL DEFAULT 0,
            retry_at        REAL               -- not before this (backoff); NULL = at once
        );
        CREATE INDEX extraction_claims_by_scope ON extraction_claims(persona_id, project_id);
        """
    )


@migration
def m008_event_dates(conn: Any) -> None:
    # Relative dates in an event's text ("yesterday", "last Friday", "next month") resolved against
    # its occurred_at when it is recorded (memlikehuman/dates.py relative_spans), so that a query
    # naming the absolute date finds it. Only the spans are stored, never the text; the
    # rows go with their event (ON DELETE CASCADE: forget, and nothing else deletes events).
    # Events recorded before this migration have no rows (their text is unchanged and still found).
    conn.execute(
        """
        CREATE TABLE event_dates (
            event_sequence INTEGER NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
            day_from       TEXT NOT NULL,  -- ISO date, inclusive
            day_to         TEXT NOT NULL,  -- ISO date, exclusive
            PRIMARY KEY (event_sequence, day_from, day_to)
        ) WITHOUT ROWID;
        CREATE INDEX event_dates_by_day ON event_dates (day_from);
        """
    )


@migration
def m009_alias_evidence(conn: Any) -> None:
    # Speaker aliases: one row per turn and name it uses in address ("Hey Mel!"), naming
    # the speaker of the turn it answers (archive/alias_evidence.py). Aliases themselves are
    # aggregated from these rows when read, and both events are foreign keys ON DELETE CASCADE:
    # forgetting either takes the row, and its name (a word of the text), with it. The scope
    # columns let stats and recall read a scope's rows through one index.
    # alias_backfill: the events before this migration still to be read; their rows are written
    # after migrate by today's code (alias_evidence.complete, in batches, like m006's n-grams).
    conn.execute(
        """
        CREATE TABLE alias_evidence (
            event_sequence     INTEGER NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
            addressed_sequence INTEGER NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
            persona_id         TEXT NOT NULL,
            project_id         TEXT NOT NULL,
            speaker            TEXT NOT NULL,  -- the addressed turn's source (or role, in a host's chat)
            name               TEXT NOT NULL,
            PRIMARY KEY (event_sequence, name)
        ) WITHOUT ROWID;
        CREATE INDEX alias_evidence_by_scope ON alias_evidence (persona_id, project_id, speaker, name);
        CREATE INDEX alias_evidence_by_addressed ON alias_evidence (addressed_sequence);
        CREATE TABLE alias_backfill (
            done INTEGER NOT NULL,  -- events up to this sequence have their rows
            upto INTEGER NOT NULL   -- the last event recorded before this migration
        );
        INSERT INTO alias_backfill (done, upto) SELECT 0, sequence FROM events ORDER BY sequence DESC LIMIT 1;
        """
    )


@migration
def m010_memory_extractor(conn: Any) -> None:
    # extractor: who made the memory, shown with it in recall and read: "agent" (the
    # memories a memory_record call brought), "sampling:<model>" (the host's model through MCP
    # sampling), "command:<name>" (the host's CLI run headless), "openai:<model>", "correction"
    # (memory_correct's replacement). NULL: made before this migration, by the extractor then configured.
    conn.execute("ALTER TABLE memories ADD COLUMN extractor TEXT")


@migration
def m011_memory_repeats(conn: Any) -> None:
    # repeats: an item a later event stated again, skipped as repeating a current memory. When that
    # memory's own event is forgotten, the earliest surviving repeat becomes a memory of its event, so
    # the fact stated twice is not lost with the first statement.
    # No text: the quote is a span (start, length) of the event's text; the subject is the memory's.
    conn.execute(
        """
        CREATE TABLE repeats (
            memory_id      INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            event_sequence INTEGER NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
            quote_start    INTEGER NOT NULL,
            quote_length   INTEGER NOT NULL,
            kind           TEXT NOT NULL,
            basis          TEXT NOT NULL,
            same_subject   INTEGER NOT NULL,  -- 1: the item named the memory's subject (0: none, or another)
            valid_from     TEXT NOT NULL,
            extractor      TEXT,
            PRIMARY KEY (memory_id, event_sequence)
        ) WITHOUT ROWID;
        CREATE INDEX repeats_by_event ON repeats (event_sequence);
        """
    )


@migration
def m012_memory_sources_and_tombstones(conn: Any) -> None:
    # Provenance, recorded instead of guessed (docs/decisions/forget-by-provenance.md):
    # memory_sources: further events that state a memory (a quote span of their text, like m011's
    # repeats, whose rows move here), and the events the extraction prompt that made it showed
    # (quote_start NULL); memory_shown: the memories that prompt showed. A forget keeps a memory while
    # an event still states it, and takes a memory whose making was shown what goes when it holds a
    # word only that said. No text in either: a forget of either side cascades.
    # tombstones: a keyed digest (HMAC-SHA256, archive_meta's key) of each forgotten event's and
    # memory's ID, so that no import, hook or retry brings it back; no text, no digest of a text.
    conn.execute(
        """
        CREATE TABLE memory_sources (
            memory_id      INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            event_sequence INTEGER NOT NULL REFERENCES events(sequence) ON DELETE CASCADE,
            quote_start    INTEGER,   -- with quote_length: a span of the event's text that states the memory
            quote_length   INTEGER,   -- both NULL: the event was shown to the extractor that made it
            PRIMARY KEY (memory_id, event_sequence)
        ) WITHOUT ROWID;
        CREATE INDEX memory_sources_by_event ON memory_sources (event_sequence);
        CREATE TABLE memory_shown (
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            shown_id  INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            PRIMARY KEY (memory_id, shown_id)
        ) WITHOUT ROWID;
        CREATE INDEX memory_shown_by_shown ON memory_shown (shown_id);
        INSERT INTO memory_sources (memory_id, event_sequence, quote_start, quote_length)
            SELECT memory_id, event_sequence, quote_start, quote_length FROM repeats;
        DROP TABLE repeats;
        CREATE TABLE tombstones (digest TEXT PRIMARY KEY) WITHOUT ROWID;
        CREATE TABLE archive_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        """
    )


@migration
def m013_passage_fulltext(conn: Any) -> None:
    # The word index of each event's passages (fulltext.PASSAGES; text/passages.py): recall scores a
    # long message by its best passage, where one row per message let bm25's length normalisation
    # push a long message below short ones that hold the same words once. Only the table is created
    # here; the rows of an existing archive are written by fulltext.complete_passages (live code, in
    # committed batches) when it is opened, and until then recall ranks by events_fts: the marker
    # names the newest event that may still lack its rows.
    conn.execute(
        """
        CREATE VIRTUAL TABLE events_passages USING fts5(
            text, attribution, context,
            content='',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO events_passages(events_passages, rank) VALUES ('secure-delete', 1);
        INSERT INTO archive_meta (name, value)
            SELECT 'passages_pending_through', CAST(max(sequence) AS TEXT) FROM events HAVING count(*) > 0;
        """
    )


@migration
def m014_passage_context(conn: Any) -> None:
    # Each passage row carries only the last 300 characters of the turn before, not 1,000
    # (fulltext.PASSAGE_CONTEXT_CHARS): the rows written by the earlier rule are emptied here, and
    # fulltext.complete_passages writes them again when the archive is opened (in committed batches, as
    # after m013); recall ranks by events_fts until then. The marker names the newest event that may
    # still lack its rows.
    conn.execute(
        """
        INSERT INTO events_passages(events_passages) VALUES ('delete-all');
        INSERT OR REPLACE INTO archive_meta (name, value)
            SELECT 'passages_pending_through', CAST(max(sequence) AS TEXT) FROM events HAVING count(*) > 0;
        """
    )
