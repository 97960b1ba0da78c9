"""Health checks for `memlikehuman doctor`: configuration, archive, indexes and providers.

Each check reports ``ok``, ``warn`` (works, but something deserves attention) or ``fail`` (a
problem to fix), with a sentence saying what was found and what to do. The checks change nothing: the
archive is not created or migrated (the FTS5 integrity check needs an empty write transaction, so an
archive locked by another process's long write, such as an import, waits up to 30 s and then fails
the archive check), and providers get one cheap request each, bounded by the
configured timeout (``GET /models`` for OpenAI-compatible APIs, one short text for the local embedder).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

import apsw

from .. import config
from ..archive import fulltext, schema, tombstones
from ..archive.backend import backend_of
from ..archive.connection import Connection
from ..archive.db import open_database
from ..errors import MemLikeHumanError
from ..providers.embedders import build_embedder
from ..records import Check
from . import stats


def diagnose(
    db: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    more: Callable[[config.Settings], list[Check]] | None = None,
) -> list[Check]:
    """Run every check, then `more` (the edge's: wired hosts); a configuration that cannot be loaded is
    itself the (only) failed check."""
    try:
        settings = config.load(db, env)
    except MemLikeHumanError as exc:
        return [Check("configuration", "fail", exc.message)]
    checks = [_configuration(settings)]
    checks += _archive(settings)
    checks.append(_extractor(settings))
    checks.append(_embedder(settings))
    if more is not None:
        checks += more(settings)
    return checks


def _configuration(settings: config.Settings) -> Check:
    summary = (
        f"archive {settings.archive_label}; extractor {settings.extractor}; embedder {settings.embedder};"
        f" timeout {settings.timeout:g} s"
    )
    if settings.tokenizer_json is not None and not settings.tokenizer_json.is_file():
        return Check("configuration", "fail", f"MEMLIKEHUMAN_TOKENIZER_JSON={settings.tokenizer_json} does not exist")
    return Check("configuration", "ok", summary)


def _archive(settings: config.Settings) -> list[Check]:
    if not settings.archive_exists():
        return [Check("archive", "warn", f"no archive at {settings.archive_label} yet: it is created on first use")]
    try:
        db = open_database(settings.archive)
    except MemLikeHumanError as exc:
        return [Check("archive", "fail", exc.message)]
    try:
        schema = _schema(db)
        checks = [schema, _integrity(db)]
        if schema.status == "ok":
            checks.append(_fulltext(db))
            checks.append(_forgotten(db))
            checks.append(_vectors(db, settings))
            if (engine := backend_of(db).vector_check(db)) is not None:  # PostgreSQL: pgvector or not
                checks.append(engine)
        return checks
    except apsw.Error as exc:
        return [Check("archive", "fail", f"cannot read {settings.archive_label} ({exc}): restore it from a backup")]
    except MemLikeHumanError as exc:  # locked by another process's long write, such as an import
        return [Check("archive", "fail", exc.message)]
    finally:
        db.close()


def _schema(db: Connection) -> Check:
    version, latest = schema.schema_version(db), schema.latest(db)
    if version == latest:
        return Check("schema", "ok", f"version {version} (the latest)")
    if version < latest:
        return Check(
            "schema",
            "warn",
            f"version {version} of {latest}: the missing migrations are applied when `serve` or another command"
            " opens the archive",
        )
    return Check("schema", "fail", f"version {version}, newer than this memlikehuman ({latest}): upgrade memlikehuman")


def _integrity(db: Connection) -> Check:
    return backend_of(db).integrity(db)


def _fulltext(db: Connection) -> Check:
    problems = []
    for table in fulltext.ALL_TABLES:
        try:
            fulltext.integrity_check(db, table)
        except apsw.Error as exc:
            problems.append(f"{table} is damaged ({exc})")
    if problems:
        return Check("full-text index", "fail", "; ".join(problems) + ": rebuild it with `memlikehuman reindex`")
    events, memories = fulltext.count_missing(db)
    orphans = fulltext.orphans(db)
    if events or memories or orphans:
        return Check(
            "full-text index",
            "fail",
            f"{events} events and {memories} memories have no full-text row, {orphans} rows belong to nothing:"
            " run `memlikehuman reindex --missing` (or `reindex` to rebuild it all)",
        )
    return Check("full-text index", "ok", "consistent with the events and memories")


def _forgotten(db: Connection) -> Check:
    """Copies of forgotten records the files still hold, proven by their IDs' tombstones (tombstones.py)."""
    with db.read() as conn:
        is_forgotten = tombstones.matcher(conn)
        buried = tombstones.count(db)
    if not buried:
        return Check("forgotten", "ok", "no record was forgotten (or `tombstones --drop` dropped their tombstones)")
    found = backend_of(db).leftovers(db, is_forgotten)
    if found is None:
        return Check("forgotten", "ok", f"{buried:,} tombstones; the database server's own files are not read here")
    main, wal = found
    if not main and not wal:
        return Check("forgotten", "ok", f"{buried:,} tombstones; no copy of a forgotten record in the file or its WAL")
    fixes = []
    if wal:
        fixes.append("the next forget, or the last connection closing, truncates the -wal")
    if main:
        fixes.append("with no server or hook running, `sqlite3 ARCHIVE 'VACUUM'` rewrites the file without them")
    return Check(
        "forgotten",
        "warn",
        f"{main:,} copies of forgotten records in the archive file and {wal:,} in its -wal: {'; '.join(fixes)}",
    )


def _vectors(db: Connection, settings: config.Settings) -> Check:
    if settings.embedder == "none":
        return Check("vectors", "ok", "no embedder configured: recall uses full-text search only")
    try:
        embedder = build_embedder(settings)
    except MemLikeHumanError as exc:
        return Check("vectors", "fail", exc.message)
    model = embedder.model_id if embedder else None
    missing = stats.collect(db, vector_model=model).totals().vectors_missing or 0
    if missing:
        return Check(
            "vectors",
            "warn",
            f"{missing} events and memories have no {model} vector yet: a running server adds them;"
            " `memlikehuman reindex --missing` does it now",
        )
    return Check("vectors", "ok", f"every event and memory has a {model} vector")


def _extractor(settings: config.Settings) -> Check:
    if settings.extractor == "none":
        return Check(
            "extractor",
            "ok",
            "none configured: events stay pending (MEMLIKEHUMAN_EXTRACTOR=sampling, command or openai enables it;"
            " agents may give memory_record its memories)",
        )
    if settings.extractor == "sampling":
        from ..lifecycle import sampling_status

        status = sampling_status.read(settings.db_path)
        advice = sampling_status.advice(status)
        if advice is not None:
            return Check("extractor", "warn", advice)
        assert status is not None
        return Check("extractor", "ok", f"sampling through {status.get('client')} (last seen {status.get('at')})")
    if settings.extractor == "command":
        return _command(settings)
    return probe_openai(
        "extractor",
        settings.extractor_base_url,
        settings.extractor_api_key,
        settings.extractor_model,
        settings.timeout,
        "MEMLIKEHUMAN_EXTRACTOR",
    )


def _command(settings: config.Settings) -> Check:
    """The extraction command exists and can be run (it is not run: a host CLI's run costs the user)."""
    import shutil

    from ..providers.command import parse_command

    try:
        preset, label = parse_command(settings.extractor_command)
    except MemLikeHumanError as exc:
        return Check("extractor", "fail", exc.message)
    argv = preset.argv
    path = shutil.which(argv[0], path=dict(settings.extractor_env).get("PATH"))
    if path is None:
        return Check(
            "extractor",
            "fail",
            f"{argv[0]!r} ({label}) is not on PATH: install it or fix MEMLIKEHUMAN_EXTRACTOR_COMMAND",
        )
    return Check("extractor", "ok", f"command {label}: {path} (not run: each run costs a model call)")


def _embedder(settings: config.Settings) -> Check:
    if settings.embedder == "none":
        return Check("embedder", "ok", "none configured: recall uses full-text search only")
    if settings.embedder == "openai":
        return probe_openai(
            "embedder",
            settings.embedder_base_url,
            settings.embedder_api_key,
            settings.embedder_model,
            settings.timeout,
            "MEMLIKEHUMAN_EMBEDDER",
        )
    started = time.monotonic()
    try:
        embedder = build_embedder(settings)
        assert embedder is not None
        dim = embedder.embed(["memlikehuman doctor"], "query").shape[1]
    except MemLikeHumanError as exc:
        return Check("embedder", "fail", exc.message)
    return Check(
        "embedder", "ok", f"{embedder.model_id} loaded and embedded a text ({dim} dimensions) in {_since(started)}"
    )


def probe_openai(
    name: str, base_url: str | None, api_key: str | None, model: str | None, timeout: float, var: str
) -> Check:
    """One ``GET /models`` to an OpenAI-compatible API, within ``timeout`` seconds and without retries."""
    import openai  # slow to import; only needed when a provider is configured

    from ..providers.openai_chat import OPENAI_BASE_URL

    if base_url is None and api_key is None:
        return Check(
            name, "fail", f"the OpenAI API needs a key: set {var}_API_KEY (or {var}_BASE_URL for a local server)"
        )
    url = base_url or OPENAI_BASE_URL
    client = openai.OpenAI(base_url=url, api_key=api_key or "not-needed", max_retries=0, timeout=timeout)
    started = time.monotonic()
    try:
        offered = [item.id for item in client.models.list().data]
    except openai.APITimeoutError:
        return Check(name, "fail", f"{url} did not answer within {timeout:g} s (MEMLIKEHUMAN_TIMEOUT): is it running?")
    except openai.APIConnectionError as exc:
        return Check(name, "fail", f"cannot reach {url} ({exc.__cause__ or exc}): check {var}_BASE_URL")
    except openai.APIStatusError as exc:
        return _status_check(name, url, exc.status_code, var, started)
    finally:
        client.close()
    if model and offered and model not in offered:
        return Check(name, "warn", f"{url} answered, but does not offer model {model!r}: check {var}_MODEL")
    return Check(name, "ok", f"{url} answered in {_since(started)}")


def _status_check(name: str, url: str, status: int, var: str, started: float) -> Check:
    if status in (401, 403):
        return Check(name, "fail", f"{url} refused the API key (HTTP {status}): check {var}_API_KEY")
    if status in (404, 405, 501):
        # Reachable; some OpenAI-compatible servers simply do not list their models.
        return Check(name, "ok", f"{url} answered in {_since(started)} (it does not list models)")
    return Check(name, "fail", f"{url} answered HTTP {status}: check the service and {var}_BASE_URL")


def _since(started: float) -> str:
    return f"{(time.monotonic() - started) * 1000:.0f} ms"
