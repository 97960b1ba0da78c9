"""What the server learnt of its client's MCP sampling, kept beside the archive for `stats` and `doctor`.

``MEMLIKEHUMAN_EXTRACTOR=sampling`` has the connected client's model make the memories
(server/sampling.py). Whether a client can is known only to the `serve` process that it started:
it writes ``<archive>.sampling.json`` (the client's name, its protocol version, whether it offers
sampling, when) so that a `stats` or `doctor` run in a terminal can say why events stay pending
and what to configure instead. The text of that advice lives here, for every edge.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import files

INSTEAD = (
    "give memory_record `memories` from the agent, or set MEMLIKEHUMAN_EXTRACTOR=command"
    " (MEMLIKEHUMAN_EXTRACTOR_COMMAND=claude-code, codex or gemini: docs/hosts.md) or openai"
)


def status_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".sampling.json")


def write(db_path: Path, client: str, protocol: str, sampling: bool, modern: bool, wait: float = 0.0) -> None:
    """Record what the client of this server offers (best effort: a read-only directory is no failure)."""
    record = {
        "client": client,
        "protocol": protocol,
        "sampling": sampling,
        "modern": modern,
        "wait": wait,
        "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    path = status_path(db_path)
    with contextlib.suppress(OSError):
        files.private_dirs(path.parent)
        files.write_private(path, json.dumps(record))


def read(db_path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(status_path(db_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def advice(status: dict[str, Any] | None) -> str | None:
    """Why sampling makes no memories for this client, and what to do; None when it works or is unknown."""
    if status is None:
        return (
            "MEMLIKEHUMAN_EXTRACTOR=sampling: only a running `memlikehuman serve` whose MCP client offers"
            f" sampling makes memories, and none has connected yet; events stay pending. Or {INSTEAD}"
        )
    client = f"{status.get('client') or 'the client'} (MCP {status.get('protocol')}, {status.get('at')})"
    if not status.get("sampling"):
        return (
            f"MEMLIKEHUMAN_EXTRACTOR=sampling, but the last client, {client}, does not offer MCP sampling:"
            f" its events stay pending. Use a client with sampling (VS Code), or {INSTEAD}"
        )
    if status.get("modern") and not status.get("wait"):
        return modern_advice(client)
    return None


def modern_advice(client: str) -> str:
    return (
        f"MEMLIKEHUMAN_EXTRACTOR=sampling with {client}: in MCP 2026-07-28 a server may ask the client's"
        " model only inside one of the client's calls, so memory_record asks only when"
        f" MEMLIKEHUMAN_EXTRACTION_WAIT is above 0 (otherwise events stay pending). Or {INSTEAD}"
    )
