"""Under --quick: the MCP SDK's schema work for our tools, done once per test process (conftest.py).

The tests build hundreds of servers and connect hundreds of clients, and the SDK redoes the same
pydantic and JSON Schema work for each:
- a server describes each tool function (its pydantic argument model and JSON schema): ~70 ms of
  `build_server`'s ~80;
- a client compiles a tool's output-schema validator on its first call of the tool, which checks the
  schema against the JSON Schema metaschema: 70 ms for memory_read's, 58 for memory_recall's.
Both are functions of what they are made of alone, which is the key here: a tool function's code and
signature (annotations, defaults) with the decorator's arguments; a schema's value. Each server still
gets Tools of its own that call its own functions. The full suite leaves the SDK as it is.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable
from typing import Any

from mcp.client.session import ClientSession
from mcp.server.mcpserver.tools.base import Tool


def work_once() -> None:
    """Make Tool.from_function and ClientSession._output_schema_validator reuse their results in this process."""
    describe = Tool.from_function.__func__  # type: ignore[attr-defined]
    described: dict[tuple[object, ...], Tool] = {}

    def from_function(cls: type[Tool], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Tool:
        code = getattr(fn, "__code__", None)
        if code is None:
            return describe(cls, fn, *args, **kwargs)  # type: ignore[no-any-return]
        key = (code, str(inspect.signature(fn)), repr(args), repr(sorted(kwargs.items())))
        if key not in described:
            described[key] = describe(cls, fn, *args, **kwargs)
        tool = described[key]
        # The server changes its tools' parameters in place (server/sdk.py): each gets a copy.
        return tool.model_copy(update={"fn": fn, "parameters": copy.deepcopy(tool.parameters)})

    compile_validator = ClientSession._output_schema_validator
    compiled: dict[str, Any] = {}

    def output_schema_validator(self: ClientSession, name: str, output_schema: dict[str, Any]) -> Any:
        key = json.dumps(output_schema, sort_keys=True)
        if key not in compiled:  # a schema that fails to compile raises here every time, as before
            compiled[key] = compile_validator(self, name, output_schema)
        self._tool_output_validators[name] = compiled[key]
        return compiled[key]

    Tool.from_function = classmethod(from_function)  # type: ignore[method-assign, assignment]
    ClientSession._output_schema_validator = output_schema_validator  # type: ignore[method-assign]
