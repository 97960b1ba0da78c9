"""Tombstones: what a forget leaves so that nothing brings the forgotten record back.

One row per forgotten event and memory: the HMAC-SHA256 of its ID under a random key of this
archive (``archive_meta``, made by the first forget), hex. No text and no digest of a text. Every
path that inserts events asks ``forgotten`` first: memory_record (a host re-sending a hook, an
agent's retry), the history import, the import of an export.

What the key protects against: someone who sees the tombstones without the key (a copy of that
table, a listing of it) cannot test a guessed ID against them, and equal IDs of two archives give
different digests. What it does not: the key is in the archive, so whoever can read the whole
archive can test guesses, and a hook's event ID holds a digest of its text (hosts/hook.py), so a
guessed short text can be confirmed as forgotten there. `memlikehuman tombstones --drop` removes
the rows and the key (docs/reliability.md, "Deletion").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from ..text.digest import sha256
from .connection import Connection, Transaction
from .db import placeholders

KEY_NAME = "tombstone_key"
_BLOCK = 64  # SHA-256's block size in bytes


def forgotten(conn: Transaction, record_ids: Sequence[str]) -> set[str]:
    """The IDs among ``record_ids`` that a forget took (none when the archive has no key yet)."""
    key = _key(conn)
    if key is None or not record_ids:
        return set()
    keyed = _Keyed(key)
    digests = {keyed(record_id): record_id for record_id in record_ids}
    found: set[str] = set()
    names = list(digests)
    for start in range(0, len(names), 500):
        chunk = names[start : start + 500]
        rows = conn.execute(f"SELECT digest FROM tombstones WHERE digest IN ({placeholders(chunk)})", chunk)
        found.update(digests[row["digest"]] for row in rows)
    return found


def bury(conn: Transaction, record_ids: Sequence[str]) -> None:
    """Keep a tombstone of each ID (inside the forget's write transaction); makes the key when missing."""
    if not record_ids:
        return
    keyed = _Keyed(_key(conn) or _new_key(conn))
    conn.executemany(
        "INSERT INTO tombstones (digest) VALUES (?) ON CONFLICT (digest) DO NOTHING",
        [(keyed(record_id),) for record_id in record_ids],
    )


def lift(conn: Transaction, record_ids: Sequence[str]) -> None:
    """Remove the tombstones of ``record_ids`` (inside the caller's write transaction): records their own
    source took back (an item gone from its memory file: admin/history_store.py), which it may state again."""
    key = _key(conn)
    if key is None or not record_ids:
        return
    keyed = _Keyed(key)
    conn.executemany("DELETE FROM tombstones WHERE digest = ?", [(keyed(record_id),) for record_id in record_ids])


def digest(key: bytes, record_id: str) -> str:
    """The tombstone of one ID: its HMAC-SHA256 (RFC 2104) under the archive's key, hex."""
    return _Keyed(key)(record_id)


def matcher(conn: Transaction) -> Callable[[str], bool]:
    """Whether an ID was forgotten, for many IDs at once (an import): the tombstones are read once."""
    key = _key(conn)
    if key is None:
        return lambda record_id: False
    keyed = _Keyed(key)
    buried = {row["digest"] for row in conn.execute("SELECT digest FROM tombstones")}
    return lambda record_id: keyed(record_id) in buried


class _Keyed:
    """HMAC-SHA256 under one key, on text/digest's SHA-256 rather than the hmac module: every hook
    records, and hmac loads hashlib (OpenSSL), which the hooks' start-up keeps out
    (tests/test_hook_startup.py)."""

    def __init__(self, key: bytes) -> None:
        padded = (sha256(key).digest() if len(key) > _BLOCK else key).ljust(_BLOCK, b"\0")
        self.inner = sha256(bytes(b ^ 0x36 for b in padded))
        self.outer = sha256(bytes(b ^ 0x5C for b in padded))

    def __call__(self, record_id: str) -> str:
        inner = self.inner.copy()
        inner.update(record_id.encode("utf-8", "surrogatepass"))
        outer = self.outer.copy()
        outer.update(inner.digest())
        return str(outer.hexdigest())


def count(db: Connection) -> int:
    """How many tombstones the archive keeps."""
    return int(db.scalar("SELECT count(*) FROM tombstones") or 0)


def drop(db: Connection) -> int:
    """Delete every tombstone and the key; return how many there were. Forgotten records that a
    history, an export or a host still holds can then be stored again."""
    with db.write() as conn:
        dropped = int(conn.execute("SELECT count(*) AS n FROM tombstones").fetchone()["n"])
        conn.execute("DELETE FROM tombstones")
        conn.execute("DELETE FROM archive_meta WHERE name = ?", (KEY_NAME,))
    return dropped


def key_of(conn: Transaction) -> bytes | None:
    """The archive's tombstone key, or None before the first forget (the doctor matches digests with it)."""
    return _key(conn)


def _key(conn: Transaction) -> bytes | None:
    row = conn.execute("SELECT value FROM archive_meta WHERE name = ?", (KEY_NAME,)).fetchone()
    return None if row is None else bytes.fromhex(row["value"])


def _new_key(conn: Transaction) -> bytes:
    key = os.urandom(32)
    conn.execute("INSERT INTO archive_meta (name, value) VALUES (?, ?)", (KEY_NAME, key.hex()))
    return key
