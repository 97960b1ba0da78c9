"""The JSON shape of results, for every edge: plain dicts in the field order of the tools' output.

The MCP server validates these into its protocol models (server/models.py, which publish them as
output schemas); the CLI prints them as they are (`recall --json`), so both show the same fields.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from . import clock
from .records import Memory, MemoryHit, RawHit, RecallResult
from .retrieval import gist

if TYPE_CHECKING:
    from .records import ForgetResult  # reports.py: loaded only where a forget happens

__all__ = ["data_line", "forget_shape", "memory_shape", "recall_shape", "visible"]

# What stored text must not carry raw into anything a model reads, escaped as JSON escapes it: the
# characters hosts and models may break lines at (json.dumps with ensure_ascii=False leaves them), and
# those that change how the text around them reads while no screen shows them: the bidirectional
# controls and the Unicode tag characters (U+E0000-U+E007F, a tag as its surrogate pair \udb40\udcXX).
_UNSEEN = [0x2028, 0x2029, 0x85, 0x61C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_VISIBLE = {code: json.dumps(chr(code))[1:-1] for code in [*_UNSEEN, *range(0xE0000, 0xE0080)]}
_VISIBLE_TABLE = str.maketrans(_VISIBLE)
_ESCAPE_TABLE = str.maketrans({**_VISIBLE, ord("«"): "\\u00ab", ord("»"): "\\u00bb"})


def visible(text: str) -> str:
    """`text` with every line-breaking, bidirectional-control and tag character escaped (`\\u202e`): the
    tools' text blocks and the hooks' checkpoint text. JSON reads the escapes back as the characters."""
    return text.translate(_VISIBLE_TABLE)


def data_line(record: dict[str, Any]) -> str:
    """One JSON object on one line, with nothing inside that can pass for a marker or a line break or
    hide as a bidirectional control or tag (`visible`, and "«", "»"): the data blocks of session_resume,
    of the prompt hook's injection and of the persona resource."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).translate(_ESCAPE_TABLE)


def memory_shape(
    memory: Memory, *, detail: str = "full", score: float | None = None, as_of: str | None = None
) -> dict[str, Any]:
    """A memory as the tools show it; an overview hides the exact quote."""
    overview = detail == "overview"
    return {
        "memory_id": memory.memory_id,
        "content": gist.overview(memory) if overview else memory.content,
        "kind": memory.kind,
        "basis": memory.basis,
        "category": memory.category,
        "detail": detail,
        "status": memory.status(as_of or clock.now_stamp()),  # a successor that starts later: still current
        "valid_from": memory.valid_from,
        "valid_to": memory.valid_to,
        "recorded_at": memory.recorded_at,
        "score": score,
        "source": {
            "event_id": memory.event_id,
            "role": memory.role,
            "source": memory.source,
            "session_id": memory.session_id,
            "occurred_at": memory.occurred_at,
            "quote": "" if overview else memory.quote,
        },
        "revoked_at": memory.revoked_at,
        "revoke_reason": memory.revoke_reason,
        "replaced_by": memory.replaced_by,
        "superseded_by": memory.superseded_by,
        "supersedes": memory.supersedes,
        "known_from": memory.known_from or None,
        "corrects": memory.corrects,
        "extractor": memory.extractor,
    }


def _memory_hit(hit: MemoryHit, as_of: str) -> dict[str, Any]:
    shape = {**memory_shape(hit.memory, detail=hit.detail, score=hit.score, as_of=as_of), "status": hit.status}
    return {**shape, "newer": hit.newer}


def _raw_hit(hit: RawHit) -> dict[str, Any]:
    event = hit.event
    return {
        "event_id": event.event_id,
        "role": event.role,
        "source": event.source,
        "session_id": event.session_id,
        "occurred_at": event.occurred_at,
        "excerpt": hit.excerpt,
        "truncated": hit.truncated,
        "score": hit.score,
        "said": hit.said,
        "first_at": hit.first_at,
        "offset": hit.offset,
        "newer": hit.newer,
    }


def recall_shape(result: RecallResult) -> dict[str, Any]:
    """memory_recall's output fields."""
    c = result.coverage
    return {
        "memories": [_memory_hit(hit, result.as_of) for hit in result.memories],
        "raw_fallback": [_raw_hit(hit) for hit in result.raw_fallback],
        "search_mode": result.search_mode,
        "as_of": result.as_of,
        "coverage": {
            "events_in_scope": c.events_in_scope,
            "events_pending": c.events_pending,
            "events_failed": c.events_failed,
            "events_without_vectors": c.events_without_vectors,
            "events_after_as_of": c.events_after_as_of,
            "events_in_flight": c.events_in_flight,
        },
        "warnings": list(result.warnings),
    }


def forget_shape(result: ForgetResult) -> dict[str, Any]:
    """memory_forget's output fields."""
    return {
        "deleted_event_ids": list(result.deleted_event_ids),
        "deleted_memory_ids": list(result.deleted_memory_ids),
        "invalidated_checkpoints": result.invalidated_checkpoints,
        "still_said_by": list(result.still_said_by),
        "warnings": result.warnings,
    }
