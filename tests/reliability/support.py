"""Shared pieces of the reliability suites: figures, archive invariants, a scripted extractor, a raw stdio client."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import apsw
from conftest import BASE_ENV
from openai_stub import Reply, extraction_reply, memory_item

from memlikehuman.archive.backend import backend_of
from memlikehuman.archive.db import open_database
from memlikehuman.archive.postgres.pg_schema import FULLTEXT_TABLES
from memlikehuman.archive.timeline import FORGOTTEN_CORRECTION

# -- figures ---------------------------------------------------------------------------------------

FIGURES: list[tuple[str, dict[str, Any]]] = []


def report(suite: str, **numbers: Any) -> None:
    """Keep a suite's figures; the reliability conftest prints them in pytest's terminal summary."""
    FIGURES.append((suite, numbers))


# -- tool errors -----------------------------------------------------------------------------------

CODES = ("invalid_argument", "not_found", "conflict", "limit_exceeded", "forbidden", "unavailable", "internal")
_CODED = re.compile(r"^(?:Error executing tool [^:]+: )?([a-z_]+): \S")


def error_code(text: str) -> str | None:
    """The code a tool error text starts with (after the SDK's optional prefix), or None if it has none."""
    match = _CODED.match(text)
    return match.group(1) if match and match.group(1) in CODES else None


# -- the archive's invariants ------------------------------------------------------------------------

# Each query counts the rows that break one rule; every count must be 0.
FORGOTTEN_SQL = "'" + FORGOTTEN_CORRECTION.replace("'", "''") + "'"  # as an SQL string literal
STRUCTURE = {
    "memory without its event": "SELECT count(*) FROM memories m"
    " WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.sequence = m.event_sequence)",
    "memory in another scope than its event": "SELECT count(*) FROM memories m JOIN events e"
    " ON e.sequence = m.event_sequence WHERE m.persona_id != e.persona_id OR m.project_id != e.project_id",
    "half-extracted event (memories on a pending or failed event)": "SELECT count(*) FROM events e"
    " WHERE e.kind = 'record' AND e.extraction_state != 'complete'"
    " AND EXISTS (SELECT 1 FROM memories m WHERE m.event_sequence = e.sequence)",
    "correction event without its corrections row": "SELECT count(*) FROM events e WHERE e.kind = 'correction'"
    " AND NOT EXISTS (SELECT 1 FROM corrections c WHERE c.event_sequence = e.sequence)",
    "correction event without its replacement": "SELECT count(*) FROM events e WHERE e.kind = 'correction'"
    " AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.event_sequence = e.sequence)",
    "corrected memory not revoked in favour of the correction's replacement": "SELECT count(*) FROM corrections c"
    " JOIN memories o ON o.id = c.original_id WHERE o.revoked_at IS NULL OR o.replaced_by IS NULL"
    " OR o.replaced_by NOT IN (SELECT id FROM memories WHERE event_sequence = c.event_sequence)",
    # A revoked memory has its replacement and its corrections row, unless that correction was forgotten:
    # then it stays revoked with neither, and the fixed reason says so (timeline.FORGOTTEN_CORRECTION).
    "revoked memory without a replacement": "SELECT count(*) FROM memories m WHERE m.revoked_at IS NOT NULL"
    f" AND (m.replaced_by IS NULL AND m.revoke_reason IS DISTINCT FROM {FORGOTTEN_SQL}"
    " OR m.replaced_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories r WHERE r.id = m.replaced_by))",
    "revoked memory without its corrections row": "SELECT count(*) FROM memories m WHERE m.revoked_at IS NOT NULL"
    " AND m.replaced_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM corrections c WHERE c.original_id = m.id)",
    "correction row left by a forgotten correction": "SELECT count(*) FROM memories m WHERE m.revoked_at IS NOT NULL"
    " AND m.replaced_by IS NULL AND EXISTS (SELECT 1 FROM corrections c WHERE c.original_id = m.id)",
    "replacement link on a memory that is not revoked": "SELECT count(*) FROM memories"
    " WHERE replaced_by IS NOT NULL AND revoked_at IS NULL",
    "one-sided timeline link": "SELECT count(*) FROM memories m WHERE (m.superseded_by IS NOT NULL AND NOT EXISTS"
    " (SELECT 1 FROM memories n WHERE n.id = m.superseded_by AND n.supersedes = m.id)) OR (m.supersedes IS NOT NULL"
    " AND NOT EXISTS (SELECT 1 FROM memories n WHERE n.id = m.supersedes AND n.superseded_by = m.id))",
    "superseded memory still open": "SELECT count(*) FROM memories"
    " WHERE superseded_by IS NOT NULL AND valid_to IS NULL",
    "valid checkpoint covering a missing event": "SELECT count(*) FROM checkpoints c WHERE c.invalidated_at IS NULL"
    " AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = c.covered_event_id AND e.sequence = c.covered_sequence"
    " AND e.persona_id = c.persona_id AND e.project_id = c.project_id)",
    "event without its full-text row": "SELECT count(*) FROM events"
    " WHERE sequence NOT IN (SELECT rowid FROM events_fts)",
    "full-text row of a missing event": "SELECT count(*) FROM events_fts"
    " WHERE rowid NOT IN (SELECT sequence FROM events)",
    "memory without its full-text row": "SELECT count(*) FROM memories"
    " WHERE id NOT IN (SELECT rowid FROM memories_fts)",
    "full-text row of a missing memory": "SELECT count(*) FROM memories_fts"
    " WHERE rowid NOT IN (SELECT id FROM memories)",
    "event without its n-gram row": "SELECT count(*) FROM events"
    " WHERE sequence NOT IN (SELECT rowid FROM events_ngrams)",
    "n-gram row of a missing event": "SELECT count(*) FROM events_ngrams"
    " WHERE rowid NOT IN (SELECT sequence FROM events)",
    "memory without its n-gram row": "SELECT count(*) FROM memories"
    " WHERE id NOT IN (SELECT rowid FROM memories_ngrams)",
    "n-gram row of a missing memory": "SELECT count(*) FROM memories_ngrams"
    " WHERE rowid NOT IN (SELECT id FROM memories)",
}


def archive_problems(target: Path | str) -> list[str]:
    """Every broken rule of the archive (a SQLite file or a PostgreSQL URL): the engine's own checks,
    the full-text indexes, the structure and the scope counters.

    Opening the archive is what a restart does: SQLite recovers the write-ahead log of a killed
    process; PostgreSQL has already rolled back the transactions of the connections that died.
    """
    db = open_database(target)
    try:
        problems = _sqlite_problems(db) if backend_of(db).name == "sqlite" else _postgres_problems(db)
        for rule, sql in STRUCTURE.items():
            count = db.scalar(sql)
            if count:
                problems.append(f"{rule}: {count}")
        return problems + _count_problems(db)
    finally:
        db.close()


def _sqlite_problems(db: Any) -> list[str]:
    """SQLite's integrity and foreign-key checks and FTS5's integrity-check of each full-text index."""
    problems = []
    integrity = [row["integrity_check"] for row in db.query("PRAGMA integrity_check")]
    if integrity != ["ok"]:
        problems.append(f"integrity_check: {integrity[:5]}")
    foreign = db.query("PRAGMA foreign_key_check")
    if foreign:
        problems.append(f"foreign_key_check: {foreign[:5]}")
    for table in FULLTEXT_TABLES:
        try:
            with db.write() as conn:
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        except apsw.Error as exc:
            problems.append(f"{table} integrity-check: {exc}")
    return problems


def _postgres_problems(db: Any) -> list[str]:
    """The full-text tables of archive/postgres/pg_fulltext.py agree with their postings and statistics.

    PostgreSQL checks its own pages and enforces every foreign key at each statement, so a killed
    client cannot leave torn pages or dangling references: what is left to check is ours.
    """
    problems = []
    for table in FULLTEXT_TABLES:
        torn = db.scalar(
            f"SELECT count(*) FROM {table} t WHERE t.tokens"
            f" <> coalesce((SELECT sum(p.tf) FROM {table}_terms p WHERE p.rowid = t.rowid), 0)"
        )
        if torn:
            problems.append(f"{table}: {torn} rows whose token count differs from their postings")
        stats = db.one(f"SELECT count(*) AS n, coalesce(sum(tokens), 0) AS tokens FROM {table}")
        kept = db.one("SELECT rows AS n, tokens FROM fulltext_stats WHERE name = ?", (table,)) or {"n": 0, "tokens": 0}
        if stats != kept:
            problems.append(f"{table}: fulltext_stats keeps {kept}, the table holds {stats}")
    return problems


def _count_problems(db: Any) -> list[str]:
    """The per-scope event counts that recall reports (kept by triggers) match the events."""
    if backend_of(db).name == "sqlite" and not db.query("SELECT 1 FROM sqlite_master WHERE name = 'scope_counts'"):
        return []
    actual = {
        tuple(row.values())
        for row in db.query(
            "SELECT persona_id, project_id, count(*) AS events,"
            " sum(CASE WHEN extraction_state = 'pending' THEN 1 ELSE 0 END) AS pending,"
            " sum(CASE WHEN extraction_state = 'failed' THEN 1 ELSE 0 END) AS failed"
            " FROM events GROUP BY persona_id, project_id"
        )
    }
    kept = {
        tuple(row.values())
        for row in db.query("SELECT persona_id, project_id, events, pending, failed FROM scope_counts WHERE events > 0")
    }
    if actual == kept:
        return []
    return [f"scope_counts differ from the events: kept {kept - actual}, real {actual - kept}"]


def rows(target: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Rows of a read query on the archive (a file or a URL), through a fresh connection."""
    db = open_database(target)
    try:
        return list(db.query(sql, params))
    finally:
        db.close()


class Watcher:
    """Tells whether anything was committed to the archive between two looks, from its own connection.

    SQLite: ``PRAGMA data_version``, which moves when another connection commits. PostgreSQL has no
    such counter (its statistics are flushed lazily, its WAL position also moves for reads that prune
    pages), so the look is a digest of every table's rows: equal digests, an unchanged archive.
    """

    def __init__(self, target: Path | str) -> None:
        self.db = open_database(target)

    def look(self) -> Any:
        if backend_of(self.db).name == "sqlite":
            return self.db.data_version()
        with self.db.read():
            tables = [row["tablename"] for row in self.db.query(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename"
            )]  # fmt: skip
            return [
                self.db.scalar(f"SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t")
                for table in tables
            ]

    def close(self) -> None:
        self.db.close()


# -- a scripted extractor ----------------------------------------------------------------------------

_EVENT_BLOCK = re.compile(
    r"<<<BEGIN DATA (\w+) EVENT \(extract from this text\)>>>\n[^\n]*\n(.*)\n<<<END DATA \1>>>", re.S
)


def event_text(body: dict[str, Any]) -> str:
    """The EVENT block's text in an extraction request."""
    user = body["messages"][-1]["content"]
    match = _EVENT_BLOCK.search(user)
    assert match, "the extraction request has no EVENT block"
    return match.group(2)


class QuotingExtractor:
    """The scripted model: one memory per event, quoting the event's first words.

    The content names a digest of the text, so no two events' memories are duplicates of each other;
    "city" in the text makes it a single-valued fact (subject user.city), so timelines form.
    ``before_reply`` runs before each answer (the crash suite kills the requester there).
    """

    def __init__(self, before_reply: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.before_reply = before_reply
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        if "messages" not in body:  # the body of a request whose sender was killed while sending it
            return Reply(status=400, body={"error": {"message": "incomplete request body"}})
        self.calls += 1
        if self.before_reply is not None:
            self.before_reply(body)
        text = event_text(body)
        words = text.split()
        quote = " ".join(words[:4]) if words else text
        subject = "user.city" if "city" in text else None
        content = f"The user said ({hashlib.sha256(text.encode()).hexdigest()[:12]}): {quote}"
        return extraction_reply(memory_item(content, quote, subject=subject))


def extractor_env(base_url: str, timeout: str = "10") -> dict[str, str]:
    return {
        **BASE_ENV,
        "MEMLIKEHUMAN_EXTRACTOR": "openai",
        "MEMLIKEHUMAN_EXTRACTOR_BASE_URL": base_url,
        "MEMLIKEHUMAN_EXTRACTOR_API_KEY": "test",
        "MEMLIKEHUMAN_TIMEOUT": timeout,
        "MEMLIKEHUMAN_EXTRACTION_WAIT": "60",
    }


# -- a raw JSON-RPC client of `memlikehuman serve` ------------------------------------------------------


class RawServer:
    """`memlikehuman serve` driven with hand-written JSON-RPC lines, so a test can pipeline requests,
    send bytes no SDK would send, and SIGKILL the process at any point."""

    def __init__(self, db: Path | str, env: dict[str, str], stderr_path: Path) -> None:
        self._stderr: IO[bytes] = open(stderr_path, "ab")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memlikehuman", "serve", "--db", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, **env},
        )
        self.pid = self.proc.pid
        self.not_json: list[bytes] = []
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._answers: dict[int, dict[str, Any]] = {}
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.strip():
                continue
            try:
                self._lines.put(json.loads(line))
            except ValueError:
                self.not_json.append(line)
        self._lines.put(None)

    def send_text(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Write one request; return its ID (the answer is collected with ``answer``)."""
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}}
        self.send_text(json.dumps(message))
        return self._next_id

    def answer(self, request_id: int, timeout: float = 60.0) -> dict[str, Any] | None:
        """The response to a request, or None when the server's stdout ended first."""
        while request_id not in self._answers:
            try:
                message = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no answer to request {request_id} within {timeout} s") from None
            if message is None:
                self._lines.put(None)
                return None
            if "id" in message:
                self._answers[message["id"]] = message
        return self._answers.pop(request_id)

    def initialize(self) -> None:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
        assert self.answer(self.send("initialize", params)) is not None
        self.send_text(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def call_tool(self, name: str, arguments: dict[str, Any]) -> int:
        return self.send("tools/call", {"name": name, "arguments": arguments})

    def kill(self) -> None:
        self.proc.kill()
        self.close()

    def close(self) -> int:
        """Close stdin (the host goes away) and wait for the process; return its exit code."""
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        self._reader.join(timeout=60)
        if self.proc.stdout:
            self.proc.stdout.close()
        self._stderr.close()
        return code


def tool_outcome(answer: dict[str, Any]) -> tuple[bool, dict[str, Any] | str]:
    """(True, structured content) for a successful tools/call answer, (False, error text) otherwise."""
    if "error" in answer:
        return False, f"protocol error {answer['error'].get('code')}: {answer['error'].get('message')}"
    result = answer["result"]
    if result.get("isError"):
        return False, result["content"][0]["text"]
    return True, result["structuredContent"]
