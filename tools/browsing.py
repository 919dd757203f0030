"""Driving the page in the browser: open it, act, and wait for the app's own
run to finish (the stApp element's script-run state and the status widget,
and the server's script_finished messages on the page's WebSocket), never a
fixed sleep."""

from __future__ import annotations

import contextlib
import time
import weakref
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"  # the README's pictures
# The run's own loss chart and parameter tables (the page has other charts).
CHART = '.st-key-loss_chart [data-testid="stVegaLiteChart"]'
TABLE = '.st-key-parameter_tables [data-testid="stDataFrame"]'
DRAWN_CHART = f"{CHART} svg.marks"  # Vega has drawn the chart
APP = '[data-testid="stApp"]'

_WATCH_RUNS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    window.fitlabRan = false;
    if (window.fitlabWatch) window.fitlabWatch.disconnect();
    // Called after the fact, possibly once for a whole run: any change of
    // the state from the idle 'notRunning' means a run started.
    window.fitlabWatch = new MutationObserver(() => { window.fitlabRan = true; });
    window.fitlabWatch.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""
_RAN_AND_IDLE = """() => window.fitlabRan && document.querySelector('[data-testid="stApp"]')
    .getAttribute('data-test-script-state') === 'notRunning'"""


# Notes when Vega draws into the loss chart: a change inside its drawing, or
# a drawing added (a chart that was not on the page).
_WATCH_CHART = """() => {
    window.fitlabDrawn = false;
    if (window.fitlabDrawWatch) window.fitlabDrawWatch.disconnect();
    const inDrawing = (node) => (node.nodeType === 1 ? node : node.parentElement)?.closest('%s');
    const isDrawing = (node) => node.nodeType === 1 && (node.matches('%s') || node.querySelector('%s'));
    window.fitlabDrawWatch = new MutationObserver((records) => {
        if (records.some((r) => inDrawing(r.target) || [...r.addedNodes].some(isDrawing)))
            window.fitlabDrawn = true;
    });
    window.fitlabDrawWatch.observe(document.body,
        {childList: true, subtree: true, attributes: true, characterData: true});
}""" % ((DRAWN_CHART,) * 3)


def wait_idle(page) -> None:
    """Until the script has finished its run and the status widget is quiet."""
    page.wait_for_selector(f'{APP}[data-test-script-state="notRunning"]')
    page.wait_for_selector('[data-testid="stStatusWidgetRunningIcon"]', state="detached")


def open_page(page, url: str) -> None:
    """Load the page and wait for its first run to finish."""
    page.goto(url)
    wait_idle(page)


def open_tab(page, name: str, drawn=None) -> None:
    """Click the tab `name` and wait for what it draws (`drawn`, a locator;
    by default the first element of its panel), then for the app to be idle.

    What the tab draws is the surest sign its rerun came: waiting to see
    that rerun's start timed out in two of six full runs, with no change of
    the run state seen at all (a quick rerun drawn in one render: see
    _FINISHED_RUNS)."""
    tab = page.get_by_role("tab", name=name)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    if drawn is None:
        drawn = page.get_by_role("tabpanel", name=name).locator('[data-testid="stElementContainer"]').first
    expect(drawn).to_be_visible()
    wait_idle(page)


def open_watch(page) -> None:
    """Open the Watch it learn tab, to its six pictures drawn."""
    open_tab(page, "Watch it learn")
    expect(page.locator(".st-key-watch_pictures svg.marks")).to_have_count(6)


# Runs the server finished for each page (browser_page's), counted from its
# WebSocket frames. A quick rerun's start and end can reach the page together
# and be drawn in one render, so the run-state observer sees no change (seen:
# detach ticked back on a page without its tables drew the chart anew, and
# the state never left notRunning); the server's script_finished always comes.
_FINISHED_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
RERUN_PATIENCE_SECONDS = 90
POLL_MS = 50


def ends_a_run(payload) -> bool:
    """Whether a WebSocket frame from the server says a run finished (not one
    stopped early for a rerun)."""
    from google.protobuf.message import DecodeError
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    if not isinstance(payload, bytes):
        return False
    message = ForwardMsg()
    try:
        message.ParseFromString(payload)
    except DecodeError:
        return False
    return (message.WhichOneof("type") == "script_finished"
            and message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN)


def _count_finished_runs(page) -> None:
    _FINISHED_RUNS[page] = 0

    def on_frame(payload) -> None:
        if ends_a_run(payload):
            _FINISHED_RUNS[page] += 1

    page.on("websocket", lambda socket: socket.on("framereceived", on_frame))


def finished_runs(page) -> int:
    """How many runs the server has finished for this page (browser_page's)."""
    return _FINISHED_RUNS.get(page, 0)


