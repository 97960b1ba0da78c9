"""Alternatives from a real local model: a question -> up to 4 phrasings, cached per question.

The model is the one of ../shared/guides/local-llm.md (Qwen2.5-Coder-1.5B-Instruct Q4_K_M behind
llama-cpp-python's OpenAI-compatible server), installed outside the repository by
scripts/install-local-llm into $MEMLIKEHUMAN_LLM_HOME or ~/.cache/memlikehuman/local-llm.
The server is started on 127.0.0.1 by bench/local_llm.py (the launcher the extraction bench and the
real-model test use too) at the first question not in the cache, and stopped at the end of the
`with` block. Answers are cached in a JSON file keyed by the question, so a rerun asks the model
only about new questions.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from bench.local_llm import MODEL_ALIAS, LocalModel, installed

__all__ = ["Rewriter", "installed"]

# "question": the first prompt, and the default. It made the 1.5B model paraphrase the question
# ("When did X attend the support group?"): docs/decisions/2026-12-01-recall-alternatives.md.
QUESTION = (
    "You help a search engine find old chat messages. Given a question about a past conversation, write up"
    " to 4 short alternative search phrasings with the words the chat message itself would contain: name"
    " concrete instances of any category (dishes -> soup, pasta; health problems -> chest pain, flu), write a"
    " judgement as the behaviour that would show it, give one phrasing per person involved, and write dates"
    ' out. Do not answer the question. Reply with JSON only: {"phrasings": ["...", "..."]}'
)
# "message": asks for the chat messages themselves, first person, with one worked example (invented,
# not from any benchmark), because the small model copies the form of an example better than it
# follows an instruction.
MESSAGE = (
    "You help a search engine find old chat messages. Given a question about a past conversation, write up to 4"
    " short chat messages that could have answered it, as the person would have written them, in the first"
    " person, with concrete words: an instance instead of a category, the behaviour that shows a judgement,"
    " an event instead of a date. Never copy the question. Reply with JSON only."
)
MESSAGE_EXAMPLE = (
    "What sports does Tom enjoy?",
    '{"phrasings": ["I played soccer with my team on Saturday", "went for a long run this morning",'
    ' "I love watching basketball games", "my first tennis lesson was great"]}',
)
# "words": asks for bags of words, not sentences (a 1.5B model paraphrases a sentence; a word list
# leaves it room for the instances), with one worked example (invented, not from any benchmark).
WORDS = (
    "You help a search engine find old chat messages. Given a question about a past conversation, write up to 4"
    " short lists of 3-8 words each that the chat messages answering it would contain: concrete instances of"
    " every category the question names, the things people do and see, places, objects. Do not answer the"
    " question and do not repeat its wording. Reply with JSON only."
)
WORDS_EXAMPLE = (
    "What sports does Tom enjoy?",
    '{"phrasings": ["soccer match team goal", "running jog marathon race", "basketball tennis court",'
    ' "swimming pool lesson coach"]}',
)
# "feedback": the question and the first messages a plain recall found, as an agent sees them after a
# first call, so that the model can name instances the conversation really has. It still mostly
# paraphrased (docs/decisions/2026-12-01-recall-alternatives.md).
FEEDBACK = (
    "You help a search engine find old chat messages. You get a question about a past conversation and"
    " messages a first search found (some may be irrelevant). Write up to 4 short search phrasings for"
    " OTHER messages that would also help answer it: other instances of the same kind as the relevant ones,"
    " the other person's side, earlier or later events about the same thing. Use the concrete words such"
    ' messages would contain. Do not answer the question. Reply with JSON only: {"phrasings": ["..."]}'
)
PROMPTS = {
    "question": (QUESTION, None),
    "message": (MESSAGE, MESSAGE_EXAMPLE),
    "words": (WORDS, WORDS_EXAMPLE),
    "feedback": (FEEDBACK, None),
}
# The prompts whose model sees the first hits of the plain query (rewrite(question, found)).
SEES_HITS = frozenset({"feedback"})
# How many first hits the "feedback" model reads, and how much of each.
FOUND = 5
FOUND_CHARS = 300


class Rewriter:
    """``with Rewriter(cache) as rewrite: rewrite(question)`` -> up to 4 phrasings (cached).

    With a prompt of SEES_HITS, ``rewrite(question, found)`` also shows the model the texts the plain
    query found first, labeled as found data. The cache is keyed by the question alone: its phrasings
    were made from the hits of the run that asked first.
    """

    def __init__(self, cache: Path, timeout: float = 180.0, prompt: str = "question") -> None:
        self.system, self.example = PROMPTS[prompt]
        self.cache_path = cache
        self.prompt = prompt
        self.cache = _load(cache, prompt)
        self.timeout = timeout
        self.model: LocalModel | None = None  # started on the first question not in the cache
        self.asked = 0
        self.sees_hits = prompt in SEES_HITS

    def __enter__(self) -> Rewriter:
        return self

    def __call__(self, question: str, found: Sequence[str] = ()) -> list[str]:
        if question not in self.cache:
            if self.model is None:
                self.model = LocalModel(n_ctx=2048).__enter__()
            self.cache[question] = self._ask(question, found)
            self.asked += 1
            if self.asked % 10 == 0:
                self.save()
        return self.cache[question]

    def _ask(self, question: str, found: Sequence[str]) -> list[str]:
        assert self.model is not None
        body = {
            "model": MODEL_ALIAS,
            "messages": self._messages(question, found),
            "temperature": 0,
            "max_tokens": 160,
            "response_format": {"type": "json_object"},
        }
        request = urllib.request.Request(
            f"{self.model.base_url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as answer:
            content = json.loads(answer.read())["choices"][0]["message"]["content"]
        try:
            found = json.loads(content).get("phrasings", [])
        except (json.JSONDecodeError, AttributeError):
            return []  # counted as no alternatives: the weak model's failures are part of the measurement
        return [str(p)[:4000] for p in found if isinstance(p, str) and p.strip()][:4]

    def _messages(self, question: str, found: Sequence[str]) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": self.system}]
        if self.example:
            messages += [
                {"role": "user", "content": self.example[0]},
                {"role": "assistant", "content": self.example[1]},
            ]
        if not self.sees_hits:
            return [*messages, {"role": "user", "content": question}]
        lines = "\n".join(f"- {text[:FOUND_CHARS]}" for text in found[:FOUND])
        return [*messages, {"role": "user", "content": f"Question: {question}\nMessages found:\n{lines}"}]

    def save(self) -> None:
        stored = {"prompt": self.prompt, "phrasings": self.cache}
        self.cache_path.write_text(json.dumps(stored, indent=1, ensure_ascii=False), "utf-8")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.save()
        if self.model is not None:
            self.model.__exit__(kind, exc, tb)
            self.model = None


def _load(cache: Path, prompt: str) -> dict[str, list[str]]:
    """The cached phrasings, which must come from the same prompt (a file of a bare question -> phrasings
    map, as written before the prompts had names, is the "question" prompt's)."""
    if not cache.exists():
        return {}
    stored = json.loads(cache.read_text("utf-8"))
    made_by, phrasings = (stored["prompt"], stored["phrasings"]) if "phrasings" in stored else ("question", stored)
    if made_by != prompt:
        raise SystemExit(
            f"{cache} holds the {made_by!r} prompt's phrasings, not the {prompt!r} prompt's: give another --rewrites"
        )
    return phrasings
