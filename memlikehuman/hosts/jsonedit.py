"""Surgical edits of JSON (and JSONC) text: add or remove one member or array item, leave every
other byte where it was.

`parse` returns a tree of nodes with their character spans; comments (// and /* */) and trailing
commas are accepted, as VS Code and Claude Code accept them. An insertion puts
`,<newline><indent>"key": value` after the last member (the indentation copied from the file), and
a removal takes out exactly a member and the separator before it, so removing what was inserted
gives the original text back byte for byte.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgument

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


@dataclass
class Node:
    """A JSON value in the text: [start, end) covers the value itself."""

    start: int
    end: int
    value: Any
    members: list[tuple[str, int, Node]] = field(default_factory=list)  # objects: (key, key_start, node)
    items: list[Node] = field(default_factory=list)  # arrays

    def get(self, key: str) -> Node | None:
        """The member `key` of an object node (the last one when a key repeats)."""
        found = [node for name, _, node in self.members if name == key]
        return found[-1] if found else None


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.text, self.source, self.pos = text, source, 0

    def fail(self, what: str) -> InvalidArgument:
        line = self.text.count("\n", 0, self.pos) + 1
        return InvalidArgument(f"{self.source}, line {line}: {what}: fix the file by hand, then run the command again")

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t\r\n\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("a comment is not closed")
                self.pos = end + 2
            else:
                return

    def value(self) -> Node:
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("the text ends where a value should be")
        char = self.text[self.pos]
        if char == "{":
            return self.container("{", "}")
        if char == "[":
            return self.container("[", "]")
        if char == '"':
            start = self.pos
            string = self.string()  # moves self.pos past the closing quote
            return Node(start, self.pos, string)
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                start, self.pos = self.pos, self.pos + len(word)
                return Node(start, self.pos, literal)
        match = _NUMBER.match(self.text, self.pos)
        if not match:
            raise self.fail(f"unexpected {char!r}")
        self.pos = match.end()
        return Node(match.start(), match.end(), json.loads(match.group()))

    def string(self) -> str:
        start = self.pos
        self.pos += 1
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\":
                self.pos += 2
            elif char == '"':
                self.pos += 1
                try:
                    return str(json.loads(self.text[start : self.pos]))
                except json.JSONDecodeError:
                    raise self.fail("a string is malformed") from None
            else:
                self.pos += 1
        raise self.fail("a string is not closed")

    def container(self, opening: str, closing: str) -> Node:
        node = Node(self.pos, -1, {} if opening == "{" else [])
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith(closing, self.pos):
                self.pos += 1
                node.end = self.pos
                return node
            if opening == "{":
                if not self.text.startswith('"', self.pos):
                    raise self.fail("an object key must be a string")
                key_start = self.pos
                key = self.string()
                self.skip()
                if not self.text.startswith(":", self.pos):
                    raise self.fail("':' is missing after a key")
                self.pos += 1
                child = self.value()
                node.members.append((key, key_start, child))
                node.value[key] = child.value
            else:
                child = self.value()
                node.items.append(child)
                node.value.append(child.value)
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith(closing, self.pos):
                raise self.fail(f"',' or {closing!r} is missing")


def parse(text: str, source: str) -> Node:
    """The node tree of a JSON/JSONC document. Raises InvalidArgument naming the file and line."""
    parser = _Parser(text, source)
    root = parser.value()
    parser.skip()
    if parser.pos != len(text):
        raise parser.fail("text follows the end of the document")
    return root


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    line = text[start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def indent_unit(text: str, root: Node) -> str:
    """The file's indentation step: that of its first nested line, else two spaces."""
    for _, key_start, _ in root.members:
        indent = _line_indent(text, key_start)
        if indent:
            return indent
    return "  "


def render(value: Any, unit: str, base: str) -> str:
    """A value as JSON text in the file's style, its continuation lines indented from `base`."""
    step = len(unit) if unit.strip(" ") == "" else unit
    text = json.dumps(value, indent=step, ensure_ascii=False)
    return text.replace("\n", "\n" + base)


def _child_indent(text: str, container: Node, unit: str) -> str:
    children = [key_start for _, key_start, _ in container.members] or [n.start for n in container.items]
    if children:
        return _line_indent(text, children[0])
    return _line_indent(text, container.start) + unit


def insert_member(text: str, container: Node, key: str, value: Any, unit: str) -> str:
    """Text with `"key": value` added as the last member of the object `container`."""
    indent = _child_indent(text, container, unit)
    entry = f"{json.dumps(key, ensure_ascii=False)}: {render(value, unit, indent)}"
    return _insert(text, container, entry, indent)


def replace_value(text: str, node: Node, value: Any, unit: str) -> str:
    """Text with the value `node` spans replaced in place (a scalar written back gives the original bytes)."""
    return text[: node.start] + render(value, unit, _line_indent(text, node.start)) + text[node.end :]


def append_item(text: str, container: Node, value: Any, unit: str) -> str:
    """Text with `value` added as the last item of the array `container`."""
    indent = _child_indent(text, container, unit)
    return _insert(text, container, render(value, unit, indent), indent)


def _insert(text: str, container: Node, entry: str, indent: str) -> str:
    children = [n for _, _, n in container.members] or container.items
    if children:
        at = children[-1].end
        return text[:at] + f",\n{indent}{entry}" + text[at:]
    # An empty container: open it onto its own lines.
    closing = container.end - 1
    outer = _line_indent(text, container.start)
    return text[: container.start + 1] + f"\n{indent}{entry}\n{outer}" + text[closing:]


def remove_child(text: str, container: Node, index: int) -> str:
    """Text without the container's child number `index` (a member or an item) and its separator."""
    spans = [(key_start, n.end) for _, key_start, n in container.members] or [(n.start, n.end) for n in container.items]
    start, end = spans[index]
    if len(spans) == 1:
        inner = text[container.start + 1 : container.end - 1]
        if inner.strip() == text[start:end].strip():
            return text[: container.start + 1] + text[container.end - 1 :]  # back to {} / []
        return text[:start] + text[end:]
    if index > 0:
        return text[: spans[index - 1][1]] + text[end:]  # from the end of the previous child
    return text[:start] + text[spans[1][0] :]  # up to the next child
