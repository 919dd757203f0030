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
def app():
    """The page after its first run, with empty caches (tests/page/helpers.py)."""
    from tests.page.helpers import open_page  # Streamlit: only for the tests that open the page

    return open_page()


def pytest_collection_modifyitems(items):
    """A test that needs the streamlit server (tests/e2e) drives Chromium: it
    carries the `browser` marker, so `pytest -m "not browser"` runs the rest.

    The load tests run first: their goals are the served app's under its own
    crowd, and later in a session the browser suite's server, its workers and
    Chromium are still up beside it (in one full run that put first replies at
    2.5–6.5 s, against 1.3–4.7 s alone)."""
    for item in items:
        if "server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
    items.sort(key=lambda item: item.get_closest_marker("load") is None)
