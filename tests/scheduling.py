"""How the suite is marked and spread over the cores (a plugin, registered by
tests/conftest.py): the `browser` and `slow` marks a test that needs the
`streamlit run` server gets, the order (load tests first, then the browser
unit), xdist's units of work (a module, or the whole browser suite), and the
load tests' running alone."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest


@pytest.hookimpl(tryfirst=True)  # before xdist names each test's group from its xdist_group mark
def pytest_collection_modifyitems(items):
    """A test that needs the streamlit server (tests/e2e) drives Chromium: it
    carries the `browser` marker, so `pytest -m "not browser"` runs the rest.
    Every browser test (those with a server of their own too) and the load
    tests (their own server) also carry `slow`: they start processes, and
    `pytest -m "not slow"` leaves them out of the inner loop.

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
    other worker. Its `paced` tests (a person's pace in wall-clock seconds)
    come last in it and run alone too (paced_tests_alone)."""
    for item in items:
        browser = "server" in getattr(item, "fixturenames", ())
        if browser:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.xdist_group("browser"))
        # Any browser test starts processes (a Chromium, and a server unless it shares
        # the suite's), and so do the load tests (their own server).
        if any(item.get_closest_marker(mark) is not None for mark in ("browser", "load")):
            item.add_marker(pytest.mark.slow)
        if not browser and item.get_closest_marker("load") is not None:
            item.add_marker(pytest.mark.xdist_group("load"))
    items.sort(key=lambda item: (item.get_closest_marker("load") is None,
                                 item.get_closest_marker("browser") is None,
                                 item.get_closest_marker("paced") is not None))


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
    stash = session.config.stash
    stash[_LOAD_TESTS] = sum(item.get_closest_marker("load") is not None for item in session.items)
    stash[_UNPACED_TESTS] = sum(item.get_closest_marker("paced") is None for item in session.items)


_LOAD_TESTS, _UNPACED_TESTS = pytest.StashKey[int](), pytest.StashKey[int]()
_LOAD_DONE = pytest.StashKey[bool]()
# A worker whose tests never finish (it crashed) holds the others back no longer than this.
WAIT_SECONDS = 900
LOAD, PACED, OTHER = "load", "paced", "other"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under xdist, two kinds of test run alone, each worker counting what
    has finished in a file beside the workers' temporary folders (in one
    process the sort alone does it):
    - load_tests_alone: no other test starts before every load test of the
      session has finished;
    - paced_tests_alone: a `paced` test starts once every test not paced has
      finished. Under the other worker's load the server's and the browser's
      own delays pass the page's one-second rule for a slider's steps
      (docs/measurements/performance.md, 2026-12-07 afternoon)."""
    stash = item.config.stash
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return (yield)
    tally = Path(item.config.option.basetemp).parent / "fitlab-tests-finished"
    kind = (LOAD if item.get_closest_marker("load") is not None
            else PACED if item.get_closest_marker("paced") is not None else OTHER)
    if kind != LOAD and stash[_LOAD_TESTS] and not stash.get(_LOAD_DONE, False):
        _wait_for(tally, lambda done: done[LOAD] >= stash[_LOAD_TESTS])
        stash[_LOAD_DONE] = True
    if kind == PACED:
        _wait_for(tally, lambda done: done[LOAD] + done[OTHER] >= stash[_UNPACED_TESTS])
    try:
        return (yield)
    finally:
        with tally.open("a") as finished:
            finished.write(f"{kind} {item.nodeid}\n")


def _wait_for(tally: Path, ready) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not ready(_finished(tally)) and time.monotonic() < deadline:
        time.sleep(0.2)


def _finished(tally: Path) -> Counter:
    """How many tests of each kind the workers have finished."""
    try:
        return Counter(line.split(" ", 1)[0] for line in tally.read_text().splitlines())
    except FileNotFoundError:
        return Counter()
