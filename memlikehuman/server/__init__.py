"""The MCP edge. build_server(settings) returns the server; serve() runs it over stdio."""

from ..config import Settings
from ..engine import Engine
from . import persona, tools_corrections, tools_events, tools_recall, tools_sessions
from .app import MemoryMCPServer, make_server

__all__ = ["build_server"]


def build_server(settings: Settings, shared: Engine | None = None) -> MemoryMCPServer:
    """The MCP server for one archive, with every tool, the persona resource and the prompt; with
    `shared`, on that open archive (app.make_server)."""
    server, holder = make_server(settings, shared)
    for module in (tools_events, tools_recall, tools_corrections, tools_sessions, persona):
        module.register(server, holder)
    return server
