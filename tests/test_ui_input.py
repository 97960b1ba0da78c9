"""Bad input to the UI gets a page that says what was wrong, and changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from cli_support import Populated, populate
from ui_support import UI, module_archive, running_ui, snapshot

__all__ = ["module_archive"]  # the archive fixture: each backend in turn


@pytest.fixture(scope="module")
def archive(module_archive: Path) -> tuple[Path, Populated]:
    """The module's archive, populated once per backend."""
    db = module_archive
    return db, populate(db)


@pytest.fixture(scope="module")
def ui(archive: tuple[Path, Populated]) -> Iterator[UI]:
    with running_ui(archive[0]) as running:
        running.login()
        yield running


@pytest.fixture
def unchanged(archive: tuple[Path, Populated]) -> Iterator[None]:
    before = snapshot(archive[0])
    yield
    assert snapshot(archive[0]) == before


def says(reply_text: str, *parts: str) -> bool:
    text = unescape(reply_text)
    return "Nothing was changed." in text and all(part in text for part in parts)


@pytest.mark.parametrize(
    ("path", "params", "message"),
    [
        (
            "/event",
            {"persona": "alice", "project": "garden", "id": "no-such-event"},
            "not_found: no event 'no-such-event'",
        ),
        ("/event", {"persona": "alice", "project": "other", "id": "home1"}, "not_found: no event 'home1'"),
        ("/memory", {"persona": "alice", "project": "garden", "id": "mem_0000"}, "not_found: no memory 'mem_0000'"),
        ("/forget", {"persona": "alice", "project": "garden", "id": "gone"}, "not_found: no event 'gone'"),
        ("/persona", {"persona": "no such/persona"}, "invalid_argument: persona_id may contain only"),
    ],
)
def test_unknown_ids_get_a_page_saying_what_was_not_found(
    ui: UI, unchanged: None, path: str, params: dict[str, str], message: str
) -> None:
    reply = ui.get(path, **params)
    assert reply.status in (400, 404) and says(reply.text, message)


@pytest.mark.parametrize(
    ("path", "params", "message"),
    [
        ("/event", {"persona": "alice", "project": "garden"}, "the parameter id is missing"),
        (
            "/event",
            {"persona": "alice", "project": "garden", "id": "big", "offset": "ten"},
            "offset must be a whole number",
        ),
        ("/event", {"persona": "alice", "project": "garden", "id": "home1", "offset": "999999"}, "is past the end"),
        ("/scope", {"persona": "alice", "project": "garden", "before": "-1"}, "before must be"),
        ("/search", {"persona": "alice", "project": "garden", "q": "x", "mode": "turbo"}, "search_mode"),
        ("/search", {"persona": "alice", "project": "garden", "q": "x", "as_of": "yesterday"}, "as_of"),
        ("/search", {"persona": "alice", "project": "garden", "q": "x", "limit": "1000"}, "limit"),
        ("/checkpoints", {"persona": "alice", "project": "garden", "preview": "1", "budget": "lots"}, "budget must be"),
        ("/checkpoints", {"persona": "alice", "project": "garden", "preview": "1", "budget": "0"}, "budget"),
        ("/memory", {"persona": "alice", "project": "garden", "id": "home1"}, "is an event ID, not a memory ID"),
    ],
)
def test_malformed_parameters_get_a_page_saying_what_was_wrong(
    ui: UI, unchanged: None, path: str, params: dict[str, str], message: str
) -> None:
    reply = ui.get(path, **params)
    assert reply.status == 400 and says(reply.text, "invalid_argument:", message)


def test_a_repeated_parameter_and_an_unknown_page_are_refused(ui: UI, unchanged: None) -> None:
    assert says(ui.request("GET", "/event?persona=alice&project=garden&id=home1&id=home2").text, "given 2 times")
    missing = ui.get("/no/such/page")
    assert missing.status == 404 and says(missing.text, "no such page")
    assert ui.request("PUT", "/persona").status == 405


def test_a_huge_query_is_refused_with_limit_exceeded(ui: UI, unchanged: None) -> None:
    reply = ui.get("/search", persona="alice", project="garden", q="rose " * 1000)
    assert reply.status == 413 and says(reply.text, "limit_exceeded: query")
    huge = ui.get("/search", persona="alice", project="garden", q="x" * 30_000)
    assert huge.status in (400, 413, 414, 431) and "x" * 30_000 not in huge.text


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"persona": "alice", "project": "garden", "memory_id": "mem_1", "content": "x"}, "reason is missing"),
        ({"persona": "alice", "project": "garden", "memory_id": "mem_1", "content": "x", "reason": "y"}, "not_found"),
        ({"persona": "alice", "project": "garden", "memory_id": "mem_1", "content": "", "reason": "y"}, "content"),
        ({"persona": "al ice", "project": "garden", "memory_id": "mem_1", "content": "x", "reason": "y"}, "persona_id"),
        (
            {"persona": "alice", "project": "garden", "memory_id": "m", "content": "x", "reason": "y", "x": "1"},
            "unknown",
        ),
    ],
)
def test_malformed_correct_forms_are_refused_and_change_nothing(
    ui: UI, unchanged: None, fields: dict[str, str], message: str
) -> None:
    reply = ui.post("/correct", fields)
    assert reply.status in (400, 404) and says(reply.text, message)


def test_malformed_bodies_are_refused_and_change_nothing(ui: UI, unchanged: None) -> None:
    base = {"Origin": ui.origin}
    form = {**base, "Content-Type": "application/x-www-form-urlencoded"}
    csrf = ui.csrf_token()
    cases = [
        (form, f"csrf={csrf}&persona=alice&text=%ff%fe".encode(), "not valid urlencoded UTF-8"),
        (form, f"csrf={csrf}&persona=alice&persona=bob&text=x".encode(), "given twice"),
        ({**base, "Content-Type": "application/json"}, b'{"persona": "alice", "text": "x"}', "is posted as"),
        (form, f"csrf={csrf}&persona=alice&text=".encode(), "text is missing"),
        (form, f"csrf={csrf}&persona=alice&text={'y' * 20_001}".encode(), "limit_exceeded: persona text"),
    ]
    for headers, body, message in cases:
        reply = ui.request("POST", "/persona", headers=headers, body=body)
        assert reply.status in (400, 413) and says(reply.text, message), message


def test_a_form_over_a_megabyte_is_refused_and_changes_nothing(ui: UI, unchanged: None) -> None:
    body = f"csrf={ui.csrf_token()}&persona=alice&text={'z' * 1_100_000}".encode()
    reply = ui.request(
        "POST",
        "/persona",
        headers={"Origin": ui.origin, "Content-Type": "application/x-www-form-urlencoded"},
        body=body,
    )
    assert reply.status == 413 and says(reply.text, "limit_exceeded: the form is over")


def test_a_forget_confirmation_without_its_preview_is_refused(ui: UI, unchanged: None) -> None:
    reply = ui.post("/forget", {"persona": "alice", "project": "garden", "id": "home1"})
    assert reply.status == 400 and says(reply.text, "lacks the previewed events")
    wrong = ui.post("/forget", {"persona": "alice", "project": "garden", "id": "home1", "events": "u0"})
    assert wrong.status == 409 and says(wrong.text, "changed since its preview")
