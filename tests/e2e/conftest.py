"""The real browser: a headless `streamlit run` on a free port, driven by
Debian's Chromium through Playwright.

Without chromium or playwright the suite skips, saying why; with
FITLAB_REQUIRE_BROWSER=1 (as .ci/run sets) a missing browser fails it instead.

The server's own output is part of what a test checks: a traceback or a
warning in it fails the test during which it was written (serverlog.py).
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from tools.browsing import Pages, browser_page

from .serverlog import ServerLog, clean_server, log_problems
from .timings import record


def missing_browser() -> str | None:
    """Why the browser suite cannot run here, or None if it can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -r requirements-dev.txt)"
    if shutil.which("chromium") is None:
        return "Debian's chromium is not on PATH (apt-get install chromium)"
    return None


@pytest.fixture(scope="session")
def browser_available():
    reason = missing_browser()
    if reason is not None:
        if os.environ.get("FITLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"FITLAB_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(f"browser suite skipped: {reason}")


@pytest.fixture(scope="session")
def server_log(browser_available, tmp_path_factory) -> ServerLog:
    """Where the suite's server writes its output."""
    return ServerLog(tmp_path_factory.mktemp("streamlit") / "server.log")


@pytest.fixture(scope="session")
def server(server_log):
    """Base URL of a fresh headless fitlab server; stopped after the suite,
    whose whole log must then be free of tracebacks and warnings."""
    started = time.monotonic()
    with clean_server(server_log.path) as url:
        record("fresh server: `streamlit run` to healthy", time.monotonic() - started)
        yield url


@pytest.fixture(autouse=True)
def server_log_stays_clean(request):
    """A test that uses the server fails if the server logged a traceback or
    a warning while it ran."""
    if "server" not in request.fixturenames:
        yield
        return
    log = request.getfixturevalue("server_log")
    start = log.size()
    yield
    problems = log_problems(log.read_from(start))
    assert not problems, "the server logged during this test:\n" + "\n".join(problems)


@pytest.fixture(scope="session")
def browser(browser_available):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=shutil.which("chromium"),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def pages(browser) -> Pages:
    """Tabs the browser tests reuse, one per set of context options (tools.browsing.Pages)."""
    pages = Pages(browser)
    yield pages
    pages.close()


DESKTOP = {"width": 1400, "height": 1000}


@pytest.fixture
def page(pages):
    """The desktop tab, reused: each test opens its own URL in it (a new session)."""
    with pages.page(viewport=DESKTOP, accept_downloads=True) as page:
        yield page


@pytest.fixture
def fresh_page(browser):
    """A desktop tab in a fresh context, for a test that adds listeners, walks its
    history or times a first visit."""
    with browser_page(browser, viewport=DESKTOP, accept_downloads=True) as page:
        yield page


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """The waiting times recorded since the last report travel with this one
    (under xdist, from the worker to the summary that tests/conftest.py prints)."""
    from .timings import TIMINGS, WAIT

    report = yield
    sent = item.config.stash.setdefault(_SENT, {})
    for what, seconds in TIMINGS.items():
        if sent.get(what) != seconds:
            sent[what] = seconds
            report.user_properties.append((WAIT + what, seconds))
    return report


_SENT = pytest.StashKey[dict]()
