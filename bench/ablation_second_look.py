"""The second look's seven weights refitted by leave-one-conversation-out over LoCoMo's 10 conversations.

The shipped weights were fitted on conversations 1-5 only (docs/decisions/ranking-ablation.md).
Here every `semantic` recall of LoCoMo is run once with the defaults while the second look's input is
captured (its pool of 30, their scores and Looks); for each conversation a class-balanced logistic
regression (numpy, the same seven features) is fitted on the other nine, and recall is run on the one
left out with those weights. The chat and coding sets are scored with the weights fitted on all ten
(never on themselves).

    python -m bench.ablation_second_look --label head
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from bench import ablation, ablation_data
from bench.ablation import Sources, Variant
from bench.ablation_data import Item
from memlikehuman.engine import Engine
from memlikehuman.providers.local import DEFAULT_MODEL
from memlikehuman.retrieval import second_look
from memlikehuman.retrieval.ranking import DEFAULT_TUNING


@contextlib.contextmanager
def capturing(into: list[tuple[list[int], dict[int, float], dict[int, Any]]]) -> Iterator[None]:
    plain = second_look.reordered

    def spy(scores: Any, pool: Sequence[int], looks: Any, weights: Any, cap: int) -> Any:
        into.append((list(pool), {s: scores[s] for s in pool}, dict(looks)))
        return plain(scores, pool, looks, weights, cap)

    second_look.reordered = spy  # type: ignore[assignment]
    try:
        yield
    finally:
        second_look.reordered = plain


def features(pool: list[int], scores: dict[int, float], looks: dict[int, Any], cap: int) -> np.ndarray:
    top = scores[pool[0]]
    rows = []
    for rank, seq in enumerate(pool):
        look = looks[seq]
        rows.append(
            [
                1 / (1 + rank),
                scores[seq] / top,
                look.cosine,
                getattr(look, "before", look.cosine),
                look.after,
                math.log1p(min(look.length, cap)),
                1.0 if look.asks else 0.0,
            ]
        )
    return np.asarray(rows, dtype=np.float64)


FEATURES = ("rank", "score", "cosine", "before", "after", "length", "asks")


def fit_kept(x: np.ndarray, y: np.ndarray, keep: Sequence[int]) -> np.ndarray:
    """fit() on the kept columns; the others' weights 0."""
    out = np.zeros(x.shape[1])
    out[list(keep)] = fit(x[:, list(keep)], y)
    if out[1] > 0:
        out /= out[1]
    return out


def fit(x: np.ndarray, y: np.ndarray, steps: int = 3000, l2: float = 1e-3) -> np.ndarray:
    """Class-balanced logistic regression by gradient descent on standardized features; the weights on the
    raw features (the intercept dropped: only the order within a pool counts), scaled so the score's is 1."""
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mean) / std
    pos = y.mean()
    sample = np.where(y > 0, 0.5 / pos, 0.5 / (1 - pos))
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        g = sample * (p - y)
        w -= 0.5 * (z.T @ g / len(y) + l2 * w)
        b -= 0.5 * g.mean()
    raw = w / std
    return raw / raw[1] if raw[1] > 0 else raw


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="head")
    parser.add_argument(
        "--drop", nargs="*", default=[], choices=FEATURES, help="features left out of the fit (weight 0)"
    )
    args = parser.parse_args(argv)
    keep = [n for n, name in enumerate(FEATURES) if name not in args.drop]
    cap = DEFAULT_TUNING.second_look_length_cap
    locomo = ablation_data.locomo()
    cache_path, cache = ablation._query_cache(DEFAULT_MODEL)
    pools: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    with Engine(ablation_data.settings(locomo.db, DEFAULT_MODEL)) as engine:
        sources = Sources(engine, cache)
        ids = {r["sequence"]: r["event_id"] for r in engine.db.query("SELECT sequence, event_id FROM events")}
        for item in locomo.items:
            seen: list[Any] = []
            with capturing(seen):
                ablation.ask(sources, [item], "semantic", Variant("defaults", "-"), {})
            if not seen:
                continue
            pool, scores, looks = seen[0]
            y = np.asarray([1.0 if ids[s] in item.gold else 0.0 for s in pool])
            pools.setdefault(item.conversation, []).append((features(pool, scores, looks, cap), y))
        cache_path.write_bytes(pickle_dumps(cache))
    convs = list(pools)
    folds = {}
    for conv in convs:
        x = np.vstack([f for c in convs if c != conv for f, _ in pools[c]])
        y = np.concatenate([t for c in convs if c != conv for _, t in pools[c]])
        folds[conv] = fit_kept(x, y, keep)
    everything = fit_kept(
        np.vstack([f for c in convs for f, _ in pools[c]]),
        np.concatenate([t for c in convs for _, t in pools[c]]),
        keep,
    )
    results = ablation.load_results(args.label)
    rows = []
    for n, conv in enumerate(convs):
        weights = tuple(round(float(v), 3) for v in folds[conv])
        name = f"second look LOCO fold {conv} without {args.drop}"
        variant = Variant(name, "second look weights", ablation._t(second_look_weights=weights))
        items = [i for i in locomo.items if i.conversation == conv]
        with Engine(ablation_data.settings(locomo.db, DEFAULT_MODEL)) as engine:
            got = ablation.ask(Sources(engine, cache), items, "semantic", variant, {})
        base = [
            r for r, i in zip(results["defaults|locomo|semantic"], locomo.items, strict=True) if i.conversation == conv
        ]
        off = [
            r
            for r, i in zip(results["no second look|locomo|semantic"], locomo.items, strict=True)
            if i.conversation == conv
        ]
        rows.append([conv, n < 5, weights, _r10(off), _r10(base), _r10(got)])
        print(rows[-1], file=sys.stderr, flush=True)
    weights = tuple(round(float(v), 3) for v in everything)
    lines = [f"left out of the fit: {args.drop or 'nothing'}; weights fitted on all 10 {FEATURES}: {weights}"]
    lines.append("| left out | in 1-5 | weights fitted on the other 9 | no second look | shipped weights | refit |")
    lines.append("|---|---|---|---|---|---|")
    lines += [f"| {c} | {h} | {w} | {a:.3f} | {b:.3f} | {g:.3f} |" for c, h, w, a, b, g in rows]
    variant = Variant(
        f"second look refit on all 10 without {args.drop}",
        "second look weights",
        ablation._t(second_look_weights=weights),
    )
    for name in ("chat", "coding"):
        data = {"chat": ablation_data.chat, "coding": ablation_data.coding}[name]()
        with Engine(ablation_data.settings(data.db, DEFAULT_MODEL)) as engine:
            got = ablation.ask(Sources(engine, cache), data.items, "semantic", variant, {})
        off = results[f"no second look|{name}|semantic"]
        base = results[f"defaults|{name}|semantic"]
        lines.append(
            f"{name}, semantic R@10: no second look {_r10(off):.3f}, shipped {_r10(base):.3f},"
            f" refit on all 10 LoCoMo {_r10(got):.3f}"
        )
    text = "\n".join(lines)
    suffix = "".join(f"-no-{d}" for d in args.drop)
    (ablation_data.OUT / f"second-look{suffix}.txt").write_text(text + "\n")
    print(text)


def _r10(rows: Sequence[Sequence[float]]) -> float:
    return statistics.fmean(r[1] for r in rows)


def pickle_dumps(obj: Any) -> bytes:
    import pickle

    return pickle.dumps(obj)


def _items(name: str) -> list[Item]:
    return ablation.items_by_set()[name]


if __name__ == "__main__":
    main()
