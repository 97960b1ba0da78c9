"""Copies of forgotten rows an archive file still holds, found by proof rather than by guess.

A forget keeps the keyed digest of every ID it deleted (archive/tombstones.py). An event row and a
memory row begin with their ID (their first column is the rowid alias, stored as NULL), so any
bytes of the file or its WAL that read as the start of such a row whose ID has a tombstone are a
copy of a forgotten record: a stale cell in a page's unused space, an old page image in the WAL.
``count`` reads every byte of both files (the main file through pagefile.py, which keeps this
process's locks); it changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from .pagefile import PageFile

# A record header: its size (one byte: the rows have 16 and 24 columns), the NULL of the rowid alias,
# then the serial type of a text (the ID: 13 + 2 * its bytes, a one- or two-byte varint).
_START = re.compile(rb"(?=[\x08-\x7f]\x00[\x0f-\xff])")
_CHUNK = 4 * 2**20
_OVERLAP = 2_048  # a row start near a chunk's end is read with its header and ID (at most 1,024 bytes)


def count(path: Path, is_forgotten: Callable[[str], bool]) -> tuple[int, int]:
    """How many copies of forgotten rows the database file and its -wal hold: (main, wal)."""
    with PageFile(path) as data:
        parts = (data[start : start + _CHUNK + _OVERLAP] for start in range(0, len(data), _CHUNK))
        main = sum(_found(part, is_forgotten, _CHUNK) for part in parts)
    wal = path.with_name(path.name + "-wal")
    log = wal.read_bytes() if wal.exists() else b""  # the WAL holds no lock: a plain read is safe
    return main, _found(log, is_forgotten, len(log))


def _found(data: bytes, is_forgotten: Callable[[str], bool], limit: int) -> int:
    """Row starts before ``limit`` in the data whose ID (the first text after the header) has a tombstone."""
    found = 0
    for match in _START.finditer(data, 0, limit + 2):
        at = match.start()
        if at >= limit:
            break
        size, serial = data[at], data[at + 2]
        if serial >= 0x80 and at + 3 < len(data):
            serial = (serial & 0x7F) << 7 | data[at + 3]
        end = at + size + (serial - 13) // 2
        if serial % 2 == 0 or serial < 13 or end > len(data):
            continue
        try:
            record_id = data[at + size : end].decode("utf-8")
        except UnicodeDecodeError:
            continue
        found += bool(record_id) and is_forgotten(record_id)
    return found
