"""The extractor for any OpenAI-compatible chat API (OpenAI, Ollama, vLLM, LM Studio, llama.cpp server).

Output format ladder: the first request asks for ``response_format=json_schema`` (structured output).
A server that rejects it with HTTP 400/422 (or with a 500 that names ``response_format``, as
llama-cpp-python's server 0.3.36 does) is asked again with ``json_object`` (JSON mode), and if that
is rejected too, with no ``response_format`` at all (the prompt itself asks for JSON). The format that
worked is remembered for the life of the provider, so probing costs at most two extra requests once.

Time budget and retries: ``timeout`` bounds one ``complete`` call: each request (and each HTTP phase
of it: connect, write, wait for bytes) gets only the budget that is left, and the answer is read as a
stream checked against the deadline, so a server that sends its answer slowly, a few bytes at a time,
is cut off when the budget ends (httpx's own timeouts apply to each read, not to the whole body; a
server that goes silent part-way through its answer is cut off by that read timeout). A transient failure -- HTTP
429, HTTP 5xx, or a refused/reset connection -- is retried once after a short pause, but only if the
pause fits in the remaining budget (a ``Retry-After`` longer than 2 s is not waited for: the event
stays pending and can be retried later). A timeout is not retried: the budget is spent. Every HTTP
error (also 401, 404, or a 400 that no format avoids) raises ``errors.Unavailable``: the request never
reached a model that could answer, so the event stays pending until the configuration is fixed.
Timeouts and the transient failures raise its subclass ``errors.Transient``: the background worker
tries those again later, with a bounded backoff (``claims``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import openai

from ..errors import Transient, Unavailable
from ..text import nesting
from .base import Extractor

OPENAI_BASE_URL = "https://api.openai.com/v1"
RETRY_PAUSE = 0.25  # seconds before the one retry of a transient failure
MAX_RETRY_AFTER = 2.0  # longer server-requested pauses are not waited for
FORMATS = ("json_schema", "json_object", "text")
# Status codes with which servers say "I do not support this response_format".
FORMAT_REJECTED = (400, 422)


class _Transient(Exception):
    """A failure worth one retry; carries the Unavailable message and the pause the server asked for."""

    def __init__(self, message: str, pause: float = RETRY_PAUSE) -> None:
        super().__init__(message)
        self.message = message
        self.pause = pause


class OpenAIChatExtractor(Extractor):
    """Chat completions through the official ``openai`` SDK, pointed at ``base_url``."""

    needs_network = True

    def __init__(self, model: str, base_url: str | None, api_key: str | None, timeout: float) -> None:
        self.model = model
        self.base_url = base_url or OPENAI_BASE_URL
        self.timeout = timeout
        self.model_id = f"openai:{model}@{self.base_url}"
        self.label = f"openai:{model}"
        # Local servers need no key, but the SDK insists on one; passing both values explicitly also
        # keeps the SDK from reading OPENAI_* variables behind config.py's back.
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=api_key or "not-needed", max_retries=0, timeout=timeout
        )
        self._format = 0  # index into FORMATS: the richest format the server has not rejected

    def complete(self, system: str, user: str, schema: dict[str, Any]) -> str:
        """Return the model's answer text; raise Unavailable when no answer arrives in time."""
        deadline = time.monotonic() + self.timeout
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        try:
            return self._attempt(messages, schema, deadline)
        except _Transient as first:
            left = deadline - time.monotonic()
            if first.pause > MAX_RETRY_AFTER or first.pause >= left:
                raise Transient(first.message) from None
            time.sleep(first.pause)
        try:
            return self._attempt(messages, schema, deadline)
        except _Transient as second:
            raise Transient(f"{second.message} (also on a retry)") from None

    def _attempt(self, messages: list[dict[str, str]], schema: dict[str, Any], deadline: float) -> str:
        """One request, walking down the format ladder on rejection; raise _Transient or Unavailable."""
        rung = self._format
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Transient(self._timed_out())
            try:
                answer = self._request(messages, schema, FORMATS[rung], deadline)
            except openai.APIStatusError as exc:
                if _format_rejected(exc) and rung < len(FORMATS) - 1:
                    rung += 1
                    continue
                raise self._status_error(exc) from None
            # Remembered only once a simpler format worked: a 400 for another reason (say, a prompt over
            # the model's context) must not downgrade every later request.
            self._format = rung
            return answer

    def _request(self, messages: list[dict[str, str]], schema: dict[str, Any], fmt: str, deadline: float) -> str:
        extra: dict[str, Any] = {}
        if fmt == "json_schema":
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "memories", "schema": schema, "strict": True},
            }
        elif fmt == "json_object":
            # The schema rides along: llama-cpp-python's server turns it into a grammar that constrains
            # the output (small local models then always answer in the shape); others ignore it.
            extra["response_format"] = {"type": "json_object", "schema": schema}
        try:
            with self._client.chat.completions.with_streaming_response.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=0,
                timeout=deadline - time.monotonic(),
                **extra,
            ) as response:
                body = self._read_body(response.iter_bytes(), deadline)
        except (openai.APITimeoutError, httpx2.TimeoutException):
            raise Transient(self._timed_out()) from None
        except (openai.APIConnectionError, httpx2.TransportError) as exc:
            raise _Transient(f"cannot reach the extractor at {self.base_url} ({exc.__cause__ or exc})") from None
        return answer_text(body.decode("utf-8", errors="replace"))

    def _read_body(self, chunks: Iterator[bytes], deadline: float) -> bytes:
        """The whole answer body; Unavailable when it is still arriving at the deadline."""
        body = bytearray()
        for chunk in chunks:
            body += chunk
            if time.monotonic() > deadline:
                raise Transient(self._timed_out())
        return bytes(body)

    def _timed_out(self) -> str:
        return (
            f"the extractor at {self.base_url} did not answer within {self.timeout:g} s (MEMLIKEHUMAN_TIMEOUT):"
            " raise the timeout or use a faster model"
        )

    def _status_error(self, exc: openai.APIStatusError) -> Exception:
        status = exc.status_code
        detail = f"the extractor at {self.base_url} answered HTTP {status} ({_short(exc.message)})"
        if status == 429 or status >= 500:
            return _Transient(detail, _retry_after(exc))
        if status in (401, 403):
            return Unavailable(f"{detail}: check MEMLIKEHUMAN_EXTRACTOR_API_KEY")
        if status == 404:
            return Unavailable(f"{detail}: check MEMLIKEHUMAN_EXTRACTOR_BASE_URL and MEMLIKEHUMAN_EXTRACTOR_MODEL")
        return Unavailable(f"{detail}: check the extractor configuration and the model's context size")


def _format_rejected(exc: openai.APIStatusError) -> bool:
    """Whether the server refused the response_format (llama-cpp-python's server says so with HTTP 500)."""
    if exc.status_code in FORMAT_REJECTED:
        return True
    return exc.status_code == 500 and "response_format" in str(exc.message)


def answer_text(body: str) -> str:
    """The assistant message of a chat completion body; the body itself when it is not one."""
    try:
        message = nesting.loads(body)["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return body
    if not isinstance(message, dict):
        return body
    content = message.get("content") or message.get("refusal") or ""
    return content if isinstance(content, str) else json.dumps(content)


def _retry_after(exc: openai.APIStatusError) -> float:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return max(RETRY_PAUSE, float(value)) if value else RETRY_PAUSE
    except ValueError:
        return MAX_RETRY_AFTER + 1  # an HTTP date: surely longer than we wait


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
