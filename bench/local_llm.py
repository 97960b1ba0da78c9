"""The local model behind the extractor in tests and benchmarks: start it on 127.0.0.1, stop it after.

`scripts/install-local-llm` installs the runtime (llama-cpp-python's OpenAI-compatible server) and
the weights (Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M) outside the repository; ``installed()`` finds
them there, ``LocalModel`` runs the server for the length of a ``with`` block.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO

MODEL_ALIAS = "local"
START_SECONDS = 180.0  # loading takes 1-3 s; under load much longer


def home() -> Path:
    """Where scripts/install-local-llm installs (the same rule as the script)."""
    explicit = os.environ.get("MEMLIKEHUMAN_LLM_HOME")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "memlikehuman" / "local-llm"


def installed() -> bool:
    """Whether the runtime and the model are there."""
    return (home() / "venv" / "bin" / "python").exists() and (home() / "model.gguf").exists()


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM the model server when the bench or test that started it dies."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except OSError:
        pass  # not Linux: the server outlives a killed parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalModel:
    """``with LocalModel() as model:`` runs the server; ``model.base_url`` is its OpenAI endpoint."""

    def __init__(self, log_path: Path | None = None, n_ctx: int = 4096, threads: int = 2) -> None:
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        self.args = [
            str(home() / "venv" / "bin" / "python"),
            "-m",
            "llama_cpp.server",
            "--model",
            str(home() / "model.gguf"),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(n_ctx),
            "--n_threads",
            str(threads),
            "--n_threads_batch",
            str(threads),
            "--model_alias",
            MODEL_ALIAS,
        ]
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def __enter__(self) -> LocalModel:
        self._log = open(self.log_path, "ab") if self.log_path else None  # noqa: SIM115 (closed in __exit__)
        log = self._log or subprocess.DEVNULL
        self._proc = subprocess.Popen(
            self.args, stdout=log, stderr=log, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent
        )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"the local model server exited with {self._proc.returncode}: {self.args}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        self.__exit__(None, None, None)
        raise RuntimeError(f"the local model server did not answer within {START_SECONDS:g} s")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def env(self, timeout: float = 180.0) -> dict[str, str]:
        """The extractor settings for this server."""
        return {
            "MEMLIKEHUMAN_EXTRACTOR": "openai",
            "MEMLIKEHUMAN_EXTRACTOR_BASE_URL": self.base_url,
            "MEMLIKEHUMAN_EXTRACTOR_MODEL": MODEL_ALIAS,
            "MEMLIKEHUMAN_EXTRACTOR_API_KEY": "local",
            "MEMLIKEHUMAN_TIMEOUT": str(timeout),
        }
