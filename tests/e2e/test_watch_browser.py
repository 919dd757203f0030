"""Watch it learn, in the browser: the page's epoch slider and play move
every picture with no script rerun (the app's run state stays idle)."""

from __future__ import annotations

from tools.browsing import APP, expect, finished_runs, open_page, open_watch

WATCH = ".st-key-watch_pictures"
SLIDER = '.fitlab-player input[data-role="epoch"]'
READOUT = '.fitlab-player [data-role="readout"]'
PLAY = '.fitlab-player [data-act="play"]'
TITLE = f"{WATCH} svg.marks"

# Notes any change of the app's script-run state from now on: a rerun.
_WATCH_STATE = """() => {
    window.fitlabRerun = false;
    window.fitlabStateWatch = new MutationObserver(() => { window.fitlabRerun = true; });
    window.fitlabStateWatch.observe(document.querySelector('APP'),
        {attributes: true, attributeFilter: ['data-test-script-state']});
}""".replace("APP", APP)
# How long a rerun, had the input asked for one, would take at most to show
# in the run state: a rerun of this page starts within a round trip.
RERUN_WINDOW_MS = 2000


def drawing(page) -> str:
    return "".join(page.locator(TITLE).evaluate_all("(svgs) => svgs.map((s) => s.innerHTML)"))


def no_rerun_within(page, ms: int, finished_before: int) -> bool:
    """No run seen in the page's run state within `ms`, and none finished by
    the server since `finished_before` (a quick rerun can be drawn in one
    render, unseen by the state: tools.browsing.finished_runs)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("() => window.fitlabRerun", timeout=ms)
    except PlaywrightTimeout:
        return finished_runs(page) == finished_before
    return False


def test_moving_the_epoch_redraws_the_pictures_without_a_rerun(page, server):
    open_page(page, server)
    open_watch(page)
    expect(page.locator(TITLE)).to_have_count(6)
    expect(page.locator(READOUT)).to_have_text("epoch 100 of 100")
    before = drawing(page)
    page.evaluate(_WATCH_STATE)
    finished = finished_runs(page)
    page.locator(SLIDER).fill("10")
    expect(page.locator(READOUT)).to_have_text("epoch 10 of 100")
    # Every picture's own (hidden) input follows the page's slider.
    assert page.locator(f'{WATCH} .vega-bindings input[type="range"]').evaluate_all(
        "(inputs) => inputs.map((i) => i.value)") == ["10"] * 6
    assert drawing(page) != before
    page.locator(SLIDER).fill("0")
    expect(page.locator(READOUT)).to_have_text("epoch 0 of 100")
    assert no_rerun_within(page, RERUN_WINDOW_MS, finished)
    assert page.locator(APP).get_attribute("data-test-script-state") == "notRunning"


def test_play_advances_through_the_frames_and_pause_stops(page, server):
    open_page(page, server)
    open_watch(page)
    expect(page.locator(READOUT)).to_have_text("epoch 100 of 100")
    page.evaluate(_WATCH_STATE)
    finished = finished_runs(page)
    page.locator(PLAY).click()                    # at the end: plays from the start
    expect(page.locator(PLAY)).to_have_text("Pause")
    page.wait_for_function(f"() => Number(document.querySelector('{SLIDER}').value) >= 5")
    seen = int(page.locator(SLIDER).input_value())
    page.wait_for_function(f"() => Number(document.querySelector('{SLIDER}').value) > {seen + 5}")
    expect(page.locator(READOUT)).not_to_have_text("epoch 100 of 100")
    page.locator(PLAY).click()
    expect(page.locator(PLAY)).to_have_text("▶ Play")
    paused = page.locator(SLIDER).input_value()
    expect(page.locator(READOUT)).to_have_text(f"epoch {paused} of 100")
    assert no_rerun_within(page, RERUN_WINDOW_MS, finished)
    assert page.locator(SLIDER).input_value() == paused
