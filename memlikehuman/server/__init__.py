"""The MCP edge. build_server(settings) returns the server; serve() runs it over stdio."""

from .app import build_server

__all__ = ["build_server"]
