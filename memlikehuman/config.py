"""Settings: CLI flag > environment > config file > default.

The config file is TOML with the same keys as the environment variables, e.g.
``MEMLIKEHUMAN_EXTRACTOR = "openai"``. Its path is ``MEMLIKEHUMAN_CONFIG`` or
``<user config dir>/memlikehuman/config.toml``. This is the only module that reads the environment.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import files
from .errors import InvalidArgument

KEYS = (
    "MEMLIKEHUMAN_DB",
    "MEMLIKEHUMAN_EXTRACTOR",
    "MEMLIKEHUMAN_EXTRACTOR_MODEL",
    "MEMLIKEHUMAN_EXTRACTOR_BASE_URL",
    "MEMLIKEHUMAN_EXTRACTOR_API_KEY",
    "MEMLIKEHUMAN_EXTRACTOR_COMMAND",
    "MEMLIKEHUMAN_EXTRACTOR_ENV",
    "MEMLIKEHUMAN_EMBEDDER",
    "MEMLIKEHUMAN_EMBEDDER_MODEL",
    "MEMLIKEHUMAN_EMBEDDER_BASE_URL",
    "MEMLIKEHUMAN_EMBEDDER_API_KEY",
    "MEMLIKEHUMAN_TIMEOUT",
    "MEMLIKEHUMAN_EXTRACTION_WAIT",
    "MEMLIKEHUMAN_EXTRACTION_BATCH",
    "MEMLIKEHUMAN_FORGET_WAIT",
    "MEMLIKEHUMAN_SEMANTIC_WINDOW",
    "MEMLIKEHUMAN_GIST_AFTER_DAYS",
    "MEMLIKEHUMAN_TOKENIZER_JSON",
    "MEMLIKEHUMAN_PERSONA",
    "MEMLIKEHUMAN_PROJECT",
    "MEMLIKEHUMAN_HOOK_RECORD",
    "MEMLIKEHUMAN_INJECT_ITEMS",
    "MEMLIKEHUMAN_INJECT_CHARS",
    "MEMLIKEHUMAN_INJECT_COVERAGE",
    "MEMLIKEHUMAN_INJECT_STEP",
    "MEMLIKEHUMAN_INJECT_SEARCH",
    "MEMLIKEHUMAN_INJECT_WAIT",
    "MEMLIKEHUMAN_WARM_IDLE",
)
# where the prompt hook's recall runs: auto asks a running server (semantic), else searches in-process (fast)
INJECT_SEARCHES = ("auto", "fast")


@dataclass(frozen=True)
class Gate:
    """The prompt hook's relevance gate (retrieval/injection.py), set by MEMLIKEHUMAN_INJECT_*.

    Its defaults are written here only: the settings take them from here, the README's configuration
    table and docs/hosts.md are checked against them (tests/test_constants_documented.py), and
    docs/decisions/constants.md has the measurement behind each.
    """

    items: int = 5  # at most this many items are injected ...
    chars: int = 2000  # ... and this many characters of them
    coverage: float = 0.25  # an item passes by its words when it holds this share of the prompt's content words
    step: float = 0.02  # ... or by meaning, when it is the item nearest the prompt by this much over the next

    def with_values(self, given: Mapping[str, float]) -> Gate:
        """This gate with the values `given` (a hook's request) instead where present, each as its type."""
        return replace(self, **{k: type(getattr(self, k))(v) for k, v in given.items() if k in GATE_KEYS})


# The environment variable of each of the gate's values, and the least value it takes.
GATE_KEYS = {
    "items": ("MEMLIKEHUMAN_INJECT_ITEMS", 0),
    "chars": ("MEMLIKEHUMAN_INJECT_CHARS", 0),
    "coverage": ("MEMLIKEHUMAN_INJECT_COVERAGE", 0),
    "step": ("MEMLIKEHUMAN_INJECT_STEP", 0),
}


# none: events stay pending; openai: any OpenAI-compatible chat API; sampling: the connected MCP
# client's model (sampling/createMessage); command: a CLI run headless (the host's own, or any)
EXTRACTORS = ("none", "openai", "sampling", "command")


@dataclass(frozen=True)
class Settings:
    """Everything configurable, resolved once at start-up."""

    db_path: Path
    extractor: str = "none"
    extractor_model: str = "gpt-4o-mini"
    extractor_base_url: str | None = None
    extractor_api_key: str | None = None
    # MEMLIKEHUMAN_EXTRACTOR=command: a command line or a preset (providers/command.py), and the
    # environment it runs in (this process's, read here like every other setting)
    extractor_command: str | None = None
    extractor_env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    # names of further environment variables the command gets (MEMLIKEHUMAN_EXTRACTOR_ENV; a name
    # ending in "_" is a prefix): the command gets only an allow-list of the environment
    extractor_env_names: tuple[str, ...] = ()
    # set in the environment of an extraction command's run: hooks then record nothing
    extracting: bool = False
    embedder: str = "local"
    embedder_model: str | None = None
    embedder_base_url: str | None = None
    embedder_api_key: str | None = None
    timeout: float = 30.0
    # seconds memory_record waits for its own event's background extraction (0: answer at once,
    # pending); docs/extraction.md says why the default is 0
    extraction_wait: float = 0.0
    # at most this many short events of one session per model call (1: one call per event)
    extraction_batch: int = 1
    # seconds a forget waits for other connections' reads to end before it truncates SQLite's WAL
    # (archive/sqlite/scrub.py); when they outlast it the old page images stay until the next forget
    forget_wait: float = 5.0
    # semantic mode scans the vectors of this many most recent items (deep scans all)
    semantic_window: int = 20_000
    # detail=auto shows episodic memories older than this as overviews
    gist_after_days: float = 30.0
    tokenizer_json: Path | None = None
    # the scope a tool call or hook uses when it names none (`install` writes these; docs/hosts.md)
    persona_id: str = "default"
    project_id: str = "default"
    # what the hooks record at turn end besides prompts: a comma-separated list of assistant, tools,
    # subagents (None: assistant only); parsed by hosts/tools.py
    hook_record: str | None = None
    # the prompt hook's injection gate
    gate: Gate = Gate()
    inject_search: str = "auto"
    # seconds the prompt hook waits for a running server's answer before it searches in-process
    inject_wait: float = 0.5
    # seconds the archive's warm process (hosts/warm.py) stays without a client, a hook or a new record
    # before it exits; 0: no warm process (serve runs in its own process, hooks build no vectors)
    warm_idle: float = 300.0
    # a PostgreSQL archive (MEMLIKEHUMAN_DB=postgresql://...); db_path then only places side files
    # (the hooks' log and state, the UI's key) in the user data directory
    db_url: str | None = None

    def with_db(self, path: Path | str) -> Settings:
        """A copy with another archive (a file path or a PostgreSQL URL)."""
        url, local = _archive(path)
        return replace(self, db_path=local, db_url=url)

    @property
    def archive(self) -> Path | str:
        """What opens the archive: the PostgreSQL URL, else the file path."""
        return self.db_url or self.db_path

    @property
    def archive_label(self) -> str:
        """The archive for messages and logs (a URL's password left out)."""
        if self.db_url is None:
            return str(self.db_path)
        from .archive.postgres.pg import redacted

        return redacted(self.db_url)

    def archive_exists(self) -> bool:
        """Whether the archive is there: the file exists (a PostgreSQL archive always counts as there)."""
        return self.db_url is not None or self.db_path.exists()


def _archive(target: Path | str, env: Mapping[str, str] | None = None) -> tuple[str | None, Path]:
    """(PostgreSQL URL or None, local path): a URL keeps its side files beside the default archive."""
    from .archive.db import is_url  # apsw: every command and hook opens the archive anyway

    text = str(target)
    if is_url(text):
        import hashlib  # here: importing it costs a hook's start-up ~15 ms (OpenSSL)

        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        return text, default_db_path(env).with_name(f"postgres-{digest}")
    return None, Path(target).expanduser()


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """The archive in the platform's user data directory, as `env` (default: this process's environment) names it.

    On Linux computed here as platformdirs does (`$XDG_DATA_HOME` when it is an absolute path, else
    ~/.local/share), from `env` rather than this process's environment: a hook is handed its
    environment (hosts/hook.Surroundings). tests/test_hook_startup.py checks that both agree.
    """
    if sys.platform == "linux":
        return _xdg_dir(env, "XDG_DATA_HOME", ".local/share") / "memlikehuman" / "memory.sqlite3"
    import platformdirs  # imported where used: the hook path (a process per prompt) stays short

    return Path(platformdirs.user_data_dir("memlikehuman", appauthor=False)) / "memory.sqlite3"


def default_config_path(env: Mapping[str, str] | None = None) -> Path:
    """The platform's user config file, as `env` (default: this process's environment) names it.

    On Linux computed here as platformdirs does (`$XDG_CONFIG_HOME` when it is an absolute path, else
    ~/.config): importing platformdirs (it imports tempfile) is a tenth of a hook's start-up, and every
    hook reads the config file. tests/test_hook_startup.py checks that both agree.
    """
    if sys.platform == "linux":
        return _xdg_dir(env, "XDG_CONFIG_HOME", ".config") / "memlikehuman" / "config.toml"
    import platformdirs

    return Path(platformdirs.user_config_dir("memlikehuman")) / "config.toml"


def _xdg_dir(env: Mapping[str, str] | None, name: str, default: str) -> Path:
    """`$name` when it is an absolute path, else `default` in the home directory (as platformdirs reads both)."""
    env = os.environ if env is None else env
    given = env.get(name, "")
    return Path(given) if os.path.isabs(given) else files.home_dir(env) / default


def _config_file(env: Mapping[str, str]) -> dict[str, str]:
    path = Path(env.get("MEMLIKEHUMAN_CONFIG") or default_config_path(env))
    if not path.is_file():
        return {}
    import tomllib  # only when there is a file to read

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InvalidArgument(f"config file {path} cannot be read ({exc}): fix or remove it") from None
    return {key: str(value) for key, value in data.items() if key in KEYS}


def _number(values: Mapping[str, str], key: str, default: float, low: float) -> float:
    raw = values.get(key)
    if raw is None or raw == "":
        return default
    try:
        number = float(raw)
    except ValueError:
        raise InvalidArgument(f"{key}={raw!r} is not a number") from None
    if not math.isfinite(number):
        raise InvalidArgument(f"{key}={raw!r} is not a finite number: give a plain number such as {default}")
    if number < low:
        raise InvalidArgument(f"{key} must be at least {low}")
    return number


def load(db: str | Path | None = None, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Settings:
    """Resolve settings from the flag, the environment and the config file; `env` and `cwd` (the working
    directory `MEMLIKEHUMAN_PROJECT=auto` names) default to this process's."""
    env = os.environ if env is None else env
    values = {**_config_file(env), **{k: v for k, v in env.items() if k in KEYS}}
    extractor = values.get("MEMLIKEHUMAN_EXTRACTOR", "none").strip().lower() or "none"
    embedder = values.get("MEMLIKEHUMAN_EMBEDDER", "local").strip().lower() or "local"
    extracting = env.get("MEMLIKEHUMAN_EXTRACTING", "") not in ("", "0")
    if extractor not in EXTRACTORS:
        raise InvalidArgument(f"MEMLIKEHUMAN_EXTRACTOR must be one of {', '.join(map(repr, EXTRACTORS))}")
    if embedder not in ("none", "local", "openai"):
        raise InvalidArgument("MEMLIKEHUMAN_EMBEDDER must be 'none', 'local' or 'openai'")
    if db is not None and not str(db).strip():  # `--db "$UNSET"` in a script: never the user's own archive instead
        raise InvalidArgument("the archive (--db) is empty: give a file path or a postgresql:// URL")
    url, path = _archive(db or values.get("MEMLIKEHUMAN_DB") or default_db_path(env), env)
    tokenizer = values.get("MEMLIKEHUMAN_TOKENIZER_JSON")
    return Settings(
        db_path=path,
        db_url=url,
        # inside an extraction command's run (providers/command.py) nothing extracts: no run starts another
        extractor="none" if extracting else extractor,
        # for sampling only a hint, sent when given (a host's model is not OpenAI's default)
        extractor_model=values.get("MEMLIKEHUMAN_EXTRACTOR_MODEL")
        or ("" if extractor == "sampling" else "gpt-4o-mini"),
        extractor_base_url=values.get("MEMLIKEHUMAN_EXTRACTOR_BASE_URL") or None,
        extractor_api_key=values.get("MEMLIKEHUMAN_EXTRACTOR_API_KEY") or env.get("OPENAI_API_KEY") or None,
        extractor_command=values.get("MEMLIKEHUMAN_EXTRACTOR_COMMAND") or None,
        extractor_env=tuple(env.items()) if extractor == "command" else (),
        extractor_env_names=_names(values.get("MEMLIKEHUMAN_EXTRACTOR_ENV")),
        extracting=extracting,
        embedder=embedder,
        embedder_model=values.get("MEMLIKEHUMAN_EMBEDDER_MODEL") or None,
        embedder_base_url=values.get("MEMLIKEHUMAN_EMBEDDER_BASE_URL") or None,
        embedder_api_key=values.get("MEMLIKEHUMAN_EMBEDDER_API_KEY") or env.get("OPENAI_API_KEY") or None,
        timeout=_number(values, "MEMLIKEHUMAN_TIMEOUT", 30.0, 0.01),
        extraction_wait=_number(values, "MEMLIKEHUMAN_EXTRACTION_WAIT", 0.0, 0),
        extraction_batch=int(_number(values, "MEMLIKEHUMAN_EXTRACTION_BATCH", 1, 1)),
        forget_wait=_number(values, "MEMLIKEHUMAN_FORGET_WAIT", 5.0, 0),
        semantic_window=int(_number(values, "MEMLIKEHUMAN_SEMANTIC_WINDOW", 20_000, 1)),
        gist_after_days=_number(values, "MEMLIKEHUMAN_GIST_AFTER_DAYS", 30.0, 0),
        tokenizer_json=Path(tokenizer).expanduser() if tokenizer else None,
        persona_id=values.get("MEMLIKEHUMAN_PERSONA") or "default",
        project_id=_project(values.get("MEMLIKEHUMAN_PROJECT"), cwd, env),
        hook_record=values.get("MEMLIKEHUMAN_HOOK_RECORD"),
        gate=_gate(values),
        inject_search=_choice(values, "MEMLIKEHUMAN_INJECT_SEARCH", INJECT_SEARCHES),
        inject_wait=_number(values, "MEMLIKEHUMAN_INJECT_WAIT", 0.5, 0),
        warm_idle=_number(values, "MEMLIKEHUMAN_WARM_IDLE", 300.0, 0),
    )


def _gate(values: Mapping[str, str]) -> Gate:
    """The gate's values from MEMLIKEHUMAN_INJECT_*, each the default where it is not set."""
    default = Gate()
    return default.with_values(
        {name: _number(values, key, getattr(default, name), low) for name, (key, low) in GATE_KEYS.items()}
    )


def _names(raw: str | None) -> tuple[str, ...]:
    """A comma-separated list of names (environment variables), without blanks."""
    return tuple(name.strip() for name in (raw or "").split(",") if name.strip())


def _choice(values: Mapping[str, str], key: str, allowed: tuple[str, ...]) -> str:
    raw = (values.get(key) or allowed[0]).strip().lower()
    if raw not in allowed:
        raise InvalidArgument(f"{key}={raw!r} is not one of {', '.join(allowed)}")
    return raw


def _project(raw: str | None, cwd: Path | None, env: Mapping[str, str]) -> str:
    """MEMLIKEHUMAN_PROJECT: a project ID, or `auto` for the stable name of the working directory."""
    if raw is None or raw == "":
        return "default"
    if raw.strip().lower() == "auto":
        from .text.projects import project_name

        return project_name(Path.cwd() if cwd is None else cwd, files.home_dir(env))
    return raw
