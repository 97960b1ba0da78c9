"""Speaker aliases learned from a conversation, and the phrasings they give a query."""

from __future__ import annotations

from memlikehuman.text import aliases
from memlikehuman.text.aliases import Alias

CHAT = [
    ("Melanie", "I finally finished the painting of the lake."),
    ("Caroline", "Hey Mel! That sounds gorgeous."),
    ("Melanie", "Thanks! I used the new brushes."),
    ("Caroline", "You always pick great colours, Mel!"),
    ("Melanie", "My dog Max loves the lake too."),
    ("Caroline", "Thanks! Appreciate it. Hey Max!"),
]


def test_a_name_used_in_address_belongs_to_the_speaker_of_the_turn_before():
    seen = aliases.observations(CHAT)
    assert seen[("Melanie", "Mel")] == 2


def test_greetings_and_common_words_are_not_names():
    assert aliases.addressed("Thanks! Appreciate it.") == []
    assert aliases.addressed("Hey You, well done") == []
    assert aliases.addressed("Wow, Great work!") == []


def test_a_short_form_seen_twice_becomes_an_alias_of_the_speaker():
    learned = aliases.learn(aliases.observations(CHAT), ["Caroline", "Melanie"])
    assert learned == [Alias("Melanie", "Mel", 2)]


def test_a_pet_addressed_once_with_an_unlike_name_is_no_alias():
    learned = aliases.learn(aliases.observations(CHAT), ["Caroline", "Melanie"])
    assert all(alias.name != "Max" for alias in learned)


def test_an_unlike_nickname_needs_more_evidence():
    chat = [("Robert", "Hi."), ("Ann", "Hey Bobby!")] * (aliases.MIN_UNLIKE - 1)
    assert aliases.learn(aliases.observations(chat), ["Robert", "Ann"]) == []
    chat += [("Robert", "Hi."), ("Ann", "Hey Bobby!")]
    assert aliases.learn(aliases.observations(chat), ["Robert", "Ann"]) == [
        Alias("Robert", "Bobby", aliases.MIN_UNLIKE)
    ]


def test_another_speakers_label_is_never_an_alias():
    chat = [("Jon", "Hi."), ("Gina", "Hey Gina! I mean hey Jon!")] * 3
    assert all(alias.name != "Gina" for alias in aliases.learn(aliases.observations(chat), ["Jon", "Gina"]))


def test_a_query_naming_a_speaker_gets_a_phrasing_with_each_other_name():
    learned = [Alias("Melanie", "Mel", 40)]
    assert aliases.phrasings("What did Melanie paint?", learned, ["Caroline", "Melanie"]) == ["What did Mel paint?"]
    assert aliases.phrasings("What did Mel paint?", learned, ["Caroline", "Melanie"]) == ["What did Melanie paint?"]


def test_possessives_and_near_misses_of_a_name_are_matched():
    learned = [Alias("Deborah", "Deb", 30)]
    assert aliases.phrasings("What is Deborah's job?", learned, ["Deborah"]) == ["What is Deb's job?"]
    assert aliases.phrasings("Where did Deboran go?", learned, ["Deborah"]) == [
        "Where did Deb go?",
        "Where did Deborah go?",
    ]


def test_a_query_without_a_speaker_with_aliases_gets_no_phrasing():
    learned = [Alias("Melanie", "Mel", 40)]
    assert aliases.phrasings("What did Caroline paint?", learned, ["Caroline", "Melanie"]) == []
    assert aliases.phrasings("what did she paint", learned, ["Caroline", "Melanie"]) == []


def test_a_query_calling_a_speaker_by_an_alias_gets_a_phrasing_with_the_label_only():
    names = [("Melanie", "Mel"), ("Deborah", "Deb")]
    assert aliases.toward_labels("What did Mel paint?", names) == ["What did Melanie paint?"]
    assert aliases.toward_labels("Where did Deb's sister go?", names) == ["Where did Deborah's sister go?"]
    assert aliases.toward_labels("What did Melanie paint?", names) == []
    assert aliases.toward_labels("what did mel paint", names) == []


def test_a_near_miss_of_a_label_or_an_alias_is_called_by_the_label():
    names = [("Melanie", "Mel"), ("Caroline", "Caro")]
    assert aliases.toward_labels("What did Melane paint?", names) == ["What did Melanie paint?"]
    assert aliases.toward_labels("Did Carolin and Mel meet?", names) == [
        "Did Caroline and Mel meet?",
        "Did Carolin and Melanie meet?",
    ]


def _scanned(text: str) -> list[str]:
    """addressed() without its greeting prefilter: both patterns over the whole text."""
    from memlikehuman.text import addressing

    found: list[str] = []
    for pattern in addressing._patterns()[1:]:  # the address patterns, without the prefilters
        for match in pattern.finditer(text):
            if match.group(1) not in addressing.NOT_NAMES and match.group(1) not in found:
                found.append(match.group(1))
    return found


def test_the_prefilters_never_change_what_addressed_finds():
    import random

    from memlikehuman.text import addressing

    rng = random.Random(20)
    pieces = ["Hi", "hi", "HI", "Hey", "hEy", "thanks", "Thank u", "Good morning", "bye", "Hiya", "wow", "yay",
              "Congrats", ",", "!", " ", "\t", "Mel", "Anna", "this", "_", "1", ".", "Hello", "hi!", "Mel-Ann",
              "\u212a", "\u017f", "thi", "h", "i", "\u2003", "\n", "mel", "MEL"]  # fmt: skip
    texts = [
        "".join(rng.choice(pieces) + rng.choice(["", " "]) for _ in range(rng.randint(1, 12))) for _ in range(20000)
    ]
    with_names = [text for text in texts if _scanned(text)]
    assert len(with_names) > 500  # the sample does exercise the patterns
    assert [addressing.addressed(text) for text in texts] == [_scanned(text) for text in texts]
    assert not addressing._may_greet("It lisbon and of camera you like and garden")  # the filters do filter
    assert not addressing._patterns()[0].search("Hey mel, thanks! it's A deal, OK")
