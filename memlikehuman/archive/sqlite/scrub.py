"""What deleted text can leave in a SQLite archive file after a forget's commit, and clearing it.

``scrub`` truncates the write-ahead log (old page images); ``rewrite_stale_pages`` looks for stale
copies in unused space of live pages (residue.py parses the pages) and VACUUMs when it finds one.
The SQLite backend runs both after forget's transaction (SqliteBackend.scrub).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import apsw

from ... import files
from ...text.lines import one_line
from ..connection import Connection
from ..db import Gone, placeholders, unscrubbed_marker
from . import residue
from .pagefile import PageFile

log = logging.getLogger("memlikehuman")

# How long the WAL truncation waits for other connections' read transactions to end, unless the
# caller says (a forget: MEMLIKEHUMAN_FORGET_WAIT, whose default this is).
SCRUB_TIMEOUT_MS = 5_000


def scrub(db: Connection, timeout_ms: int = SCRUB_TIMEOUT_MS) -> bool:
    """Checkpoint the WAL into the database file and truncate it to zero bytes.

    Old page images holding deleted text live on in the -wal file until it is truncated. A
    separate short-lived connection does it, so its own busy timeout (``timeout_ms``) bounds the
    wait for other connections' read transactions. Returns False when they outlast it: the old
    images then stay until the next successful checkpoint (the next forget, or when the last
    connection closes and SQLite checkpoints and deletes the WAL itself).
    """
    if str(db.path) == ":memory:":
        return True
    conn = apsw.Connection(str(db.path))
    try:
        conn.set_busy_timeout(timeout_ms)
        row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        busy = 1 if row is None else int(row[0])
    except apsw.BusyError:
        busy = 1
    except apsw.Error as exc:  # the forget has committed: its caller must still hear what it deleted
        log.warning("memory_forget: the WAL could not be truncated (%s); retried at the next forget", exc)
        busy = 1
    finally:
        conn.close()
    marker = unscrubbed_marker(db.path)
    if busy:
        log.warning("memory_forget: another connection kept the WAL from being truncated; retried at the next forget")
        files.create_private(marker)  # until then, no connection closes without its checkpoint (Database.close)
    else:
        marker.unlink(missing_ok=True)
    return not busy


def rewrite_stale_pages(db: Connection, gone: Gone, timeout_ms: int = SCRUB_TIMEOUT_MS) -> bool:
    """VACUUM when a live page still holds a piece of the deleted text (archive/sqlite/residue.py).

    Runs after ``scrub`` truncated the WAL. The file is read inside a read transaction, so no
    checkpoint changes it meanwhile (none may overwrite pages a reader still uses). The VACUUM
    rebuilds every page from zeroed buffers (its temporary copy stays in memory); a second
    ``scrub`` then truncates the WAL it filled. Returns False when the VACUUM or that scrub could
    not run within ``timeout_ms`` (other connections busy): the copies stay until the next forget.
    """
    if str(db.path) == ":memory:" or not any(texts for texts, _ in gone.values()):
        return True
    conn = apsw.Connection(str(db.path))
    try:
        conn.set_busy_timeout(timeout_ms)
        if not _stale(conn, db.path, gone):
            return True
        log.info("memory_forget: a live page held a stale copy of the deleted text; rebuilding the archive")
        conn.execute("PRAGMA temp_store=MEMORY").fetchall()
        conn.execute("VACUUM").fetchall()
    except apsw.BusyError:
        log.warning("memory_forget: another connection kept the archive busy; stale pages stay until the next forget")
        return False
    except apsw.Error as exc:  # a full disk during the VACUUM: the forget has committed all the same
        log.warning("memory_forget: the archive could not be rebuilt (%s); stale pages stay until the next forget", exc)
        return False
    finally:
        conn.close()
    return scrub(db, timeout_ms)


# Up to this size every page of the text tables is read after a forget; above it only the pages
# around each deleted row (residue.stale_pages; docs/reliability.md has what that can miss).
WHOLE_TREES_BYTES = 64 * 2**20


# Where a forgotten text can have left stale copies: the rows' own tables and the full-text
# indexes' data tables (their blobs hold the terms); the checkpoints too (`_stale`). The n-gram
# indexes are not searched (their terms are three-character pieces, which tell nothing apart;
# docs/reliability.md).
STALE_TREES = {"events": ("events_fts", "events_passages"), "memories": ("memories_fts",)}


def _stale(conn: apsw.Connection, path: Path, gone: Gone) -> bool:
    conn.execute("BEGIN")  # a read transaction: the file stays as it is while it is read
    try:
        page_size = int(_one(conn, "PRAGMA page_size"))
        roots = {str(name): int(root) for name, root in conn.execute(ROOTS)}
        trees: dict[int, residue.Tree] = {}
        whole = path.stat().st_size <= WHOLE_TREES_BYTES
        for table, indexes in STALE_TREES.items():
            texts, keys = gone[table]
            trees[roots[table]] = residue.Tree(residue.pieces(texts), None if whole else keys)
            for index in indexes:
                trees[roots[f"{index}_data"]] = residue.Tree(residue.term_pieces(_gone_terms(conn, index, texts)))
        # A forget wipes the scope's checkpoint states, which may quote the text word for word (the
        # hooks' extractive checkpoints): the rows grow and move, and old copies stay in page gaps.
        quoted = [text for table in STALE_TREES for text in gone[table][0]]
        trees[roots["checkpoints"]] = residue.Tree(residue.pieces(_as_in_states(quoted)))
        # Not open(): closing a descriptor of the archive drops this process's locks on it (pagefile.py).
        with PageFile(path) as data:
            return bool(residue.stale_pages(data, page_size, trees))
    finally:
        conn.execute("COMMIT")


ROOTS = "SELECT name, rootpage FROM sqlite_schema WHERE type = 'table'"


def _as_in_states(texts: list[str]) -> list[str]:
    """The texts as a checkpoint state may hold them: as they are, and as JSON string contents, whole
    or on one line (the hooks' extractive states: `one_line`), so quotes and line breaks match."""
    forms = [form for text in texts for form in (text, one_line(text))]
    return [*texts, *(json.dumps(form, ensure_ascii=False)[1:-1] for form in forms)]


def _one(conn: apsw.Connection, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    assert row is not None, sql
    return row[0]


def _gone_terms(conn: apsw.Connection, index: str, texts: list[str]) -> set[str]:
    """The terms of ``texts`` that are no longer in the full-text index ``index`` at all."""
    tokenize = conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
    terms = {
        str(token[0])
        for text in texts
        for token in tokenize(text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=False)
    }
    long_terms = sorted(term for term in terms if len(term.encode("utf-8")) >= residue.MIN_TERM)
    if not long_terms:
        return set()
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{index}_terms USING fts5vocab(main, {index}, row)")
    kept = {
        row[0]
        for row in conn.execute(
            f"SELECT term FROM temp.{index}_terms WHERE term IN ({placeholders(long_terms)})", long_terms
        )
    }
    return set(long_terms) - kept
