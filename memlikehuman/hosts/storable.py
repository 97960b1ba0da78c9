"""What a host sends, made storable: nothing a hook receives is dropped for its form.

The tools refuse what tools.md forbids (a lone surrogate, a text over 200,000 characters, a session
ID over 128 characters or with control characters), and an agent can fix its call. A hook cannot ask
the host again, so it keeps what it got, visibly changed:
- a lone surrogate (JavaScript hosts cut strings inside an emoji) becomes U+FFFD;
- a text over the limit is stored in parts, each opening with "[part i of n ...]"; of a text over
  2,000,000 characters the first 2,000,000, each part saying so;
- a session ID that is no valid identifier becomes a readable cut of it and a digest of the whole;
- an event ID composed of those that would be over 256 characters keeps the host and the digest.
"""

from __future__ import annotations

import re

from ..text.digest import sha256_hex
from ..validate import CONTROL, MAX_EVENT_CHARS

MAX_SESSION_CHARS = 128  # an identifier's limit (tools.md)
SHOWN_SESSION_CHARS = 80  # what a session key keeps of an ID over that limit, before its digest
MAX_EVENT_ID_CHARS = 256
PART_ROOM = 100  # characters a part leaves for its "[part i of n ...]" line
# Of one message, what is stored at most: indexing takes about a second per million characters, and
# a host kills its hook after 10 s (install.HOOK_TIMEOUT_SECONDS), midway through the parts.
MAX_KEPT_CHARS = 2_000_000
_SURROGATE = re.compile("[\ud800-\udfff]")


def _digest(text: str) -> str:
    return sha256_hex(text.encode("utf-8", "surrogatepass"))


def text(raw: str) -> str:
    """The text with every lone surrogate replaced by U+FFFD (a surrogate pair is one code point here)."""
    return _SURROGATE.sub("\ufffd", raw)


def parts(raw: str, limit: int = MAX_EVENT_CHARS, keep: int = MAX_KEPT_CHARS) -> list[str]:
    """The text as one or more storable events: whole when it fits `limit`, else parts that each open
    with a line saying which part of how long a message they are, split after a line break or a space
    near the end of a part where there is one. Of a text over `keep` characters, the first `keep` are
    stored, and each part's line says so."""
    clean = text(raw)
    if len(clean) <= limit:
        return [clean]
    kept = clean[:keep]
    size = limit - PART_ROOM
    chunks, start = [], 0
    while start < len(kept):
        end = min(start + size, len(kept))
        if end < len(kept):
            cut = max(kept.rfind("\n", start + size // 2, end), kept.rfind(" ", start + size // 2, end))
            end = cut + 1 if cut > start else end
        chunks.append(kept[start:end])
        start = end
    total = len(chunks)
    whole = f"one {len(clean):,}-character message"
    what = whole if len(kept) == len(clean) else f"the first {len(kept):,} characters of {whole}"
    return [f"[part {i} of {total} of {what}]\n{c}" for i, c in enumerate(chunks, 1)]


def session_key(raw: str) -> str:
    """The session ID the archive keeps: the host's own, or, when it is no valid identifier, a readable
    cut of it (control characters as "?") with a digest of the whole: the same raw ID, the same key."""
    if 0 < len(raw) <= MAX_SESSION_CHARS and not CONTROL.search(raw):
        return raw
    return readable_key(raw, raw)


def readable_key(shown: str, whole: str) -> str:
    """A valid identifier that names `whole`: the first 80 characters of `shown` (control characters as
    "?"), "~" and 16 hex digits of the SHA-256 of `whole`."""
    return f"{CONTROL.sub('?', shown)[:SHOWN_SESSION_CHARS]}~{_digest(whole)[:16]}"


def event_id(host: str, middle: str, text_digest: str) -> str:
    """`host:middle:digest`, or `host:digest-of-middle:digest` when that would be over 256 characters or
    hold control characters (a long subagent ID, a session moved to a scope with long names)."""
    eid = f"{host}:{middle}:{text_digest}"
    if len(eid) <= MAX_EVENT_ID_CHARS and not CONTROL.search(eid):
        return eid
    return f"{host}:{_digest(middle)[:32]}:{text_digest}"
