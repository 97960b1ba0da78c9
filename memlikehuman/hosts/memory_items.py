"""The items of a host's memory file (CLAUDE.md, AGENTS.md, GEMINI.md, a Cursor rule): what `import` stores.

The rule, line by line (line numbers count every line of the file, from 1):
- A heading (`#` to `######` and a space) is no item: it sets the heading path, the titles of the
  headings above the line, outermost first. Each item's text starts with its heading path
  (`Build > Tests`) on a line of its own, so recall finds an item by its section's words too.
- A list item (`-`, `*`, `+`, `1.` or `1)` and a space) is one item with everything indented under it
  (its continuation lines, nested lists, code blocks) and the lines that continue its paragraph.
- Any other run of non-blank lines (a paragraph, a table, a quote) is one item.
- A fenced code block (three backticks or tildes) belongs to the list item it is indented under;
  elsewhere it is an item of its own. Nothing inside a fence is a heading or a list item.
- Not items: blank lines, rules (`---`, `***`, `___`), the front matter of a Cursor rule (`.mdc`: from a
  first line `---` to the next `---`), and the block `export --format` writes (memory_block.py).
The text is kept as written: each line without its line break and trailing blanks, indentation kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InvalidArgument
from . import memory_block

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_LIST = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")


@dataclass(frozen=True)
class Item:
    """One item: its text (heading path first) and its first and last line in the file."""

    text: str
    first: int
    last: int


def items(data: bytes, where: str, *, front_matter: bool = False) -> list[Item]:
    """The file's items in file order. InvalidArgument when it is not UTF-8 or its block is damaged."""
    raw = data.splitlines(keepends=True)
    found = memory_block.find(raw, where)
    lines = []
    for number, line in enumerate(raw, start=1):
        try:
            lines.append(line.decode("utf-8").rstrip("\r\n").rstrip())
        except UnicodeDecodeError:
            raise InvalidArgument(f"{where}, line {number}: not UTF-8 text: save the file as UTF-8") from None
    if lines:
        lines[0] = lines[0].removeprefix("\ufeff")
    skipped = set(range(found[0], found[1] + 1)) if found else set()
    if front_matter and lines and lines[0] == "---":
        close = next((n for n in range(1, len(lines)) if lines[n] == "---"), None)
        skipped |= set(range(0, (close if close is not None else -1) + 1))
    return _Reader(lines, skipped).run()


class _Reader:
    """One pass over the lines: the heading path, and the item being gathered."""

    def __init__(self, lines: list[str], skipped: set[int]) -> None:
        self.lines, self.skipped = lines, skipped
        self.path: list[tuple[int, str]] = []  # (level, title) of the headings above
        self.found: list[Item] = []
        self.start: int | None = None  # the first line of the item being gathered
        self.end = 0  # its last non-blank line
        self.indent = 0  # a list item's content column: deeper lines belong to it (-1: a paragraph)
        self.fence: str | None = None  # the open fence's marker

    def run(self) -> list[Item]:
        for n, line in enumerate(self.lines):
            if n in self.skipped:
                self._close()
            elif self.fence is not None:
                self._in_fence(n, line)
            else:
                self._line(n, line)
        self._close()
        return self.found

    def _in_fence(self, n: int, line: str) -> None:
        self.end = n
        if line.strip().startswith(self.fence or "") and not line.strip().strip(self.fence[0] if self.fence else ""):
            self.fence = None

    def _line(self, n: int, line: str) -> None:
        indent = len(line) - len(line.lstrip(" "))
        inside = self.start is not None and self.indent >= 0 and line and indent >= self.indent
        if not line:
            return  # a blank line: the item may go on (a loose list item) or end at the next line
        if inside:
            self._fence_opens(line)
            self.end = n
            return
        heading, listed, fence = _HEADING.match(line), _LIST.match(line), _FENCE.match(line)
        if heading or _RULE.match(line):
            self._close()
            if heading:
                self._heading(len(heading.group(1)), heading.group(2) or "")
            return
        if listed or fence or self.start is None or self.end < n - 1:
            self._close()  # a new block; a line after a blank line that is not indented under the item
            self.start, self.indent = n, -1
            if listed:
                self.indent = len(listed.group(1)) + len(listed.group(2)) + max(1, min(len(listed.group(3)), 4))
        self._fence_opens(line)
        self.end = n

    def _fence_opens(self, line: str) -> None:
        fence = _FENCE.match(line.lstrip(" ")) if self.fence is None else None
        if fence:
            self.fence = fence.group(1)

    def _heading(self, level: int, title: str) -> None:
        self.path = [(lv, t) for lv, t in self.path if lv < level]
        if title:
            self.path.append((level, title))

    def _close(self) -> None:
        if self.start is not None:
            body = "\n".join(self.lines[self.start : self.end + 1])
            heading = " > ".join(title for _, title in self.path)
            self.found.append(Item(f"{heading}\n{body}" if heading else body, self.start + 1, self.end + 1))
        self.start, self.fence = None, None
