"""Waiting and stopping, in the browser (issue 32): a run starting says so
at once, a run waiting in line has the sidebar drawn and usable meanwhile
(a lighter setting can be picked), and a run stopped with Streamlit's Stop
says where it stopped and what to do, instead of a progress bar frozen at
"epoch 384 of 1200"."""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
from collections.abc import Iterator

import pytest

from tools.browsing import APP, DRAWN_CHART, POLL_MS, RERUN_PATIENCE_SECONDS, expect
from tools.sessions import HEAVY_RUN, Heard, apart, session
from ui.state import BAR_INTERVAL, HEAVY_AT_ONCE

from .serverlog import clean_server

pytestmark = pytest.mark.browser

# Within the work budget by the estimate (7.6 s), long enough to stop half-way.
LONG = "/?width=32&shared_repeats=4&batch_size=1&epochs=2000"
BAR = '[class*="st-key-training_progress"] [data-testid="stProgress"]'
BAR_SEED = 5150  # LONG at this seed trains all its 2000 epochs: no early divergence


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


def test_a_training_bar_is_redrawn_a_few_times_a_second_not_per_percent(server):
    # A run of its own (no other test's seed), over a second of training even
    # alone: a bar per percent drew 100 bars, each a redraw of the page in the browser.
    # A fixed seed: from the clock, some diverged at epoch 1 and stopped at once.
    link = f"{LONG.lstrip('/?')}&seed={BAR_SEED}"
    heard = Heard(link)
    stream = server.replace("http://", "ws://") + "/_stcore/stream"
    apart(asyncio.run, session(stream, link, heard))
    assert heard.progress is not None and heard.finished is not None and not heard.exception
    # The first at once, then one an interval; a message or two late at the start at most.
    assert 2 <= heard.bars <= (heard.finished - heard.progress) / BAR_INTERVAL + 3, heard


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


# Jobs ahead of the page's own: two run, the rest wait, so the page's wait
# lasts several of their runs (each 1.7 s on a quiet machine, alone).
AHEAD = 10
HEAVY_SEEDS = 3200  # HEAVY_RUN's seeds from here: none cached, none another test's
# The page's state as the 'Waiting to start' note is drawn: "whole" if the
# sidebar's width slider is there and nothing in the sidebar is a skeleton
# then; "after" if the note went before that happened.
_SIDEBAR_WHILE_WAITING = """() => {
    const note = [...document.querySelectorAll('[data-testid="stAlert"]')]
        .some((alert) => alert.textContent.includes('Waiting to start the training'));
    const sidebar = document.querySelector('[data-testid="stSidebar"]');
    const whole = sidebar !== null && !sidebar.querySelector('[data-testid="stSkeleton"]')
        && sidebar.querySelector('input[type="range"][aria-label="Hidden width"]:not([disabled])') !== null;
    if (note && whole) return 'whole';
    if (note) window.fitlabNoteSeen = true;
    return window.fitlabNoteSeen && !note ? 'after' : null;
}"""


@contextlib.contextmanager
def jobs_ahead(url: str, count: int) -> Iterator[list[Heard]]:
    """`count` bare sessions (tools/load.py) on distinct heavy links, held
    open for the block: two hold the server's slots, the rest are in line."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stop = asyncio.Event()
    heard = [Heard(HEAVY_RUN.format(i=HEAVY_SEEDS + i)) for i in range(count)]
    stream = url.replace("http://", "ws://") + "/_stcore/stream"

    async def hold() -> None:
        await asyncio.gather(*(session(stream, h.query, h, stop=stop) for h in heard))

    held = asyncio.run_coroutine_threadsafe(hold(), loop)
    try:
        deadline = time.monotonic() + RERUN_PATIENCE_SECONDS
        while sum(h.waiting is not None for h in heard) < count - HEAVY_AT_ONCE:
            if held.done():
                held.result()  # a session failed: say why
            assert time.monotonic() < deadline, "the jobs ahead did not get in line"
            time.sleep(0.05)  # a poll's interval, not a wait for the app
        yield heard
    finally:
        loop.call_soon_threadsafe(stop.set)
        held.result(RERUN_PATIENCE_SECONDS)
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


# With the browser suite, one test after another: its ten heavy jobs beside
# that suite's tests on the other core, one of them (test_history) timed out in one run.
@pytest.mark.xdist_group("browser")
@pytest.mark.slow  # a server of its own (the suite marks only those on its shared server)
def test_the_sidebar_is_drawn_and_usable_while_the_run_waits_in_line(page, fresh_server):
    with jobs_ahead(fresh_server, AHEAD) as ahead:
        page.goto(f"{fresh_server}/?{HEAVY_RUN.format(i=HEAVY_SEEDS + AHEAD)}")
        # While the page says its place in line, the sidebar is whole: its
        # widgets' code loaded, not skeletons until the run starts.
        seen = page.wait_for_function(_SIDEBAR_WHILE_WAITING, polling=POLL_MS)
        assert seen.json_value() == "whole"
        # A lighter setting, picked while waiting, takes the place in line and draws.
        thumb = page.get_by_role("slider", name="Hidden width")
        thumb.focus()
        thumb.press("Home")
        expect(thumb).to_have_attribute("aria-valuetext", "1")
        expect(page).to_have_url(re.compile(r"[?&]width=1\b"))
        page.wait_for_selector(DRAWN_CHART)
        # Drawn ahead of the line's end: a small job goes first (fitlab.serving.jobs).
        assert any(h.finished is None for h in ahead), [h.finished for h in ahead]
