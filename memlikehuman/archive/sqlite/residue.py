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

import math
import mmap
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .pagefile import PageFile

# A piece shorter than this matches unrelated bytes too often to mean anything.
MIN_PIECE = 12
# Up to this many bytes from the start, the middle and the end of each deleted text.
PIECE = 32

# Leaves read on each side of a deleted row's leaf: a balance moves cells between at most three
# neighbouring siblings, and later balances shift a page's keys by a few pages at most.
AROUND = 16
# Full-text terms: shorter ones are too common to tell anything; the end of longer ones is looked for.
MIN_TERM = 8
TERM_PIECE = 6

Data = bytes | mmap.mmap | PageFile  # a database file's bytes

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


def unallocated(
    page: bytes | mmap.mmap, header_at: int, base: int = 0, size: int | None = None
) -> list[tuple[int, int]]:
    """The [start, end) ranges of a b-tree page that hold no live cell; [] for other pages.

    ``page`` holds the page at ``base`` (the whole file, or the page alone with base 0); the
    ranges are offsets into ``page``.
    """
    size = len(page) - base if size is None else size
    flag, block, cells, content = _HEADER.unpack_from(page, base + header_at)
    if flag not in _LEAF_FLAGS and flag not in _INTERIOR_FLAGS:
        return []
    header_size = 8 if flag in _LEAF_FLAGS else 12
    ranges = [(header_at + header_size + 2 * cells, min(content or 65536, size))]
    for _ in range(size // 4):  # a freeblock chain cannot be longer; bounds a corrupt one
        if block == 0 or block + 4 > size:
            break
        following, length = _FREEBLOCK.unpack_from(page, base + block)
        ranges.append((block + 4, min(block + length, size)))
        block = following
    return [(base + start, base + end) for start, end in ranges if end > start]


def stale_pages(data: Data, page_size: int, trees: Mapping[int, Tree]) -> list[int]:
    """Pages (1-based numbers) of rowid-table b-trees whose unused space holds one of their pieces.

    ``data`` is the database file; ``trees`` maps a tree's root page to what to look for in it. A
    row moves only between sibling pages of its own tree (SQLite balances a page with at most two
    siblings under the same parent), so where ``Tree.keys`` are given only the leaves around them
    are read: the children of the leaf's parent and of the parent's two neighbours.
    """
    found = []
    for root, tree in trees.items():
        if not tree.pieces:
            continue
        pages = _pages(data, page_size, root) if tree.keys is None else _around(data, page_size, root, tree.keys)
        for number in pages:
            page = _page(data, page_size, number)
            ranges = unallocated(page, 100 if number == 1 else 0, 0, page_size)
            spare = b"\0".join(page[start:end] for start, end in ranges)
            if spare.strip(b"\0") and any(piece in spare for piece in tree.pieces):
                found.append(number)
    return sorted(set(found))


@dataclass(frozen=True)
class Tree:
    """What to look for in one b-tree: pieces, and the row keys they came from (None: read it all)."""

    pieces: set[bytes]
    keys: Sequence[int] | None = None


def _pages(data: Data, page_size: int, root: int) -> list[int]:
    """The pages of a table b-tree (interior and leaf), found by walking it from its root."""
    found: list[int] = []
    todo, seen = [root], set()
    while todo:
        number = todo.pop()
        flag = _flag(data, page_size, number)
        if number in seen or flag is None:
            continue  # a cycle or a torn read; never loop
        seen.add(number)
        found.append(number)
        if flag == 0x05:
            children = _child_pages(data, page_size, number)
            if isinstance(data, PageFile):
                data.prefetch(children, page_size)  # siblings are often neighbours in the file
            todo.extend(children)
    return found


def _around(data: Data, page_size: int, root: int, keys: Iterable[int]) -> set[int]:
    """The pages near each key: its path from the root, and the AROUND leaves on each side of its leaf.

    The leaves are taken in key order from the children of the leaf's parent and of the parent's
    two neighbours, so a window can reach past the parent's first or last child.
    """
    found: set[int] = set()
    for key in keys:
        path = _descend(data, page_size, root, key)  # [(interior page, index of the child taken)]
        found.update(page for page, _ in path)
        if not path:
            found.add(root)
            continue
        parents, here = [path[-1][0]], path[-1][1]
        if len(path) >= 2:
            grand, at = path[-2]
            parents = _child_pages(data, page_size, grand)[max(0, at - 1) : at + 2]
            before = parents[: parents.index(path[-1][0])] if path[-1][0] in parents else []
            here += sum(len(_child_pages(data, page_size, parent)) for parent in before)
        leaves = [leaf for parent in parents if _flag(data, page_size, parent) == 0x05
                  for leaf in _child_pages(data, page_size, parent)]  # fmt: skip
        found.update(leaves[max(0, here - AROUND) : here + AROUND + 1])
    return found


def _descend(data: Data, page_size: int, root: int, key: int) -> list[tuple[int, int]]:
    """The interior pages from the root towards the leaf that holds (or would hold) ``key``."""
    path: list[tuple[int, int]] = []
    number = root
    for _ in range(64):  # deeper than any real tree; bounds a corrupt one
        if _flag(data, page_size, number) != 0x05:
            break
        children = _children(data, page_size, number)
        at = next((i for i, (_, bound) in enumerate(children) if key <= bound), len(children) - 1)
        path.append((number, at))
        number = children[at][0]
    return path


def _children(data: Data, page_size: int, number: int) -> list[tuple[int, float]]:
    """(child page, largest key it holds) of a table interior page, in key order; the last is unbounded."""
    page, at = _page(data, page_size, number), 100 if number == 1 else 0
    cells, right = _INTERIOR.unpack_from(page, at + 3)[0], _RIGHT.unpack_from(page, at + 8)[0]
    children: list[tuple[int, float]] = []
    for i in range(cells):
        cell = _POINTER.unpack_from(page, at + 12 + 2 * i)[0]
        if cell + 5 > page_size:
            continue
        children.append((_RIGHT.unpack_from(page, cell)[0], _varint(page, cell + 4)))
    return [*children, (right, math.inf)]


def _child_pages(data: Data, page_size: int, number: int) -> list[int]:
    """The child pages of a table interior page, in key order (the right-most child last)."""
    page, at = _page(data, page_size, number), 100 if number == 1 else 0
    cells = _INTERIOR.unpack_from(page, at + 3)[0]
    pointers = struct.unpack_from(f">{cells}H", page, at + 12)
    children = [_RIGHT.unpack_from(page, p)[0] for p in pointers if p + 4 <= page_size]
    return [*children, _RIGHT.unpack_from(page, at + 8)[0]]


def _page(data: Data, page_size: int, number: int) -> bytes:
    """Page ``number`` (1-based) of the file, alone: its offsets are the page's own."""
    if isinstance(data, PageFile):
        return data.page(number, page_size)
    return bytes(data[(number - 1) * page_size : number * page_size])


def _varint(data: bytes, at: int) -> int:
    value = 0
    for i in range(9):
        byte = data[at + i]
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value


def _flag(data: Data, page_size: int, number: int) -> int | None:
    """The b-tree flag of a table page (0x05 interior, 0x0D leaf), else None."""
    if not 0 < number <= len(data) // page_size:
        return None
    flag = _page(data, page_size, number)[100 if number == 1 else 0]
    return flag if flag in (0x05, 0x0D) else None


_HEADER = struct.Struct(">BHHH")  # flag, first freeblock, cells, start of the cell content
_FREEBLOCK = struct.Struct(">HH")  # next freeblock, size
_INTERIOR = struct.Struct(">H")
_POINTER = struct.Struct(">H")
_RIGHT = struct.Struct(">I")
