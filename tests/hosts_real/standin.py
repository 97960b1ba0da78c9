"""A stand-in model server on 127.0.0.1 for the real host CLIs: it logs every request and answers from a script.

Three dialects, one per host (docs: /work/shared/guides/real-hosts.md):
- Anthropic Messages (Claude Code): `POST /v1/messages` (SSE when `stream` is true),
  `POST /v1/messages/count_tokens`, and `HEAD /`;
- Gemini (Gemini CLI): `POST .../models/M:generateContent`, `:streamGenerateContent?alt=sse`, `:countTokens`;
- OpenAI Responses (Codex CLI): `POST /v1/responses` (SSE).

Every request becomes a `Request` in `StandIn.log` (and a line of `StandIn.jsonl`): path, headers
without keys, parsed JSON body. `Request` reads each dialect the same way: which of OUR tools
(memlikehuman's) it offers, the latest real user prompt, the hook context injected into it, the
results of our tool calls, the system text. A `Script` answers each request: auxiliary calls (no
tools at all: titles, summaries; or a JSON schema to follow: Gemini CLI's router) get plain text (or a
value of the schema); a conversation request gets the step of the first rule whose words are in the
latest prompt, chosen by how many of our tools were already called (with results) since that prompt:
a `Text` or a `Call` (arguments as given, or computed from the request). A conversation request that
offers none of our tools (MCP not connected yet) gets Claude Code's WaitForMcpServers call where
offered, else words: a model cannot call a tool it was not given.
"""

from __future__ import annotations

import html
import json
import re
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

SERVER = "memlikehuman"
TOOLS = (
    "memory_record",
    "memory_recall",
    "memory_read",
    "memory_correct",
    "memory_forget",
    "session_checkpoint",
    "session_resume",
)
CONTEXT_OPEN = "<memlikehuman-context>"
CONTEXT_CLOSE = "</memlikehuman-context>"
# Claude Code's (and every host's) auxiliary calls get this; a main-turn reply the script has no rule for, too.
AUX_TEXT = "OK."
_SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie"}
# Claude Code: the tool a model calls when MCP servers are still connecting (real-hosts.md).
WAIT_FOR_MCP = "WaitForMcpServers"
# Codex sends its environment and AGENTS.md as user messages; they are not the user's prompt.
_CODEX_NOT_PROMPT = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions")
# Codex's own developer messages besides the system prompt (the first one); the others are hook context.
_CODEX_OWN_DEVELOPER = ("<skills_instructions>", "<permissions", "<collaboration_mode>", "<apps_instructions>",
                        "<personality", "<plugins")  # fmt: skip


# -- what a script answers ----------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """A plain text answer that ends the turn."""

    text: str


@dataclass(frozen=True)
class Call:
    """A call of one of our tools (the bare name, e.g. memory_recall); arguments may be computed from the request."""

    tool: str
    arguments: dict[str, Any] | Callable[[Request], dict[str, Any]] = field(default_factory=dict)

    def resolve(self, request: Request) -> dict[str, Any]:
        return self.arguments(request) if callable(self.arguments) else dict(self.arguments)


