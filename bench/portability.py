"""export / import throughput (events/s) and peak memory (RSS), beside parse/serialize floors.

Run: python bench/portability.py [--events 100000] [--small 10000]
Writes the "portability" section of docs/benchmarks.md.

A synthetic export file is generated (events of 8-60 words in sessions of 50, a cue on every tenth
event, a memory for every fifth, a checkpoint every thousand), imported into an empty archive with
`memlikehuman import`, and exported again with `memlikehuman export`; each command runs in its
own process, which reports its peak RSS (VmHWM). Running two sizes shows whether memory stays flat.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.record import sentence  # noqa: E402
from bench.report import table, write_section  # noqa: E402
from memlikehuman.archive.db import Database  # noqa: E402
from memlikehuman.archive.schema import migrate  # noqa: E402

ENV = {"MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
STAMP = "2026-01-{day:02d}T{hour:02d}:{minute:02d}:00.000000Z"


def _line(record: dict[str, object]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _stamp(i: int) -> str:
    return STAMP.format(day=1 + i // 4000 % 28, hour=i // 60 % 24, minute=i % 60)


def _event(i: int, text: str) -> dict[str, object]:
    cues = [{"kind": "photo", "key": f"IMG_{i:06d}.jpg", "label": "a photo"}] if i % 10 == 0 else []
    return {
        "type": "event", "event_id": f"evt-{i}", "persona_id": "bench", "project_id": "portability",
        "session_id": f"s{i // 50}", "kind": "record", "role": "user" if i % 2 else "assistant", "source": "bench",
        "category": "conversation", "occurred_at": _stamp(i), "occurred_at_given": True, "recorded_at": _stamp(i),
        "extraction_state": "complete", "extraction_error": None, "cues": cues, "text": text,
    }  # fmt: skip


def _memory(i: int, text: str) -> dict[str, object]:
    return {
        "type": "memory", "memory_id": f"mem_{i:032x}", "event_id": f"evt-{i}", "persona_id": "bench",
        "project_id": "portability", "session_id": f"s{i // 50}", "kind": "fact", "basis": "stated",
        "category": "conversation", "subject": None, "status": "current", "valid_from": _stamp(i), "valid_to": None,
        "recorded_at": _stamp(i), "supersedes": None, "superseded_by": None, "revoked_at": None,
        "revoke_reason": None, "replaced_by": None, "content": f"The user said: {text[:80]}", "quote": text[:40],
        "gist": None,
    }  # fmt: skip


def _checkpoint(i: int) -> dict[str, object]:
    return {
        "type": "checkpoint", "checkpoint_id": f"ckpt_{i:032x}", "persona_id": "bench", "project_id": "portability",
        "session_id": f"s{i // 50}", "covered_event_id": f"evt-{i}", "created_at": _stamp(i), "invalidated_at": None,
        "invalidated_reason": None,
        "state": {"goal": "benchmark", "completed": [], "pending": [], "constraints": [], "next_step": ""},
    }  # fmt: skip


def records(count: int, seed: int = 7) -> Iterator[str]:
    """The lines of a valid export file with `count` events, generated lazily."""
    rng = random.Random(seed)
    texts = [sentence(rng) for _ in range(count)]
    header = {"type": "header", "format": "memlikehuman-export", "version": 1, "exported_at": _stamp(0)}
    yield _line({**header, "persona_id": None, "project_id": None})
    yield from (_line(_event(i, text)) for i, text in enumerate(texts))
    yield from (_line(_memory(i, texts[i])) for i in range(0, count, 5))
    yield from (_line(_checkpoint(i)) for i in range(999, count, 1000))
    counts = {"persona_version": 0, "event": count, "memory": len(range(0, count, 5)), "correction": 0}
    yield _line({"type": "end", "records": {**counts, "checkpoint": len(range(999, count, 1000))}})


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mb: float


# The child reports its own peak RSS (VmHWM of its process image): wait4()'s ru_maxrss would also
# count the parent's peak, which a vfork()ed child inherits on Linux.
CHILD = """
import atexit, sys
def _peak():
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmHWM"))
    sys.stderr.write(f"VMHWM {kib}\\n")
