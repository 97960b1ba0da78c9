"""The archive's warm process (hosts/warm.py starts it): one open archive with its embedder loaded,
shared by the hooks and by every `memlikehuman serve` of the same settings.

- MCP: one session per `serve` that relays its host's stdio here (hosts/relay.py), on `<name>.sock`.
  A connection's first line names the session's scope defaults, `{"op": "mcp", "persona_id": ...,
  "project_id": ...}`; the answer `{"ok": true}` starts the session, whose JSON-RPC lines the same
  server as `serve` builds answers (build_server, on the shared engine). The peer must be this user
  (SO_PEERCRED); past MAX_SESSIONS at once the answer is `{"busy": true}` (that `serve` serves by itself);
  a first line later than HELLO_SECONDS ends the connection.
- The hooks' channel (hosts/channel.py): listening once the embedder is warm (app.hook_listener).
- The hook forker (hosts/zygote.py), its child: hook processes hand it their hooks (hosts/forward.py),
  so a hook costs its work and not its imports. It ends with this process (its stdin is our pipe).
- Vectors: what this process records wakes the indexer at once, what other processes record (hooks,
  the command line) within POLL_SECONDS (Engine.catch_up). Extraction: the worker, as `serve` runs it.
- It ends after `warm_idle` seconds with no session open, nothing new recorded and the indexer idle;
  when its lock file, its socket or its SQLite archive is removed; on SIGTERM or SIGINT. The MCP
  socket and the lock file go first, so a `serve` or hook arriving then starts the next process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from ..config import Settings
from ..engine import Engine
from ..errors import MemLikeHumanError
from ..hosts import channel
from . import build_server
from .app import MemoryMCPServer, Stopping, hook_listener

log = logging.getLogger("memlikehuman.warm")

POLL_SECONDS = 1.0  # how often the process looks for others' records and for its end
HELLO_SECONDS = 5.0
MAX_SESSIONS = 32
MAX_HELLO = 4096  # bytes of a connection's first line
MAX_LINE = 64 * 1024 * 1024  # bytes of one JSON-RPC line: a longer one ends its session
OK = b'{"ok":true}\n'
BUSY = b'{"busy":true}\n'
_ENDED = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.DelimiterNotFound,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)


class Place(NamedTuple):
    """Where the process's lock file and MCP socket are (hosts/warm.Place), and the lock file's open descriptor."""

    lock: Path
    socket: Path
    held: int


def run(settings: Settings, place: Place) -> NoReturn:
    """Serve until idle or stopped, then end the process (status 0; 1 when the archive cannot be opened)."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s memlikehuman warm %(process)d: %(message)s"
    )
    logging.getLogger("mcp").setLevel(logging.ERROR)  # a call the agent got wrong is its result
    # The sampling extractor needs a client's own connection: here nothing extracts by it.
    own = dataclasses.replace(settings, extractor="none") if settings.extractor == "sampling" else settings
    try:
        engine = Engine(own)
    except MemLikeHumanError as exc:
        log.error("cannot open the archive %s: %s", settings.archive_label, exc)
        os._exit(1)
    warm = Warm(own, place, engine)
    warm.stopping.install()
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(warm.serve)
    warm.close()
    logging.shutdown()
    os._exit(0)  # no interpreter teardown under a native thread still finishing (server/run.py)


