"""Stale copies of deleted text in the unallocated space of live b-tree pages.

``secure_delete`` zeroes a deleted cell and every freed page. What it does not cover: when SQLite
rebalances a b-tree page it rebuilds the page in place, and the old bytes of cells that moved to a
sibling stay in the gap between the page's cell-pointer array and its cell-content area. A row
that moved that way and is deleted later is zeroed where it lives, while its earlier copy stays
readable in the old page's gap (docs/reliability.md, "A stale copy of a forgotten row").

``stale_pages`` reads the database file and reports the pages of the given tables whose
unallocated space (that gap and the freeblocks) still holds a piece of a deleted text: the text of
a row (``pieces``), or a full-text term that left the index with it (``term_pieces``); a live row
holding the same words is not a finding. Only a VACUUM rebuilds pages from zeroed buffers, so
``forget`` runs one when this finds anything.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterable

# A piece shorter than this matches unrelated bytes too often to mean anything.
MIN_PIECE = 12
# Up to this many bytes from the start, the middle and the end of each deleted text.
PIECE = 32

# Full-text terms: shorter ones are too common to tell anything; the end of longer ones is looked for.
MIN_TERM = 8
TERM_PIECE = 6

_LEAF_FLAGS = {0x0A, 0x0D}
_INTERIOR_FLAGS = {0x02, 0x05}


def term_pieces(terms: Iterable[str]) -> set[bytes]:
    """The pieces of full-text terms to look for: the last TERM_PIECE bytes of each long term.

    A full-text leaf stores a term after the prefix it shares with the term before it, so only
    the end of a term is sure to be stored as it is.
    """
    return {term.encode("utf-8")[-TERM_PIECE:] for term in terms if len(term.encode("utf-8")) >= MIN_TERM}


def pieces(texts: Iterable[str]) -> set[bytes]:
    """The byte strings to look for: the start, middle and end of each text (UTF-8)."""
    found: set[bytes] = set()
    for text in texts:
        data = text.encode("utf-8")
        if len(data) < MIN_PIECE:
            continue
        middle = max(0, len(data) // 2 - PIECE // 2)
        found.update({data[:PIECE], data[middle : middle + PIECE], data[-PIECE:]})
    return found


def unallocated(page: bytes, header_at: int) -> list[tuple[int, int]]:
    """The [start, end) ranges of a b-tree page that hold no live cell; [] for other pages."""
    flag = page[header_at]
    if flag not in _LEAF_FLAGS | _INTERIOR_FLAGS:
        return []
    header_size = 8 if flag in _LEAF_FLAGS else 12
    cells = int.from_bytes(page[header_at + 3 : header_at + 5], "big")
    content = int.from_bytes(page[header_at + 5 : header_at + 7], "big") or 65536
    ranges = [(header_at + header_size + 2 * cells, min(content, len(page)))]
    block = int.from_bytes(page[header_at + 1 : header_at + 3], "big")
    for _ in range(len(page) // 4):  # a freeblock chain cannot be longer; bounds a corrupt one
        if block == 0 or block + 4 > len(page):
            break
        size = int.from_bytes(page[block + 2 : block + 4], "big")
        ranges.append((block + 4, min(block + size, len(page))))
        block = int.from_bytes(page[block : block + 2], "big")
    return [(start, end) for start, end in ranges if end > start]


def stale_pages(data: bytes | mmap.mmap, page_size: int, trees: dict[int, set[bytes]]) -> list[int]:
    """Pages (1-based numbers) of rowid-table b-trees whose unused space holds one of their pieces.

    ``data`` is the database file; ``trees`` maps a tree's root page to the pieces to look for in
    it. A row moves only between pages of its own tree, so only those pages are read.
    """
    found = []
    for root, wanted in trees.items():
        if not wanted:
            continue
        for number in _pages(data, page_size, root):
            page = data[(number - 1) * page_size : number * page_size]
            spare = b"\0".join(page[start:end] for start, end in unallocated(page, 100 if number == 1 else 0))
            if spare.strip(b"\0") and any(piece in spare for piece in wanted):
                found.append(number)
    return sorted(found)


def _pages(data: bytes | mmap.mmap, page_size: int, root: int) -> list[int]:
    """The pages of a table b-tree (interior and leaf), found by walking it from its root."""
    pages = len(data) // page_size
    found: list[int] = []
    todo, seen = [root], set()
    while todo:
        number = todo.pop()
        if number in seen or not 0 < number <= pages:
            continue  # a cycle or a torn read; never loop
        seen.add(number)
        at = 100 if number == 1 else 0
        page = data[(number - 1) * page_size : number * page_size]
        if page[at] in (0x05, 0x0D):
            found.append(number)
        if page[at] == 0x05:
            todo.extend(_children(page, at))
    return found


def _children(page: bytes, at: int) -> list[int]:
    cells = int.from_bytes(page[at + 3 : at + 5], "big")
    pointers = [int.from_bytes(page[at + 12 + 2 * i : at + 14 + 2 * i], "big") for i in range(cells)]
    children = [int.from_bytes(page[p : p + 4], "big") for p in pointers if p + 4 <= len(page)]
    return [*children, int.from_bytes(page[at + 8 : at + 12], "big")]
