"""The answer schema that constrains each quote to the sentences of its event."""

from __future__ import annotations

import jsonschema
import pytest

from memlikehuman.lifecycle import extract_schema
from memlikehuman.lifecycle.extract_schema import for_batch, for_event, sentences

TURN = 'Hi Mel! How are you?\nI saw Dr. Lee yesterday... she said "rest more." Thanks!'


def item(quote: str, **extra: object) -> dict[str, object]:
    return {
        "content": "The user saw a doctor.",
        "quote": quote,
        "kind": "event",
        "basis": "stated",
        "subject": None,
        "supersedes": None,
        "valid_from": None,
        "gist": None,
        **extra,
    }


def valid(schema: dict, *items: dict) -> bool:
    try:
        jsonschema.validate({"memories": list(items)}, schema)
    except jsonschema.ValidationError:
        return False
    return True


def test_an_event_splits_into_sentences_that_are_exact_slices_of_its_text():
    found = sentences(TURN)
    assert found == ["Hi Mel!", "How are you?", "I saw Dr. Lee yesterday...", 'she said "rest more."', "Thanks!"]
    assert all(sentence in TURN for sentence in found)


def test_sentences_keep_odd_whitespace_and_drop_word_less_pieces_and_repeats():
    text = "Yes.  Yes.\n\n...\n  I moved\tto Lisbon.  "
    assert sentences(text) == ["Yes.", "I moved\tto Lisbon."]


def test_a_short_event_allows_only_its_own_sentences_as_quotes():
    schema = for_event(TURN)
    # Its sentences long enough to be a quote: not the greeting, not the thanks (see the test below).
    expected = ["How are you?", "I saw Dr. Lee yesterday...", 'she said "rest more."']
    assert schema["properties"]["memories"]["items"]["properties"]["quote"]["enum"] == expected
    assert valid(schema, item("I saw Dr. Lee yesterday..."))
    assert not valid(schema, item("I saw Dr. Lee"))  # a sentence, not any span
    assert not valid(schema, item("Which city do you live in?"))  # e.g. copied from a context block


def test_a_greeting_is_no_quote_and_a_text_of_short_sentences_is_offered_whole():
    quotes = for_event(TURN)["properties"]["memories"]["items"]["properties"]["quote"]["enum"]
    assert "Hi Mel!" not in quotes and "Thanks!" not in quotes and "Hi Mel!" in sentences(TURN)
    short = for_event("Yes!\nOk.")["properties"]["memories"]["items"]["properties"]["quote"]
    assert short["enum"] == ["Yes!\nOk."]


def test_a_long_event_keeps_a_free_form_quote():
    text = " ".join(f"Sentence number {n} is here." for n in range(extract_schema.MAX_CHOICES + 1))
    quote = for_event(text)["properties"]["memories"]["items"]["properties"]["quote"]
    assert quote == {"type": "string"}
    assert for_event("word " * 1000)["properties"]["memories"]["items"]["properties"]["quote"] == {"type": "string"}


def test_without_choices_the_schema_is_the_plain_answer_shape():
    assert for_event("x" * (extract_schema.MAX_CHOICE_CHARS + 1)) == extract_schema.SCHEMA


@pytest.mark.parametrize(("event", "quote", "ok"), [(1, "I like tea.", True), (2, "I like tea.", False)])
def test_a_batch_item_may_quote_only_the_event_it_names(event, quote, ok):
    schema = for_batch(["I like tea.", "My cat is called Pixel."])
    assert valid(schema, item(quote, event=event)) is ok


def test_a_batch_of_long_events_still_asks_each_item_for_its_event_number():
    schema = for_batch(["word " * 1000, "I like tea."])
    assert valid(schema, item("anything at all", event=2))
    assert not valid(schema, item("anything at all"))