atexit.register(_peak)
from memlikehuman.cli import main
main(sys.argv[1:], prog_name="memlikehuman")
"""


def run_cli(db: Path, *args: str) -> Run:
    """Run `memlikehuman --db DB ARGS` in a fresh process; its wall time and peak RSS."""
    command = [sys.executable, "-c", CHILD, "--db", str(db), *args]
    start = time.perf_counter()
    done = subprocess.run(command, env={**os.environ, **ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr.decode()[-500:]}")
    kib = next(line.split()[1] for line in done.stderr.decode().splitlines() if line.startswith("VMHWM"))
    return Run(seconds, int(kib) / 1024)


def parse_floor(path: Path) -> float:
    """Seconds to read the file and json.loads every line: the least an import must do."""
    start = time.perf_counter()
    with path.open("rb") as stream:
        for line in stream:
            json.loads(line)
    return time.perf_counter() - start


def serialize_floor(db: Path) -> float:
    """Seconds to SELECT every event row and json.dumps it: the least an export must do."""
    conn = apsw.Connection(str(db))
    start = time.perf_counter()
    with open(os.devnull, "w", encoding="utf-8") as sink:
        for row in conn.execute("SELECT * FROM events ORDER BY sequence"):
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
    seconds = time.perf_counter() - start
    conn.close()
    return seconds


def empty_archive(path: Path) -> Path:
    """A new archive with the schema and no records (`stats` refuses a path where none exists)."""
    archive = Database(path)
    try:
        migrate(archive)
    finally:
        archive.close()
    return path


def measure(count: int, tmp: Path) -> dict[str, object]:
    source, out, db = tmp / f"in-{count}.jsonl", tmp / f"out-{count}.jsonl", tmp / f"a-{count}.sqlite3"
    with source.open("w", encoding="utf-8") as stream:
        stream.writelines(records(count))
    imported = run_cli(db, "import", str(source))
    exported = run_cli(db, "export", "-o", str(out))
    same = source.read_text(encoding="utf-8").split("\n")[1:] == out.read_text(encoding="utf-8").split("\n")[1:]
    return {
        "events": count,
        "file_mb": source.stat().st_size / 2**20,
        "import": imported,
        "export": exported,
        "parse": parse_floor(source),
        "serialize": serialize_floor(db),
        "identical": same,
        "idle": run_cli(empty_archive(tmp / "empty.sqlite3"), "stats"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000, help="a second, smaller size (0: skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = [measure(n, Path(tmp)) for n in (args.small, args.events) if n]
    rows: list[list[object]] = []
    for r in results:
        n, imp, exp = r["events"], r["import"], r["export"]
        assert isinstance(n, int) and isinstance(imp, Run) and isinstance(exp, Run)
        rows.append([f"import, {n:,} events", f"{n / imp.seconds:,.0f}", f"{imp.seconds:.1f}", f"{imp.peak_mb:.0f}"])
        rows.append([f"export, {n:,} events", f"{n / exp.seconds:,.0f}", f"{exp.seconds:.1f}", f"{exp.peak_mb:.0f}"])
        rows.append([f"floor: read + json.loads each line, {n:,}", f"{n / r['parse']:,.0f}", f"{r['parse']:.1f}", "-"])  # type: ignore[operator]
        rows.append(
            [f"floor: SELECT events + json.dumps, {n:,}", f"{n / r['serialize']:,.0f}", f"{r['serialize']:.1f}", "-"]  # type: ignore[operator]
        )
    idle = results[-1]["idle"]
    assert isinstance(idle, Run)
    rows.append(
        ["baseline: `memlikehuman stats` on an empty archive", "-", f"{idle.seconds:.1f}", f"{idle.peak_mb:.0f}"]
    )
    body = table(["what", "events/s", "seconds", "peak RSS MB"], rows)
    last = results[-1]
    body += (
        "\n\nEach command runs the CLI in a fresh Python process (wall time includes its ~0.5 s start-up);"
        " peak RSS is that process's VmHWM."
        f" The {last['events']:,}-event file is {last['file_mb']:.0f} MB: events of 8-60 words in sessions of 50,"
        " a cue on every tenth, a memory for every fifth, a checkpoint every thousand."
        " Import writes one transaction with each event's full-text row (and the memories'); export streams"
        " from SQL cursors in one read snapshot. Round trip (import, then export) byte-identical apart from"
        f" the header: {'yes' if all(r['identical'] for r in results) else 'NO'}. No extractor, no embedder."
    )
    print(body)
    command = f"python bench/portability.py --events {args.events} --small {args.small}"
    write_section("portability", "export and import", command, body)


if __name__ == "__main__":
    main()
