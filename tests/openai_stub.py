"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for provider tests.

It plays the external LLM/embedding service: each request is answered by the next scripted
reply (or by the default handler), and every request body is kept for assertions.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str -> raw text
    delay: float = 0.0  # seconds before the answer starts
    trickle: float = 0.0  # seconds between the answer's bytes (headers go at once)


def chat_reply(content: str) -> Reply:
    """A chat.completions answer whose message content is `content`."""
    return Reply(
        body={
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


def fake_vector(text: str, dim: int = 16) -> list[float]:
    """A deterministic vector from the text's bytes (bag of hashed words), unit length."""
    vec = np.zeros(dim, dtype=np.float32)
    for word in text.lower().split():
        vec[hash(word) % dim] += 1.0
    norm = float(np.linalg.norm(vec)) or 1.0
    return (vec / norm).tolist()


def embeddings_reply(body: dict[str, Any], dim: int = 16) -> Reply:
    """Answer an embeddings request, honouring encoding_format (base64 float32 or float)."""
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
    data = []
    for i, text in enumerate(texts):
        vector = fake_vector(str(text), dim)
        if body.get("encoding_format") == "base64":
            encoded: Any = base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode()
        else:
            encoded = vector
        data.append({"object": "embedding", "index": i, "embedding": encoded})
    return Reply(
        body={
            "object": "list",
            "data": data,
            "model": body.get("model", "stub"),
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
    )


@dataclass
class ScriptedOpenAI:
    """Start with `with ScriptedOpenAI() as api:`; use `api.base_url` as the provider's base URL."""

    chat: list[Reply] = field(default_factory=list)
    default_chat: Callable[[dict[str, Any]], Reply] | None = None
    dim: int = 16
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __enter__(self) -> ScriptedOpenAI:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                stub.requests.append((self.path, body))
                reply = stub._answer(self.path, body)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self._write(data, reply.trickle)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _write(self, data: bytes, trickle: float) -> None:
                if not trickle:
                    self.wfile.write(data)
                    return
                for byte in data:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(trickle)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def _answer(self, path: str, body: dict[str, Any]) -> Reply:
        if path.endswith("/embeddings"):
            return embeddings_reply(body, self.dim)
        if self.chat:
            return self.chat.pop(0)
        if self.default_chat is not None:
            return self.default_chat(body)
        return Reply(status=500, body={"error": {"message": "no scripted reply left"}})

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- extraction helpers -------------------------------------------------------------------------


def memory_item(
    content: str,
    quote: str,
    *,
    kind: str = "fact",
    basis: str = "stated",
    subject: str | None = None,
    valid_from: str | None = None,
    gist: str | None = None,
    supersedes: int | None = None,
) -> dict[str, Any]:
    """One item of the extraction response shape (tools.md, "Extraction response")."""
    return {
        "content": content,
        "quote": quote,
        "kind": kind,
        "basis": basis,
        "subject": subject,
        "supersedes": supersedes,
        "valid_from": valid_from,
        "gist": gist,
    }


def extraction_reply(*items: dict[str, Any], delay: float = 0.0) -> Reply:
    """A chat answer carrying {"memories": [items...]}."""
    reply = chat_reply(json.dumps({"memories": list(items)}))
    reply.delay = delay
    return reply


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (the port was just bound and released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