def wait_for_finished_runs(page, count: int) -> None:
    """Until the server has finished `count` runs for this page (browser_page's),
    however far the browser is from drawing the last."""
    deadline = time.monotonic() + RERUN_PATIENCE_SECONDS
    while finished_runs(page) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the server did not finish run {count} within {RERUN_PATIENCE_SECONDS} s")
        page.wait_for_timeout(POLL_MS // 5)  # Playwright delivers the frames meanwhile


def _wait_for_the_rerun(page, finished_before: int) -> None:
    """Until the rerun the last action asked for has ended: the page saw a run
    and is idle, or the server has finished a run since (then the browser's
    next frames draw what it sent)."""
    deadline = time.monotonic() + RERUN_PATIENCE_SECONDS
    while not page.evaluate(_RAN_AND_IDLE):
        if finished_runs(page) > finished_before:
            page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"no rerun ended within {RERUN_PATIENCE_SECONDS} s")
        page.wait_for_timeout(POLL_MS)  # a poll's interval: Playwright delivers the frames meanwhile
    wait_idle(page)


def rerun_after(page, action) -> None:
    """Do `action` (which makes the app rerun) and wait for that rerun to end."""
    page.evaluate(_WATCH_RUNS)
    finished = finished_runs(page)
    action()
    _wait_for_the_rerun(page, finished)


def chart_drawn_after(page, action) -> None:
    """Do `action` (which makes the app rerun) and wait only until Vega has
    drawn the loss chart anew, not for the run to end: a person who acts as
    soon as the picture is there."""
    page.evaluate(_WATCH_CHART)
    action()
    page.wait_for_function("() => window.fitlabDrawn")


def timed_rerun(page, action) -> tuple[float, float]:
    """Do `action` (which makes the app rerun); return the seconds until Vega
    has drawn the loss chart anew, and until the run has ended."""
    page.evaluate(_WATCH_CHART)
    page.evaluate(_WATCH_RUNS)
    finished = finished_runs(page)
    start = time.perf_counter()
    action()
    page.wait_for_function("() => window.fitlabDrawn")
    drawn = time.perf_counter() - start
    _wait_for_the_rerun(page, finished)
    return drawn, time.perf_counter() - start


def sidebar_widget(page, testid: str, label: str):
    return page.locator(f'[data-testid="stSidebar"] [data-testid="{testid}"]', has_text=label)


def click_detach(page) -> None:
    sidebar_widget(page, "stCheckbox", "Detach the labels").locator("label").click()


def toggle_detach(page) -> None:
    rerun_after(page, lambda: click_detach(page))


def expect(locator):
    """Playwright's retrying assertion: elements draw just after a run ends.
    Its default 5 s is short on a loaded 2-core machine; the suite's own
    patience is the page's 90 s."""
    from playwright.sync_api import expect as playwright_expect

    playwright_expect.set_options(timeout=90_000)
    return playwright_expect(locator)


@contextlib.contextmanager
def browser_page(browser, timeout_ms: int = 90_000, **context_options):
    """A page in a fresh browser context (`context_options`: viewport and
    the like), closed afterwards."""
    page = _new_tab(browser, context_options)
    try:
        page.set_default_timeout(timeout_ms)
        yield page
    finally:
        page.context.close()


def _new_tab(browser, context_options: dict):
    """A tab in a fresh context, its finished runs counted."""
    context = browser.new_context(**context_options)
    try:
        page = context.new_page()
    except BaseException:
        context.close()
        raise
    _count_finished_runs(page)
    return page


class Pages:
    """Tabs to reuse, per set of context options: `with pages.page(viewport=...) as page`.

    A fresh context costs Chromium about twice what opening the page again in a
    used tab does (docs/measurements/performance.md): the tab keeps its renderer
    and what it compiled. Each use ends on about:blank, which closes its
    Streamlit session as closing the context did. A tab keeps what a test adds
    to it (listeners, init scripts, its history): such a test takes a fresh
    context (browser_page) instead."""

    def __init__(self, browser):
        self._browser = browser
        self._free: dict[str, list] = {}
        self._all: list = []

    @contextlib.contextmanager
    def page(self, timeout_ms: int = 90_000, **context_options):
        from playwright.sync_api import Error

        key = repr(sorted(context_options.items()))
        free = self._free.setdefault(key, [])
        page = free.pop() if free else None
        if page is None or page.is_closed():
            page = _new_tab(self._browser, context_options)
            self._all.append(page)
        page.set_default_timeout(timeout_ms)
        if "viewport" in context_options and page.viewport_size != context_options["viewport"]:
            page.set_viewport_size(context_options["viewport"])  # a test resized it
        try:
            yield page
        finally:
            try:
                page.goto("about:blank")
                free.append(page)
            except Error:  # a tab that cannot leave (it crashed, or closed) is not reused
                page.context.close()

    def close(self) -> None:
        """Close every tab's context."""
        for page in self._all:
            page.context.close()
        self._all.clear()
        self._free.clear()
