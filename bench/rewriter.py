"""Alternatives from a real local model: a question -> up to 4 phrasings, cached per question.

The model is the one of ../shared/guides/local-llm.md (Qwen2.5-Coder-1.5B-Instruct Q4_K_M behind
llama-cpp-python's OpenAI-compatible server), installed outside the repository by
scripts/install-local-llm (branch issue-15) into $MEMLIKEHUMAN_LLM_HOME or ~/.cache/memlikehuman/local-llm.
This module starts that server on 127.0.0.1 for the length of a `with` block. Answers are cached in
a JSON file keyed by the question, so a rerun asks the model only about new questions.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

SYSTEM = (
    "You help a search engine find old chat messages. Given a question about a past conversation, write up"
    " to 4 short alternative search phrasings with the words the chat message itself would contain: name"
    " concrete instances of any category (dishes -> soup, pasta; health problems -> chest pain, flu), write a"
    " judgement as the behaviour that would show it, give one phrasing per person involved, and write dates"
    ' out. Do not answer the question. Reply with JSON only: {"phrasings": ["...", "..."]}'
)


def home() -> Path:
    explicit = os.environ.get("MEMLIKEHUMAN_LLM_HOME")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memlikehuman" / "local-llm"


def installed() -> bool:
    return (home() / "venv" / "bin" / "python").exists() and (home() / "model.gguf").exists()


class Rewriter:
    """``with Rewriter(cache) as rewrite: rewrite(question)`` -> up to 4 phrasings (cached)."""

    def __init__(self, cache: Path, timeout: float = 180.0) -> None:
        self.cache_path = cache
        self.cache: dict[str, list[str]] = json.loads(cache.read_text("utf-8")) if cache.exists() else {}
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.base_url = ""
        self.asked = 0

    def __enter__(self) -> Rewriter:
        return self

    def _start(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        self.base_url = f"http://127.0.0.1:{port}/v1"
        args = [
            str(home() / "venv" / "bin" / "python"),
            "-m",
            "llama_cpp.server",
            "--model",
            str(home() / "model.gguf"),
        ]
        args += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2"]
        args += ["--n_threads_batch", "2", "--model_alias", "local"]
        self.proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the local model server exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        raise RuntimeError("the local model server did not answer within 180 s")

    def __call__(self, question: str) -> list[str]:
        if question not in self.cache:
            if self.proc is None:
                self._start()
            self.cache[question] = self._ask(question)
            self.asked += 1
            if self.asked % 10 == 0:
                self.save()
        return self.cache[question]

    def _ask(self, question: str) -> list[str]:
        body = {
            "model": "local",
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
            "temperature": 0,
            "max_tokens": 160,
            "response_format": {"type": "json_object"},
        }
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as answer:
            content = json.loads(answer.read())["choices"][0]["message"]["content"]
        try:
            found = json.loads(content).get("phrasings", [])
        except (json.JSONDecodeError, AttributeError):
            return []  # counted as no alternatives: the weak model's failures are part of the measurement
        return [str(p)[:4000] for p in found if isinstance(p, str) and p.strip()][:4]

    def save(self) -> None:
        self.cache_path.write_text(json.dumps(self.cache, indent=1, ensure_ascii=False), "utf-8")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.save()
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
