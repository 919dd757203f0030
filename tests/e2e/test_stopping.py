"""Waiting and stopping, in the browser (issue 32): a run starting says so
at once, and a run stopped with Streamlit's Stop says where it stopped and
what to do, instead of a progress bar frozen at "epoch 384 of 1200"."""

from __future__ import annotations

import re

import pytest

from .browsing import APP, expect
from .serverlog import clean_server

pytestmark = pytest.mark.browser

# Within the work budget by the estimate (7.6 s), long enough to stop half-way.
LONG = "/?width=32&shared_repeats=4&batch_size=1&epochs=2000"
BAR = '[class*="st-key-training_progress"] [data-testid="stProgress"]'


def test_a_stopped_run_says_where_it_stopped_and_what_to_do(page, server):
    page.goto(server + LONG)
    bar = page.locator(BAR)
    expect(bar).to_contain_text(re.compile(r"Training: epoch [1-9]\d* of 2000"))
    page.get_by_role("button", name="Stop").click()
    page.wait_for_selector(f'{APP}[data-test-script-state="notRunning"]')
    expect(bar).to_have_text(re.compile(r"^Stopped at epoch \d+ of 2000\. A stopped run is not kept: rerun the "
                                        r"page \(R\) to train it again, or lower Epochs \(Advanced\)"))
    stopped = int(re.search(r"epoch (\d+)", bar.inner_text()).group(1))
    assert 1 <= stopped < 2000


@pytest.fixture
def fresh_server(tmp_path, browser_available):
    """A server of this test's own, just healthy: its warm-up still imports
    torch and the tabs, as on the first lesson of the day. (On the suite's
    warm server the lesson is drawn within the same paint as the words.)"""
    with clean_server(tmp_path / "server.log") as url:
        yield url


def test_a_lesson_says_it_runs_the_blogs_script_before_its_run_ends(page, fresh_server):
    # The first lesson on a fresh server waits seconds for torch: the page says so at once.
    page.goto(fresh_server + "/?detach=false&epochs=7&width=7")
    expect(page.get_by_text("Running the blog's script…")).to_be_visible()
    expect(page.get_by_text("Running the blog's script…")).to_have_count(0)   # gone once the lesson is drawn
    expect(page.locator('[data-testid="stException"], [data-testid="stAlert"]').first).to_be_visible()
