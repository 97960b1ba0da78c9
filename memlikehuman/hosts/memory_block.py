"""The marked block that `export --format` writes into a host's memory file, as bytes.

The block runs from a line that starts `<!-- memlikehuman:begin` to the line `<!-- memlikehuman:end -->`.
Every byte outside it is the user's and is never changed: line endings, encoding, a missing final
newline. A file without a block gets it at its end; when the file's last line has no line break, the
block brings its own (one before the begin line) and leaves its end line without one, so taking the
block out (`without_block`) gives the file back byte for byte. The block's lines use the file's line
ending (the first one found; `\\n` in a file that has none).

The whole file stays within the host's limit (`LIMITS`): the block takes the room the user's lines
leave, its lines in the order given (newest first), and a last line says how many did not fit.
When the user's lines leave no room even for the block's frame, the frame is written alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidArgument

BEGIN = b"<!-- memlikehuman:begin"
END = b"<!-- memlikehuman:end -->"


@dataclass(frozen=True)
class Limit:
    """What a host loads of the file: at most `lines` lines (None: no line limit) and `size` bytes."""

    lines: int | None
    size: int

    def __str__(self) -> str:
        lines = f"{self.lines} lines, " if self.lines is not None else ""
        return f"{lines}{self.size:,} bytes"


# Claude Code loads the first 200 lines / 25 KB of its auto memory MEMORY.md (and CLAUDE.md whole: the same
# cap keeps it short); Codex stops at 32 KiB of AGENTS.md (project_doc_max_bytes); Gemini CLI names no
# limit, and gets Claude Code's.
LIMITS = {
    "claude-md": Limit(200, 25_000),
    "agents-md": Limit(None, 32_768),
    "gemini-md": Limit(200, 25_000),
}


@dataclass(frozen=True)
class Block:
    """What goes between the markers: the begin line's words, a heading, the entries (best first)."""

    label: str  # the rest of the begin line, after the marker
    heading: str
    entries: list[str]


@dataclass(frozen=True)
class Written:
    """The file's new bytes and how many entries they show."""

    data: bytes
    shown: int
    left_out: int


def find(lines: list[bytes], where: str) -> tuple[int, int] | None:
    """The indexes of the begin and end lines of the block (None: no block). InvalidArgument when a begin
    line has no end line, or the file holds two blocks: which lines are ours would be a guess."""
    begins = [n for n, line in enumerate(lines) if line.startswith(BEGIN)]
    ends = [n for n, line in enumerate(lines) if line.rstrip(b"\r\n").rstrip() == END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        at = (begins or ends)[0] + 1
        raise InvalidArgument(
            f"{where}, line {at}: the memlikehuman block is damaged (a begin line needs one end line after it,"
            " and a file holds one block): remove its lines and export again"
        )
    return begins[0], ends[0]


def _eol(data: bytes) -> bytes:
    at = data.find(b"\n")
    return b"\r\n" if at > 0 and data[at - 1 : at] == b"\r" else b"\n"


def _frame(data: bytes, where: str) -> tuple[bytes, bytes, bool]:
    """(the bytes before the block, after it, whether the block ends with a line break)."""
    lines = data.splitlines(keepends=True)
    found = find(lines, where)
    if found is None:
        if not data or data.endswith(b"\n"):
            return data, b"", True
        return data + _eol(data), b"", False
    begin, end = found
    return b"".join(lines[:begin]), b"".join(lines[end + 1 :]), lines[end].endswith(b"\n")


def without_block(data: bytes, where: str) -> bytes:
    """The file without the block and the line break it brought: as it was before the first export."""
    before, after, closed = _frame(data, where)
    eol = _eol(data)
    if not closed and before.endswith(eol):
        before = before[: -len(eol)]
    return before + after


def with_block(data: bytes, block: Block, limit: Limit, where: str) -> Written:
    """The file with `block` in place of the old one (or at its end), holding as many entries as fit."""
    before, after, closed = _frame(data, where)
    eol = _eol(data)
    total = len(block.entries)
    # Everything but the entries and the closing line break, with and without a line for those left out.
    fixed = before + after + BEGIN + block.label.encode() + eol + block.heading.encode() + eol + END
    fixed += eol if closed else b""
    lines = _count_lines(fixed)
    chosen = [f"- {entry}".encode() + eol for entry in block.entries]

    def fits(shown: int) -> bool:
        more = _more(total - shown, limit).encode() + eol if shown < total else b""
        size = len(fixed) + sum(len(line) for line in chosen[:shown]) + len(more)
        count = lines + shown + (1 if more else 0)
        return size <= limit.size and (limit.lines is None or count <= limit.lines)

    shown = total if fits(total) else 0
    while shown + 1 < total and fits(shown + 1):  # a line says how many are left out: one fewer may fit
        shown += 1
    body = b"".join(chosen[:shown]) + (_more(total - shown, limit).encode() + eol if shown < total else b"")
    head = BEGIN + block.label.encode() + eol + block.heading.encode() + eol
    return Written(before + head + body + END + (eol if closed else b"") + after, shown, total - shown)


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


def _more(count: int, limit: Limit) -> str:
    noun = "memory" if count == 1 else "memories"
    return f"_{count:,} more {noun} did not fit the host's limit ({limit}): `memlikehuman recall` finds them._"