@dataclass(frozen=True)
class HostCall:
    """A call of one of the host's own tools, by its exact name (e.g. Claude Code's WaitForMcpServers)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


Step = Text | Call | HostCall


@dataclass(frozen=True)
class Rule:
    """For a prompt holding `words` (case-insensitive; "" matches any): step i answers once i of our tool
    calls since that prompt have results; past the last step, the last one (so end with a Text)."""

    words: str
    steps: tuple[Step, ...]


@dataclass
class Script:
    rules: list[Rule] = field(default_factory=list)
    # A main request (one with the host's tools) that offers none of ours while the host offers its
    # wait-for-MCP tool: call it, as a model that needs memory would (Claude Code -p, real-hosts.md).
    wait_for_mcp: bool = True

    def answer(self, request: Request) -> Step:
        schema = request.response_schema()
        if schema is not None:  # an auxiliary call that wants JSON (Gemini CLI's model router)
            return Text(json.dumps(instance_of(schema)))
        if not request.tool_names():  # an auxiliary call (a title, a summary)
            return Text(AUX_TEXT)
        offered = bool(request.our_tools())
        if not offered and self.wait_for_mcp and WAIT_FOR_MCP in request.tool_names() and not request.waited_for_mcp():
            return HostCall(WAIT_FOR_MCP)
        prompt = (request.prompt() or "").lower()
        for rule in self.rules:
            if rule.words.lower() in prompt:
                step = rule.steps[min(len(request.results()), len(rule.steps) - 1)]
                # Without our tools a model cannot call them: it answers in words.
                return step if offered or isinstance(step, Text) else Text(AUX_TEXT)
        return Text(AUX_TEXT)


# -- what the hosts sent ------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolResult:
    """What one call of our tools returned, as the host handed it back to the model."""

    tool: str  # bare name, e.g. memory_recall
    arguments: dict[str, Any]
    text: str  # the result as the model reads it (Codex: "Wall time ...\nOutput:\n<json>")
    is_error: bool

    def json(self) -> dict[str, Any]:
        """The structured content the text carries (the first JSON object in it); {} when there is none."""
        return _first_json_object(self.text)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    answer: str = ""  # what the script answered (a short description), for failure messages
    at: float = field(default_factory=time.monotonic)  # when it arrived (bench/hooks_real.py: launch to first request)

    @property
    def dialect(self) -> str:
        if "/v1/messages" in self.path:
            return "anthropic"
        if "/v1/responses" in self.path:
            return "openai"
        if ":generateContent" in self.path or ":streamGenerateContent" in self.path or ":countTokens" in self.path:
            return "gemini"
        return "other"

    @property
    def is_model_call(self) -> bool:
        """A request for a model answer (not count_tokens / countTokens / HEAD)."""
        return (
            self.method == "POST"
            and isinstance(self.body, dict)
            and (
                self.path.split("?")[0].endswith(("/v1/messages", "/v1/responses"))
                or ":generateContent" in self.path
                or ":streamGenerateContent" in self.path
            )
        )

    def response_schema(self) -> dict[str, Any] | None:
        """The JSON schema the answer must follow (Gemini `generationConfig.responseJsonSchema`), if any."""
        config = self.body.get("generationConfig") if isinstance(self.body, dict) else None
        if not isinstance(config, dict):
            return None
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if schema is None and config.get("responseMimeType") == "application/json":
            return {}
        return schema if isinstance(schema, dict) else None

    # ---- tools offered ----

    def tool_names(self) -> list[str]:
        """Every tool name offered, as the host named it (Codex namespaces as NAMESPACE.TOOL)."""
        body = self.body if isinstance(self.body, dict) else {}
        names: list[str] = []
        if self.dialect == "gemini":
            for tool in body.get("tools") or []:
                names += [d.get("name", "") for d in tool.get("functionDeclarations") or []]
            return names
        for tool in body.get("tools") or []:
            if tool.get("type") == "namespace":
                names += [f"{tool.get('name')}.{t.get('name')}" for t in tool.get("tools") or []]
            else:
                names.append(str(tool.get("name", "")))
        return names

    def our_tools(self) -> list[str]:
        """The bare names of our tools this request offers (empty: an auxiliary call, or MCP not connected)."""
        prefix = {"anthropic": f"mcp__{SERVER}__", "gemini": f"mcp_{SERVER}_", "openai": f"mcp__{SERVER}."}
        start = prefix.get(self.dialect)
        if start is None:
            return []
        return [name[len(start) :] for name in self.tool_names() if name.startswith(start)]

    def tool_description(self, tool: str) -> str:
        """The description our tool (bare name) or, for Codex, our namespace ("") is offered with."""
        body = self.body if isinstance(self.body, dict) else {}
        if self.dialect == "gemini":
            for group in body.get("tools") or []:
                for d in group.get("functionDeclarations") or []:
                    if d.get("name") == f"mcp_{SERVER}_{tool}":
                        return str(d.get("description", ""))
            return ""
        for entry in body.get("tools") or []:
            if self.dialect == "openai" and entry.get("name") == f"mcp__{SERVER}":
                if not tool:
                    return str(entry.get("description", ""))
                for inner in entry.get("tools") or []:
                    if inner.get("name") == tool:
                        return str(inner.get("description", ""))
            elif entry.get("name") == f"mcp__{SERVER}__{tool}":
                return str(entry.get("description", ""))
        return ""

    # ---- the conversation ----

    def system_text(self) -> str:
        """The system prompt: Anthropic `system`, Gemini `systemInstruction`, Codex's first developer message."""
        body = self.body if isinstance(self.body, dict) else {}
        if self.dialect == "anthropic":
            return _texts(body.get("system"))
        if self.dialect == "gemini":
            return "\n".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts") or [])
        if self.dialect == "openai":
            developer = [m for m in _codex_items(body) if m.get("type") == "message" and m.get("role") == "developer"]
            return "\n".join(
                [str(body.get("instructions") or ""), *([_texts(developer[0]["content"])] if developer else [])]
            )
        return ""

    def messages(self) -> list[tuple[str, str]]:
        """(role, text) of every conversation message, tool calls and results left out."""
        body = self.body if isinstance(self.body, dict) else {}
        out: list[tuple[str, str]] = []
        if self.dialect == "anthropic":
            for m in body.get("messages") or []:
                out += [(m["role"], t) for t in _anthropic_texts(m.get("content"))]
        elif self.dialect == "gemini":
            for c in body.get("contents") or []:
                out += [(c.get("role", ""), p["text"]) for p in c.get("parts") or [] if "text" in p]
        elif self.dialect == "openai":
            for m in _codex_items(body):
                if m.get("type") == "message":
                    out += [(m.get("role", ""), _texts(m.get("content")))]
        return out

    def prompt(self) -> str | None:
        """The latest real user prompt: not hook context, not a tool result, not the host's own setup text."""
        for role, text in reversed(self.messages()):
            if role == "user" and _is_prompt(self.dialect, text):
                return _prompt_part(self.dialect, text)
        return None

    def hook_context(self) -> list[str]:
        """Every hook context the host put into the conversation, through its own channel, unescaped:
        Claude Code "EVENT hook additional context: ..." segments of its system-role messages, Gemini
        `<hook_context>` parts (HTML-escaped by the CLI), Codex developer messages of its hooks."""
        return [text for _, text in self._hook_contexts()]

    def prompt_hook_context(self) -> list[str]:
        """The hook context of the latest prompt (the prompt hook's: UserPromptSubmit / BeforeAgent), oldest first."""
        return [text for prompt_hook, text in self._hook_contexts() if prompt_hook]

    def _hook_contexts(self) -> list[tuple[bool, str]]:
        """(from the latest prompt's hook?, text) of each hook context."""
        body = self.body if isinstance(self.body, dict) else {}
        found: list[tuple[bool, str]] = []
        if self.dialect == "anthropic":
            for m in body.get("messages") or []:
                for text in _anthropic_texts(m.get("content")):
                    if m.get("role") == "system" or text.lstrip().startswith("<system-reminder>"):
                        found += [(event == "UserPromptSubmit", segment) for event, segment in _claude_segments(text)]
            return found
        if self.dialect == "gemini":
            # A prompt's content: its text part (earlier hook context in front of it), then a part per
            # BeforeAgent context; the session's first prompt carries SessionStart's context in front.
            latest = None
            for i, c in enumerate(body.get("contents") or []):
                for j, p in enumerate(c.get("parts") or []):
                    if c.get("role") == "user" and "text" in p and _is_prompt("gemini", p["text"]):
                        latest = (i, j)
            for i, c in enumerate(body.get("contents") or []):
                for j, p in enumerate(c.get("parts") or []):
                    if c.get("role") != "user" or "text" not in p:
                        continue
                    after_prompt = latest is not None and i == latest[0] and j > latest[1]
                    for block in re.findall(r"<hook_context>(.*?)</hook_context>", p["text"], re.DOTALL):
                        found.append((after_prompt, html.unescape(block)))
            return found
        if self.dialect == "openai":
            items = [m for m in _codex_items(body) if m.get("type") == "message"]
            last_prompt = max(
                (
                    i
                    for i, m in enumerate(items)
                    if m.get("role") == "user" and _is_prompt("openai", _texts(m.get("content")))
                ),
                default=len(items),
            )
            for i, m in enumerate(items):
                text = _texts(m.get("content"))
                if i == 0 or m.get("role") != "developer" or text.lstrip().startswith(_CODEX_OWN_DEVELOPER):
                    continue
                found.append((i > last_prompt, text))
            return found
        return []

    def server_instructions(self) -> str:
        """Our MCP server's instructions as the host shows them to the model ("" when it does not)."""
        if self.dialect == "anthropic":
            texts = [self.system_text()] + [t for role, t in self.messages() if role == "system"]
            for text in texts:
                match = re.search(
                    r"# MCP Server Instructions.*?\n## " + SERVER + r"\n(.*?)(?=\n## |\n# |\Z)", text, re.DOTALL
                )
                if match:
                    return match.group(1).strip()
            return ""
        if self.dialect == "gemini":
            texts = [self.system_text()] + [t for _, t in self.messages()]
            pattern = (
                r"instructions provided by the tool server '" + SERVER + r"':\s*---\[start of server instructions\]---"
                r"(.*?)---\[end of server instructions\]---"
            )
            for text in texts:
                match = re.search(pattern, text, re.DOTALL)
                if match:
                    return match.group(1).strip()
            return ""
        if self.dialect == "openai":
            return self.tool_description("")
        return ""

    def injected(self) -> list[str]:
        """Every block of ours (`<memlikehuman-context>` ... `</memlikehuman-context>`) the hook context holds."""
        blocks: list[str] = []
        for text in self.hook_context():
            blocks += re.findall(
                re.escape(CONTEXT_OPEN) + r".*?(?:" + re.escape(CONTEXT_CLOSE) + r"|\Z)", text, re.DOTALL
            )
        return blocks

    def injected_text(self) -> str:
        return "\n".join(self.injected())

    def results(self) -> list[ToolResult]:
        """The results of our tool calls since the latest prompt, oldest first."""
        return self._results(since_prompt=True)

    def all_results(self) -> list[ToolResult]:
        return self._results(since_prompt=False)

    def waited_for_mcp(self) -> bool:
        """Whether the conversation called Claude Code's WaitForMcpServers since the latest prompt."""
        body = self.body if isinstance(self.body, dict) else {}
        messages = body.get("messages") or []
        return any(
            b.get("type") == "tool_use" and b.get("name") == WAIT_FOR_MCP
            for m in messages[_anthropic_prompt_index(messages) :]
            if isinstance(m.get("content"), list)
            for b in m["content"]
        )

    def _results(self, since_prompt: bool) -> list[ToolResult]:
        body = self.body if isinstance(self.body, dict) else {}
        if self.dialect == "anthropic":
            return _anthropic_results(body.get("messages") or [], since_prompt)
        if self.dialect == "gemini":
            return _gemini_results(body.get("contents") or [], since_prompt)
        if self.dialect == "openai":
            return _codex_results(_codex_items(body), since_prompt)
        return []

    def summary(self) -> dict[str, Any]:
        """A short view for failure messages."""
        return {
            "path": self.path,
            "prompt": self.prompt(),
            "our_tools": self.our_tools(),
            "results": [(r.tool, r.is_error, r.text[:300]) for r in self.results()],
            "hook_context": [t[:300] for t in self.hook_context()],
            "answer": self.answer,
        }


