"""Headless Chromium for the report tests: the system browser (Debian's `chromium`, installed by .ci/run) driven
by Playwright, with every request that would leave the file recorded and refused."""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: Chromium's flags on a machine with a closed network and no display (no background fetches, no sandbox as root).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: Where the screenshots of each page go (a CI artifact folder; ignored by git).
ARTIFACTS = Path(os.environ.get("PROFPIPE_TEST_ARTIFACTS", Path(__file__).resolve().parent.parent / "test-artifacts"))


def chromium_path() -> str:
    """The system Chromium, or skip: the report's browser tests need it (.ci/run installs it with apt-get)."""
    for name in (os.environ.get("PROFPIPE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        found = name and shutil.which(name)
        if found:
            return found
    why = "no system Chromium (apt-get install chromium): the report's browser tests cannot run"
    if os.environ.get("PROFPIPE_REQUIRE_BROWSER"):  # CI installs it: a missing browser is a failure there
        pytest.fail(why)
    pytest.skip(why)


@dataclass
class Visit:
    """A page opened in the browser, with what it printed and tried to fetch."""

    page: object
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@contextmanager
def browser() -> Iterator[object]:
    """A headless Chromium for the whole test module."""
    path = chromium_path()
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


def open_report(instance: object, report: Path) -> Visit:
    """Open `report` in a new page; console errors, page errors and every request beyond the file are recorded,
    and such requests are aborted."""
    page = instance.new_page(viewport={"width": 1300, "height": 900})
    visit = Visit(page)
    page.on("console", lambda message: visit.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: visit.errors.append(str(error)))
    target = report.resolve().as_uri()

    def guard(route: object) -> None:
        if route.request.url == target:
            route.continue_()
        else:
            visit.requests.append(route.request.url)
            route.abort()

    page.route("**/*", guard)
    page.goto(target)
    page.wait_for_selector("nav a")
    return visit
