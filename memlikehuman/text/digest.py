"""SHA-256 hex digests (stable IDs, content hashes) without importing hashlib.

`import hashlib` loads OpenSSL: about 6 ms of every hook's start on a 2-core machine
(bench/hooks.py). CPython's own SHA-256 module gives the same digests; hashlib is the fallback
where it is missing (other interpreters, builds without it).
"""

from __future__ import annotations

try:
    from _sha2 import sha256  # CPython 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # CPython 3.11
    except ImportError:
        from hashlib import sha256


def sha256_hex(data: bytes) -> str:
    """The SHA-256 digest of data, as 64 hex digits (what hashlib.sha256(data).hexdigest() returns)."""
    return sha256(data).hexdigest()
