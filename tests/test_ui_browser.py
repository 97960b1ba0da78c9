"""End to end in a real headless Chromium (Debian's chromium + chromium-driver, driven by Selenium).

The walk a person makes: open the printed URL, find a memory by search, open its event and see the
quote highlighted, correct the memory and see the new version, forget an event after its preview
and see it gone from search, edit the core persona. With MLH_UI_SCREENSHOTS=DIR the main pages are
saved there as PNGs (docs/ui/ holds the ones docs/ui.md shows).

Skips without Chromium outside CI; in CI (CI=true) a missing browser fails the test (.ci/run installs it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import add_memory, make_settings
from ui_support import running_ui

from memlikehuman.archive import personas
from memlikehuman.engine import Engine
from memlikehuman.records import Scope

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1100,760",
)
SCOPE = Scope("alice", "travel")
TRIP = "We booked the train to Porto for the 14th of May. The hotel is near the river, with a view of the bridge."
GARAGE = "The garage code is 4821, please do not share it."
YELLOW = "rgba(255, 227, 110, 1)"  # mark.quote in ui.css


def _browser_or_skip() -> None:
    if os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER):
        return
    if os.environ.get("CI") == "true":
        pytest.fail("chromium and chromium-driver are required in CI for the browser test: apt-get install them")
    pytest.skip("Chromium is not installed: apt-get install chromium chromium-driver")


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Any]:
    _browser_or_skip()
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    browser.implicitly_wait(10)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture
def archive(db_path: Path) -> Path:
    with Engine(make_settings(db_path)) as engine:
        engine.record(SCOPE, "trip", TRIP, "user", "chat", session_id="planning")
        engine.record(SCOPE, "garage", GARAGE, "user", "chat", session_id="planning")
        engine.record(SCOPE, "later", "Pack the rain jacket.", "assistant", "chat", session_id="packing")
        personas.set_text(engine.db, "alice", "You are Alice's travel planner.")
    add_memory(
        db_path,
        "trip",
        "Alice booked a train to Porto for May 14",
        quote="booked the train to Porto for the 14th of May",
        scope=SCOPE,
    )
    add_memory(db_path, "garage", "The garage code is 4821", quote="The garage code is 4821", scope=SCOPE)
    return db_path


class Walk:
    """The browser with the few moves the test makes, and screenshots when asked for."""

    def __init__(self, browser: Any, shots: Path | None) -> None:
        from selenium.webdriver.common.by import By

        self.b = browser
        self.by = By
        self.shots = shots

    def css(self, selector: str) -> Any:
        return self.b.find_element(self.by.CSS_SELECTOR, selector)

    def all(self, selector: str) -> list[Any]:
        return self.b.find_elements(self.by.CSS_SELECTOR, selector)

    def go(self, element: Any) -> None:
        """Click something that loads a new page, and wait until the old one is gone."""
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.wait import WebDriverWait

        old = self.css("html")
        element.click()
        WebDriverWait(self.b, 20).until(expected_conditions.staleness_of(old))
        self.css("main")

    def press(self, selector: str) -> None:
        self.go(self.css(selector))

    def link(self, text: str) -> None:
        self.go(self.b.find_element(self.by.PARTIAL_LINK_TEXT, text))

    def text(self) -> str:
        return str(self.css("main").text)

    def fill(self, selector: str, value: str) -> None:
        field = self.css(selector)
        field.clear()
        field.send_keys(value)

    def shot(self, name: str) -> None:
        if self.shots is not None:
            self.shots.mkdir(parents=True, exist_ok=True)
            self.b.save_screenshot(str(self.shots / f"{name}.png"))

    def search(self, query: str) -> None:
        self.link("Search")
        self.fill("#q", query)
        self.press("#search")


def test_a_person_finds_corrects_and_forgets_memories_and_edits_the_persona_in_chromium(
    driver: Any, archive: Path
) -> None:
    shots = os.environ.get("MLH_UI_SCREENSHOTS")
    walk = Walk(driver, Path(shots) if shots else None)
    with running_ui(archive) as ui:
        driver.get(ui.url)
        assert driver.current_url == f"http://127.0.0.1:{ui.port}/"  # token moved to a cookie
        assert "travel" in walk.text() and "Pack the rain jacket." in walk.text()
        walk.shot("home")

        walk.link("travel")
        assert "session planning" in walk.text() and "session packing" in walk.text()
        walk.shot("timeline")

        walk.search("train to Porto")
        assert "Alice booked a train to Porto for May 14" in walk.css("#memories").text
        walk.shot("search")

        walk.press("#memories td:last-child a")  # the memory's source event
        mark = walk.css("mark.quote")
        assert mark.text == "booked the train to Porto for the 14th of May"
        assert mark.value_of_css_property("background-color") == YELLOW
        walk.shot("event")

        walk.link("Alice booked a train")
        walk.fill("#content", "Alice booked a train to Porto for May 15")
        walk.fill("#reason", "the ticket says the 15th")
        walk.press("#correct")
        assert "replacement_id" in walk.text() and "invalidated_checkpoints" in walk.text()
        walk.link("Open the new version")
        versions = walk.css("#versions").text
        assert "May 15" in versions and "revoked →" in versions and "current" in versions
        walk.shot("memory")

        walk.search("garage code")
        walk.press("#memories td:last-child a")
        walk.press("#forget")
        preview = walk.text()
        assert "garage" in walk.css("#forget-events").text
        assert "The garage code is 4821" in walk.css("#forget-memories").text
        assert "Checkpoints invalidated (0)" in preview
        walk.shot("forget-preview")
        walk.press("#confirm-forget")
        assert "deleted_event_ids\ngarage" in walk.text()
        walk.search("garage code")
        assert "4821" not in walk.text() and "No memory matches." in walk.text()

        walk.link("Core persona")
        walk.fill("#persona-text", "You are Alice's careful travel planner.")
        walk.press("#save-persona")
        assert "saved" in walk.text()
        walk.link("Back to the core persona")
        assert "careful travel planner" in walk.css("#persona-current").text
        assert len(walk.all("#persona-versions tbody tr")) == 2
        walk.shot("persona")

        walk.link("Checkpoints")
        walk.press("#resume")
        context = walk.css("#context").text
        assert 'persona "alice", project "travel"' in context  # the scope followed from page to page
        assert "careful travel planner" in context and "Pack the rain jacket." in context
        walk.shot("resume")

        # Our pages break none of their own Content-Security-Policy rules (and run no script).
        logs = driver.get_log("browser")
        assert not [entry for entry in logs if "Content Security Policy" in entry["message"]], logs
