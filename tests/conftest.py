"""What the whole suite shares: trained runs, the blog's own loop's results,
the diverged run, the page after its first run, and the `browser` marker.

A run is a value: train(config) for a frozen Config is deterministic (one
explicit generator per run), and so is the blog's loop for its settings (it
seeds torch's global generator itself). Tests that only read a run share one
through `trained` or `blog_loop` instead of each training it again; tests
about training itself (repeatability, threads, caches, global state) call
train.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fitlab import Config, train

if TYPE_CHECKING:
    from fitlab.run import Run

# Blows up at epoch 1: epoch 0 is finite, epoch 1's loss is inf, every later
# one NaN (a CSV of it holds both), the teacher's weights stay finite. Width 16
# pads the first layer's 10 inputs, which the page's table shows blank.
DIVERGED = Config(width=16, lr=1, batch_size=10, seed=2)


@pytest.fixture(scope="session")
def trained():
    """train(config), trained once per config for the whole session. Read the
    run; do not change it (other tests read the same one)."""
    runs: dict[Config, Run] = {}

    def run(config: Config) -> Run:
        if config not in runs:
            runs[config] = train(config)
        return runs[config]

    return run


@pytest.fixture(scope="session")
def blog_loop():
    """tests.reference.blog.blog_script(**settings), run once per settings
    (defaults filled in) for the whole session. Read it; do not change it."""
    import inspect

    from tests.reference.blog import blog_script

    signature = inspect.signature(blog_script)
    results = {}

    def run(**settings):
        bound = signature.bind(**settings)
        bound.apply_defaults()
        key = tuple(sorted(bound.arguments.items()))
        if key not in results:
            results[key] = blog_script(**settings)
        return results[key]

    return run


@pytest.fixture(scope="session")
def diverged(trained) -> Run:
    """A run whose loss blows up at epoch 1 (DIVERGED)."""
    return trained(DIVERGED)


@pytest.fixture
def empty_cache():
    """Streamlit's caches empty before and after the test (they outlive AppTest instances)."""
    import streamlit as st  # only for the tests that use it

    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def app():
    """The page after its first run, with empty caches (tests/page/helpers.py)."""
    from tests.page.helpers import open_page  # Streamlit: only for the tests that open the page

    return open_page()


@pytest.hookimpl(tryfirst=True)  # before xdist names each test's group from its xdist_group mark
def pytest_collection_modifyitems(items):
    """A test that needs the streamlit server (tests/e2e) drives Chromium: it
    carries the `browser` marker, so `pytest -m "not browser"` runs the rest.

    The suite runs on both cores (pytest-xdist, `-n 2` in pyproject.toml):
    each module is one unit of work (pytest_xdist_make_scheduler), so its
    module fixtures run once, and the browser tests are one unit, the group
    `browser`, so one worker starts one server and one Chromium for all of
    them, as a single process did.

    The load tests run first and alone (load_tests_alone), one after another
    (the group `load`: one module's crowd would be the other's load): their goals are the
    served app's under its own crowd, and later in a session the browser
    suite's server, its workers and Chromium are still up beside it (in one
    full run that put first replies at 2.5–6.5 s, against 1.3–4.7 s alone).
    The browser unit comes next: it is the longest, so it starts first on the
    other worker."""
    for item in items:
        browser = "server" in getattr(item, "fixturenames", ())
        if browser:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.xdist_group("browser"))
        elif item.get_closest_marker("load") is not None:
            item.add_marker(pytest.mark.xdist_group("load"))
    items.sort(key=lambda item: (item.get_closest_marker("load") is None,
                                 item.get_closest_marker("browser") is None))


def pytest_xdist_make_scheduler(config, log):
    """xdist's loadgroup, but a test outside a group goes with its module
    (as loadfile), not alone."""
    from xdist.scheduler import LoadGroupScheduling

    class ModulesAndGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.rfind("@") > nodeid.rfind("]"):  # xdist's own test for a group's suffix
                return nodeid.split("@")[-1]
            return nodeid.split("::", 1)[0]

    return ModulesAndGroups(config, log)


def pytest_collection_finish(session):
    session.config.stash[_LOAD_TESTS] = sum(item.get_closest_marker("load") is not None for item in session.items)


_LOAD_TESTS, _LOAD_DONE = pytest.StashKey[int](), pytest.StashKey[bool]()
# A worker whose load tests never finish (it crashed) holds the others back no longer than this.
LOAD_WAIT_SECONDS = 900


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """load_tests_alone: under xdist, no other test starts before every load
    test of the session has finished; each worker counts them in a file
    beside the workers' temporary folders. (In one process the sort alone
    does it.)"""
    if os.environ.get("PYTEST_XDIST_WORKER") is None or not item.config.stash[_LOAD_TESTS]:
        return (yield)
    finished = Path(item.config.option.basetemp).parent / "fitlab-load-tests-finished"
    if item.get_closest_marker("load") is None:
        if not item.config.stash.get(_LOAD_DONE, False):
            deadline = time.monotonic() + LOAD_WAIT_SECONDS
            while _lines(finished) < item.config.stash[_LOAD_TESTS] and time.monotonic() < deadline:
                time.sleep(0.2)
            item.config.stash[_LOAD_DONE] = True
        return (yield)
    try:
        return (yield)
    finally:
        with finished.open("a") as tally:
            tally.write(item.nodeid + "\n")


def _lines(path: Path) -> int:
    try:
        return len(path.read_text().splitlines())
    except FileNotFoundError:
        return 0


def pytest_terminal_summary(terminalreporter):
    """Print the waiting times the browser suite measured (tests/e2e/timings.py),
    from the reports, which carry them from xdist's workers."""
    from tests.e2e.timings import WAIT

    waits = {name[len(WAIT):]: seconds
             for reports in terminalreporter.stats.values() for report in reports
             for name, seconds in getattr(report, "user_properties", ()) if name.startswith(WAIT)}
    if waits:
        terminalreporter.section("fitlab: what a person waits for (browser suite)")
        for what, seconds in waits.items():
            terminalreporter.write_line(f"{seconds:6.2f} s  {what}")
