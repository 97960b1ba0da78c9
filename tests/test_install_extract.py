"""`install HOST --extract-with host`: the server entry names the host's own model as extractor."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_install import USER_FILES, cli, home, lay_out, snapshot, values

__all__ = ["home"]  # the fixture

ENTRY = {
    "claude-code": (".claude.json", ("mcpServers", "memlikehuman")),
    "codex": (".codex/config.toml", ("mcp_servers", "memlikehuman")),
    "gemini": (".gemini/settings.json", ("mcpServers", "memlikehuman")),
    "vscode": (".config/Code/User/mcp.json", ("servers", "memlikehuman")),
}
EXPECTED = {
    "claude-code": {"MEMLIKEHUMAN_EXTRACTOR": "command", "MEMLIKEHUMAN_EXTRACTOR_COMMAND": "claude-code"},
    "codex": {"MEMLIKEHUMAN_EXTRACTOR": "command", "MEMLIKEHUMAN_EXTRACTOR_COMMAND": "codex"},
    "gemini": {"MEMLIKEHUMAN_EXTRACTOR": "command", "MEMLIKEHUMAN_EXTRACTOR_COMMAND": "gemini"},
    "vscode": {"MEMLIKEHUMAN_EXTRACTOR": "sampling"},
}


def _env(home: Path, host: str) -> dict[str, str]:
    relative, keys = ENTRY[host]
    entry = values(home / relative)
    for key in keys:
        entry = entry[key]
    return dict(entry["env"])


@pytest.mark.parametrize("host", sorted(ENTRY))
def test_extract_with_host_writes_the_hosts_extractor_and_uninstall_removes_exactly_it(home: Path, host: str) -> None:
    original = lay_out(home, USER_FILES[host])
    done = cli(home, "install", host, "--extract-with", "host")
    assert done.exit_code == 0, done.output
    env = _env(home, host)
    extractor = {k: v for k, v in env.items() if k.startswith(("MEMLIKEHUMAN_EXTRACT", "MEMLIKEHUMAN_TIMEOUT"))}
    command = EXPECTED[host]["MEMLIKEHUMAN_EXTRACTOR"] == "command"
    batch = {"MEMLIKEHUMAN_EXTRACTION_BATCH": "6", "MEMLIKEHUMAN_TIMEOUT": "180"} if command else {}
    assert extractor == {**EXPECTED[host], **batch}
    assert cli(home, "uninstall", host).exit_code == 0
    assert snapshot(original) == original


@pytest.mark.parametrize("host", sorted(ENTRY))
def test_without_the_flag_no_extractor_is_written_and_installing_again_without_it_takes_it_out(
    home: Path, host: str
) -> None:
    lay_out(home, USER_FILES[host])
    assert cli(home, "install", host).exit_code == 0
    plain = _env(home, host)
    assert not [k for k in plain if k.startswith("MEMLIKEHUMAN_EXTRACT")]
    assert cli(home, "install", host, "--extract-with", "host").exit_code == 0
    assert cli(home, "install", host).exit_code == 0
    assert _env(home, host) == plain


@pytest.mark.parametrize("host", ["cursor", "claude-desktop"])
def test_a_host_without_a_headless_cli_or_sampling_is_refused_and_nothing_is_written(home: Path, host: str) -> None:
    original = lay_out(home, USER_FILES[host])
    done = cli(home, "install", host, "--extract-with", "host")
    assert done.exit_code == 2 and "has no headless CLI" in done.output
    assert snapshot(original) == original
