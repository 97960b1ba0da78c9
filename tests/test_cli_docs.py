"""Every command registered on `memlikehuman` has help text and a row in the README's command table."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
from click.testing import CliRunner

from memlikehuman.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"
_COMMAND_WORD = re.compile(r"[a-z][a-z0-9-]*")


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    """("persona show", command), ... for every command and subcommand of the group."""
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        yield " ".join(path), command
        if isinstance(command, click.Group):
            yield from command_paths(command, path)


def documented(readme: str) -> set[str]:
    """The command names of the "Command line" table: the leading command words of each row's first cell."""
    section = readme.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        match = re.match(r"\|\s*`([^`]+)`", line)
        if match:
            words = match.group(1).split()
            names.add(" ".join(words[: next((i for i, w in enumerate(words) if not _COMMAND_WORD.fullmatch(w)), None)]))
    return names


def problems(group: click.Group, readme: str) -> list[str]:
    """What is missing: commands without a README row, commands or options without help text."""
    rows = documented(readme)
    found = []
    for path, command in command_paths(group):
        if path not in rows:
            found.append(f"`{path}` has no row in the README's Command line table")
        if not (command.help or "").strip():
            found.append(f"`{path}` has no help text")
        for param in command.params:
            if isinstance(param, click.Option) and not (param.help or "").strip():
                found.append(f"`{path}` option {param.opts[0]} has no help text")
    return found


def test_every_command_is_in_the_readme_and_has_help_text() -> None:
    assert problems(main, README.read_text(encoding="utf-8")) == []


def test_an_undocumented_or_unexplained_command_is_reported() -> None:
    @click.group()
    def tool() -> None:
        """A tool."""

    @tool.command()
    def shown() -> None:
        """Documented."""

    @tool.group()
    def nested() -> None:
        """A group."""

    @nested.command()
    @click.option("--quiet", is_flag=True)
    def hidden() -> None:
        pass

    readme = "# T\n\n## Command line\n\n| command | what |\n|---|---|\n| `shown [OPTIONS]` | x |\n| `nested` | y |\n"
    assert problems(tool, readme) == [
        "`nested hidden` has no row in the README's Command line table",
        "`nested hidden` has no help text",
        "`nested hidden` option --quiet has no help text",
    ]


def test_every_command_answers_help_with_a_usage_line() -> None:
    runner = CliRunner()
    for path, _ in command_paths(main):
        result = runner.invoke(main, [*path.split(), "--help"])
        assert result.exit_code == 0, path
        assert result.output.startswith(f"Usage: main {path}") or result.output.startswith(f"Usage: {path}"), path


def rows(readme: str) -> dict[str, str]:
    """Command name -> the first cell of its row in the "Command line" table."""
    section = readme.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    found = {}
    for line in section.splitlines():
        match = re.match(r"\|\s*`([^`]+)`", line)
        if match:
            words = match.group(1).split()
            end = next((i for i, w in enumerate(words) if not _COMMAND_WORD.fullmatch(w)), len(words))
            found[" ".join(words[:end])] = match.group(1)
    return found


def test_every_option_a_readme_row_names_is_an_option_of_that_command() -> None:
    commands = dict(command_paths(main))
    for name, cell in rows(README.read_text(encoding="utf-8")).items():
        options = {opt for param in commands[name].params for opt in getattr(param, "opts", [])}
        named = set(re.findall(r"(?<![\w-])--?[a-z][a-z-]*", cell))
        assert named <= options | {"-"}, (name, named - options)


def test_the_exit_statuses_readme_names_are_the_ones_the_commands_use() -> None:
    from memlikehuman.cli import common

    section = README.read_text(encoding="utf-8").split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    said = dict(re.findall(r"`(\d+)` (success|error|wrong usage|a problem|interrupted)", section.replace("\n", " ")))
    assert said == {
        str(common.EXIT_OK): "success",
        str(common.EXIT_ERROR): "error",
        str(common.EXIT_USAGE): "wrong usage",
        str(common.EXIT_PROBLEM): "a problem",
        str(common.EXIT_INTERRUPTED): "interrupted",
    }
