"""Reading an open archive's file without dropping this process's locks on it.

POSIX advisory locks belong to the process, and closing any descriptor of a file releases all of
them. SQLite holds a shared lock on a WAL database for as long as a connection is open; it keeps
its own descriptors open until every lock is gone for that reason. A plain ``open(path).close()``
of the archive (an mmap of it, ``Path.read_bytes``) releases the server's lock behind SQLite's back,
and the next connection of another program (the ``sqlite3`` shell, Python's ``sqlite3``) to close
then takes the exclusive lock, believes it is the last one, checkpoints the WAL and deletes the WAL
and -shm files under the running server. The server's next forget then cannot truncate a WAL it no
longer shares with anyone (``disk I/O error``), and its deleted text stays in the main file
(docs/reliability.md, "Deletion"). ``PageFile`` reads through SQLite's own VFS (apsw.VFSFile),
which defers closing the descriptor while a connection of this process holds a lock.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import overload

import apsw

CHUNK = 256 * 1024  # bytes read at once by slices (the doctor's whole-file scan)
RUN = 64  # consecutive pages read ahead with one call


class PageFile:
    """The bytes of a database file, read lazily in chunks: ``len``, ``data[i]`` and ``data[a:b]``."""

    def __init__(self, path: Path) -> None:
        flags = [apsw.SQLITE_OPEN_MAIN_DB | apsw.SQLITE_OPEN_READONLY, 0]
        self._file = apsw.VFSFile("", str(path), flags)
        self._size = int(self._file.xFileSize())
        self._chunks: dict[int, bytes] = {}
        self._pages: dict[int, bytes] = {}

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, key: int) -> int: ...

    @overload
    def __getitem__(self, key: slice) -> bytes: ...

    def __getitem__(self, key: int | slice) -> int | bytes:
        if isinstance(key, int):
            if not 0 <= key < self._size:
                raise IndexError(key)
            return self._chunk(key // CHUNK)[key % CHUNK]
        start, stop, _ = key.indices(self._size)
        if stop <= start:
            return b""
        first, last = start // CHUNK, (stop - 1) // CHUNK
        if first == last:  # a page's range: sliced out of its chunk, nothing else copied
            return self._chunk(first)[start - first * CHUNK : stop - first * CHUNK]
        joined = b"".join(self._chunk(n) for n in range(first, last + 1))
        return joined[start - first * CHUNK : stop - first * CHUNK]

    def page(self, number: int, page_size: int) -> bytes:
        """Page ``number`` (1-based) of ``page_size`` bytes, read once."""
        found = self._pages.get(number)
        if found is None:  # one read per page: the trees a forget reads are spread over the file
            start = (number - 1) * page_size
            found = self._pages[number] = bytes(self._file.xRead(min(page_size, self._size - start), start))
        return found

    def prefetch(self, numbers: list[int], page_size: int) -> None:
        """Read these pages ahead, each run of consecutive pages (up to RUN) with one call."""
        wanted = sorted({n for n in numbers if n not in self._pages and 0 < n <= self._size // page_size})
        while wanted:
            run = 1
            while run < len(wanted) and run < RUN and wanted[run] == wanted[0] + run:
                run += 1
            start = (wanted[0] - 1) * page_size
            data = self._file.xRead(run * page_size, start)
            for i in range(run):
                self._pages[wanted[0] + i] = data[i * page_size : (i + 1) * page_size]
            wanted = wanted[run:]

    def _chunk(self, number: int) -> bytes:
        if number not in self._chunks:
            offset = number * CHUNK
            self._chunks[number] = bytes(self._file.xRead(min(CHUNK, self._size - offset), offset))
        return self._chunks[number]

    def close(self) -> None:
        self._file.xClose()

    def __enter__(self) -> PageFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
