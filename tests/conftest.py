"""What the whole suite shares: trained runs, the blog's own loop's results,
the diverged run, the page after its first run. How the tests are marked and
spread over the cores is tests/scheduling.py's.

A run is a value: train(config) for a frozen Config is deterministic (one
explicit generator per run), and so is the blog's loop for its settings (it
seeds torch's global generator itself). Tests that only read a run share one
through `trained` or `blog_loop` instead of each training it again; tests
about training itself (repeatability, threads, caches, global state) call
train.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from fitlab import Config, train

pytest_plugins = ["tests.scheduling"]

if TYPE_CHECKING:
    from fitlab.run import Run

# Blows up at epoch 1, where training stops: epoch 0 is finite, epoch 1's loss
# and the student's weights are NaN (at lr=1 the loss is inf at epoch 1 and
# the weights still finite), the teacher's stay finite. Width 16 pads the
# first layer's 10 inputs, which the page's table shows blank.
DIVERGED = Config(width=16, lr=3, batch_size=10, seed=2)


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
    """tools.blog_reference.blog_script(**settings), run once per settings
    (defaults filled in) for the whole session. Read it; do not change it."""
    import inspect

    from tools.blog_reference import blog_script

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