class Warm:
    """The process's open parts: the engine, the hooks' listener, the MCP servers by scope, the activity."""

    def __init__(self, settings: Settings, place: Place, engine: Engine) -> None:
        self.settings, self.place, self.engine = settings, place, engine
        self.servers: dict[tuple[str, str], MemoryMCPServer] = {}
        self.sessions = 0
        self.last_used = time.monotonic()
        self.hooks: channel.Listener | None = None
        self._socket: tuple[int, int] | None = None  # the MCP socket file's identity once bound
        self._forker: int | None = None  # the writing end of the hook forker's stdin
        self._failing = False
        self.stopping = Stopping()
        self.stopping.add(self.close)
        engine.start_extraction()  # events left pending by an earlier run are extracted again

    async def serve(self) -> None:
        """Bind the MCP socket, start the hooks' listener, serve until `_watch` ends it."""
        sock, self._socket = channel.bind(self.place.socket)
        self._forker = self._start_forker()
        self.hooks = hook_listener(self.engine)  # warms the embedder in a thread, then listens
        listener = await SocketListener.from_socket(sock)
        async with listener, anyio.create_task_group() as group:
            group.start_soon(self._watch, group.cancel_scope)
            await listener.serve(self._connection, task_group=group)

    def close(self) -> None:
        """Remove the MCP socket and the lock file (if still ours), close the hooks' listener and the archive."""
        for path, identity in (
            (self.place.socket, self._socket),
            (self.place.lock, channel.identity(os.fstat(self.place.held))),
        ):
            with contextlib.suppress(OSError):
                if identity is not None and channel.identity(os.lstat(path)) == identity:
                    os.unlink(path)
        if self._forker is not None:
            os.close(self._forker)  # the forker sees its stdin end: it removes its socket and exits
            self._forker = None
        if self.hooks is not None:
            self.hooks.close()
        self.engine.close()

    def _start_forker(self) -> int | None:
        """Start the hook forker beside the MCP socket; None (logged) when it cannot start."""
        from ..hosts import forward, prompt_context

        path = self.place.socket.parent / forward.socket_name(prompt_context.target(self.settings))
        try:
            return forward.start_forker(path)[1]
        except OSError as error:
            log.warning("the hooks run in their own processes: the hook forker did not start: %s", error)
            return None

    async def _connection(self, stream: SocketStream) -> None:
        """One relay's connection: the peer checked, its first line read, then its MCP session."""
        async with stream:
            raw = stream.extra(SocketAttribute.raw_socket)
            if channel.peer_uid(raw) != os.getuid():
                return
            buffered = BufferedByteReceiveStream(stream)
            scope = None
            with anyio.move_on_after(HELLO_SECONDS), contextlib.suppress(*_ENDED):
                scope = _scope(await buffered.receive_until(b"\n", MAX_HELLO))
            if scope is None:
                return
            if self.sessions >= MAX_SESSIONS:
                with contextlib.suppress(*_ENDED):
                    await stream.send(BUSY)
                return
            self.sessions += 1
            try:
                await stream.send(OK)
                await self._server(scope).run_lines(_Lines(buffered), _Out(stream))
            except _ENDED:
                pass  # the relay went away: its host ended the session
            except Exception:  # a session's top level: log, keep the other sessions served
                log.exception("an MCP session failed")
            finally:
                self.sessions -= 1
                self.last_used = time.monotonic()

    def _server(self, scope: tuple[str, str]) -> MemoryMCPServer:
        """The MCP server of one scope default (built once, shared by its sessions)."""
        if scope not in self.servers:
            persona, project = scope
            settings = dataclasses.replace(self.settings, persona_id=persona, project_id=project)
            self.servers[scope] = build_server(settings, shared=self.engine)
        return self.servers[scope]

    async def _watch(self, scope: anyio.CancelScope) -> None:
        """Every POLL_SECONDS: embed what others recorded, and end the process once idle or orphaned."""
        while True:
            await anyio.sleep(POLL_SECONDS)
            if await anyio.to_thread.run_sync(self._caught_up):
                self.last_used = time.monotonic()
            if self._orphaned() or self._idle():
                scope.cancel()
                return

    def _caught_up(self) -> bool:
        """Engine.catch_up; a failure (a PostgreSQL server gone, say) is logged once per streak."""
        try:
            found = self.engine.catch_up()
        except MemLikeHumanError as exc:
            if not self._failing:
                log.warning("cannot read the archive: %s", exc)
            self._failing = True
            return False
        self._failing = False
        return found

    def _idle(self) -> bool:
        if self.sessions or time.monotonic() - self.last_used < self.settings.warm_idle:
            return False
        return self.engine.indexer.wait_idle(0)  # what was recorded has its vectors first

    def _orphaned(self) -> bool:
        """Whether the lock file or the MCP socket is no longer this process's, or the SQLite archive is gone."""
        try:
            if channel.identity(os.lstat(self.place.lock)) != channel.identity(os.fstat(self.place.held)):
                return True
            if channel.identity(os.lstat(self.place.socket)) != self._socket:
                return True
        except OSError:
            return True
        return self.settings.db_url is None and not self.settings.db_path.exists()


class _Lines:
    """The session's incoming JSON-RPC lines, as the SDK's stdio reader takes them (`async for line`)."""

    def __init__(self, buffered: BufferedByteReceiveStream) -> None:
        self._buffered = buffered

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._buffered.receive_until(b"\n", MAX_LINE)
        except _ENDED:
            raise StopAsyncIteration from None
        return line.decode("utf-8", "replace")


class _Out:
    """The session's outgoing lines, as the SDK's stdio writer gives them (`write`, `flush`)."""

    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream

    async def write(self, text: str) -> None:
        await self._stream.send(text.encode("utf-8"))

    async def flush(self) -> None:
        return None


def _scope(line: bytes) -> tuple[str, str] | None:
    """The scope defaults a relay's first line names, None when it is not such a line."""
    try:
        hello: Any = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(hello, dict) or hello.get("op") != "mcp":
        return None
    persona, project = hello.get("persona_id"), hello.get("project_id")
    if not all(isinstance(v, str) and 0 < len(v) <= 256 for v in (persona, project)):
        return None
    return str(persona), str(project)
