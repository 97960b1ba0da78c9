"""Host adapters: hooks that record and inject memory by themselves, installers, history importers.

Nothing here imports the MCP SDK or click: `memlikehuman hook` runs before every prompt, and its
import path is kept short (see entry.py and docs/hosts.md).
"""