def instance_of(schema: dict[str, Any]) -> Any:
    """A small value that follows a JSON schema (OpenAPI-style upper-case types too): every property filled."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if kind == "object":
        return {name: instance_of(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return int(schema.get("minimum", 1))
    if kind == "boolean":
        return False
    return "stand-in"


def _texts(content: Any) -> str:
    """The text of a str, or of a list of blocks/parts with `text`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b)
    return ""


def _anthropic_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [str(b.get("text", "")) for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def _claude_segments(text: str) -> list[tuple[str, str]]:
    """The "EVENT hook additional context: TEXT" segments of one Claude Code message, as (EVENT, TEXT)."""
    heads = list(re.finditer(r"(?:^|\n)(\w+) hook additional context: ", text))
    out = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        segment = text[head.end() : end]
        close = segment.find(CONTEXT_CLOSE)
        # Claude Code appends its own attachments after a hook's text: ours ends with our closing marker.
        out.append((head.group(1), segment[: close + len(CONTEXT_CLOSE)] if close >= 0 else segment.strip()))
    return out


def _is_prompt(dialect: str, text: str) -> bool:
    stripped = text.strip()
    if not stripped:
        return False
    if dialect == "anthropic":
        return not stripped.startswith("<system-reminder>")
    if dialect == "gemini":
        return bool(_prompt_part(dialect, text)) and not stripped.startswith("<session_context>")
    if dialect == "openai":
        return not stripped.startswith(_CODEX_NOT_PROMPT)
    return True


def _prompt_part(dialect: str, text: str) -> str:
    """The prompt without the hook context a host put into the same text."""
    if dialect == "gemini":
        text = re.sub(r"<hook_context>.*?</hook_context>", "", text, flags=re.DOTALL)
    return text.strip()


def _is_ours(dialect: str, name: str) -> str | None:
    prefix = {"anthropic": f"mcp__{SERVER}__", "gemini": f"mcp_{SERVER}_"}.get(dialect, "")
    return name[len(prefix) :] if prefix and name.startswith(prefix) else None


def _anthropic_prompt_index(messages: list[Any]) -> int:
    """The index of the message holding the latest real prompt (0 when there is none)."""
    start = 0
    for i, m in enumerate(messages):
        if m.get("role") == "user" and any(_is_prompt("anthropic", t) for t in _anthropic_texts(m.get("content"))):
            start = i
    return start


def _anthropic_results(messages: list[Any], since_prompt: bool) -> list[ToolResult]:
    start = _anthropic_prompt_index(messages) if since_prompt else 0
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for m in messages[start:]:
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for b in content:
            if b.get("type") == "tool_use":
                tool = _is_ours("anthropic", str(b.get("name", "")))
                if tool:
                    calls[b.get("id")] = (tool, b.get("input") or {})
            elif b.get("type") == "tool_result" and b.get("tool_use_id") in calls:
                tool, args = calls[b["tool_use_id"]]
                out.append(ToolResult(tool, args, _texts(b.get("content")), bool(b.get("is_error"))))
    return out


def _gemini_results(contents: list[Any], since_prompt: bool) -> list[ToolResult]:
    start = 0
    if since_prompt:
        for i, c in enumerate(contents):
            if c.get("role") == "user" and any(
                "text" in p and _is_prompt("gemini", p["text"]) for p in c.get("parts") or []
            ):
                start = i
    pending: list[tuple[str, dict[str, Any]]] = []
    out = []
    for c in contents[start:]:
        for p in c.get("parts") or []:
            if "functionCall" in p:
                tool = _is_ours("gemini", str(p["functionCall"].get("name", "")))
                if tool:
                    pending.append((tool, p["functionCall"].get("args") or {}))
            elif "functionResponse" in p:
                tool = _is_ours("gemini", str(p["functionResponse"].get("name", "")))
                if not tool:
                    continue
                args = next((a for t, a in pending if t == tool), {})
                pending = [(t, a) for t, a in pending if a is not args]
                response = p["functionResponse"].get("response") or {}
                output = response.get("output") if isinstance(response, dict) else None
                text = output if isinstance(output, str) else json.dumps(response, ensure_ascii=False)
                error = "error" in response or _gemini_error(response)
                out.append(ToolResult(tool, args, text, error))
    return out


def _gemini_error(response: dict[str, Any]) -> bool:
    content = response.get("content")
    return isinstance(content, list) and any(
        isinstance(c, dict) and str(c.get("text", "")).startswith("Error") for c in content
    )


def _codex_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _codex_results(items: list[dict[str, Any]], since_prompt: bool) -> list[ToolResult]:
    start = 0
    if since_prompt:
        for i, m in enumerate(items):
            if (
                m.get("type") == "message"
                and m.get("role") == "user"
                and _is_prompt("openai", _texts(m.get("content")))
            ):
                start = i
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for m in items[start:]:
        if m.get("type") == "function_call" and m.get("namespace") == f"mcp__{SERVER}":
            try:
                args = json.loads(m.get("arguments") or "{}")
            except ValueError:
                args = {}
            calls[str(m.get("call_id"))] = (str(m.get("name")), args)
        elif m.get("type") == "function_call_output" and str(m.get("call_id")) in calls:
            tool, args = calls[str(m.get("call_id"))]
            output = m.get("output")
            text = output if isinstance(output, str) else _texts(output) or json.dumps(output)
            out.append(ToolResult(tool, args, text, _codex_error(text)))
    return out


def _codex_error(text: str) -> bool:
    """Codex hands a result back as "Wall time: ...\nOutput:\n<structured content JSON>"; a failed call
    (an MCP error result, or Codex's own refusal such as an approval) has plain text after "Output:"."""
    output = text.split("Output:", 1)[-1].strip()
    return not output.startswith("{") or output.startswith("Error executing tool")


def _first_json_object(text: str) -> dict[str, Any]:
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {}


# -- the server ---------------------------------------------------------------------------------


class StandIn:
    """The model server: `with StandIn(script, log_file) as model: ... model.url ... model.log`."""

    def __init__(self, script: Script, jsonl: Path) -> None:
        self.script = script
        self.jsonl = jsonl
        self.log: list[Request] = []
        self.errors: list[str] = []  # failures of the script itself (a computed argument that raised)
        self._lock = threading.Lock()
        self._counter = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="standin", daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> StandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive():
            self._httpd.shutdown()
        self._httpd.server_close()

    def mark(self) -> int:
        """The log's length now: `since(mark)` is what came after."""
        with self._lock:
            return len(self.log)

    def since(self, mark: int) -> list[Request]:
        with self._lock:
            return list(self.log[mark:])

    def next_id(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def record(self, request: Request) -> None:
        with self._lock:
            self.log.append(request)
            with self.jsonl.open("a", encoding="utf-8") as out:
                entry = {"method": request.method, "path": request.path, "headers": request.headers}
                out.write(json.dumps({**entry, "body": request.body}, ensure_ascii=False) + "\n")

    def step_for(self, request: Request) -> Step:
        try:
            step = self.script.answer(request)
            if isinstance(step, Call):
                return Call(step.tool, step.resolve(request))
            return step
        except Exception as exc:  # a script bug: the test must see it, the host gets a plain answer
            self.errors.append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            return Text(f"(stand-in script error: {exc})")


def main_requests(log: list[Request]) -> list[Request]:
    """The requests of the conversation itself: model calls that offer tools (auxiliary calls offer none)."""
    return [r for r in log if r.is_model_call and r.tool_names()]


# -- answering each dialect ----------------------------------------------------------------------


def _handler(model: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            return

        def do_HEAD(self) -> None:
            model.record(Request("HEAD", self.path, _headers(self), None))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            model.record(Request("GET", self.path, _headers(self), None))
            self._json(200, {})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            request = Request("POST", self.path, _headers(self), body)
            model.record(request)
            path = urlsplit(self.path).path
            if path.endswith("/count_tokens") or path.endswith(":countTokens"):
                tokens = max(1, len(raw) // 4)
                self._json(200, {"input_tokens": tokens} if "/v1/" in path else {"totalTokens": tokens})
                return
            if not request.is_model_call:
                self._json(404, {"error": {"message": f"the stand-in does not serve {path}"}})
                return
            step = model.step_for(request)
            request.answer = _describe(step)
            n = model.next_id()
            if request.dialect == "anthropic":
                self._anthropic(body, step, n)
            elif request.dialect == "gemini":
                self._gemini(step, n, stream=":streamGenerateContent" in path)
            else:
                self._responses(step, n)

        # ---- transport ----

        def _json(self, status: int, value: Any) -> None:
            data = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, events: list[tuple[str | None, dict[str, Any]]]) -> None:
            chunks = []
            for name, data in events:
                head = f"event: {name}\n" if name else ""
                chunks.append(f"{head}data: {json.dumps(data)}\n\n")
            payload = "".join(chunks).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        # ---- Anthropic Messages ----

        def _anthropic(self, body: dict[str, Any], step: Step, n: int) -> None:
            usage = {"input_tokens": 10, "output_tokens": 5}
            if isinstance(step, Text):
                block: dict[str, Any] = {"type": "text", "text": step.text}
                stop = "end_turn"
            else:
                name = f"mcp__{SERVER}__{step.tool}" if isinstance(step, Call) else step.name
                block = {"type": "tool_use", "id": f"toolu_standin_{n}", "name": name, "input": step.arguments}
                stop = "tool_use"
            message = {
                "id": f"msg_standin_{n}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "stand-in"),
                "content": [block],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            }
            if not body.get("stream"):
                self._json(200, message)
                return
            start: dict[str, Any]
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            self._sse(
                [
                    (
                        "message_start",
                        {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}},
                    ),
                    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": usage,
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ]
            )

        # ---- Gemini ----

        def _gemini(self, step: Step, n: int, stream: bool) -> None:
            if isinstance(step, Text):
                part: dict[str, Any] = {"text": step.text}
            else:
                name = f"mcp_{SERVER}_{step.tool}" if isinstance(step, Call) else step.name
                part = {"functionCall": {"name": name, "args": step.arguments}}
            reply = {
                "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                "modelVersion": "stand-in",
                "responseId": f"standin-{n}",
            }
            if stream:
                self._sse([(None, reply)])
            else:
                self._json(200, reply)

        # ---- OpenAI Responses ----

        def _responses(self, step: Step, n: int) -> None:
            rid = f"resp_standin_{n}"
            if isinstance(step, Text):
                item: dict[str, Any] = {
                    "type": "message",
                    "id": f"msg_standin_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": step.text, "annotations": []}],
                }
                added = {**item, "content": [], "status": "in_progress"}
                middle = [
                    (
                        "response.output_text.delta",
                        {
                            "type": "response.output_text.delta",
                            "item_id": item["id"],
                            "output_index": 0,
                            "content_index": 0,
                            "delta": step.text,
                        },
                    )
                ]
            else:
                item = {
                    "type": "function_call",
                    "id": f"fc_standin_{n}",
                    "call_id": f"call_standin_{n}",
                    "name": step.tool if isinstance(step, Call) else step.name,
                    "arguments": json.dumps(step.arguments),
                    "status": "completed",
                }
                if isinstance(step, Call):
                    item["namespace"] = f"mcp__{SERVER}"
                added = item
                middle = []
            usage = {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 5,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 15,
            }
            self._sse(
                [
                    (
                        "response.created",
                        {"type": "response.created", "response": {"id": rid, "status": "in_progress"}},
                    ),
                    (
                        "response.output_item.added",
                        {"type": "response.output_item.added", "output_index": 0, "item": added},
                    ),
                    *middle,
                    (
                        "response.output_item.done",
                        {"type": "response.output_item.done", "output_index": 0, "item": item},
                    ),
                    (
                        "response.completed",
                        {"type": "response.completed", "response": {"id": rid, "status": "completed", "usage": usage}},
                    ),
                ]
            )

    return Handler


def _headers(handler: BaseHTTPRequestHandler) -> dict[str, str]:
    return {k: v for k, v in handler.headers.items() if k.lower() not in _SECRET_HEADERS}


def _describe(step: Step) -> str:
    if isinstance(step, Text):
        return f"text {step.text[:80]!r}"
    if isinstance(step, Call):
        return f"call {step.tool} {json.dumps(step.arguments)[:300]}"
    return f"host call {step.name}"


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The logged requests of a JSONL file (for a look after a run)."""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)
