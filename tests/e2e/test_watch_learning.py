"""Watch it learn shows learning, in the browser: the change pictures move
visibly from epoch 0 to the end, the prediction axes stay put while the
points move, one slider and one readout move everything, Play stops or
loops, and at phone size the pictures stack inside the screen with the
controls in reach."""

from __future__ import annotations

import io

import numpy as np
import pytest

from fitlab import Config, train
from fitlab.figures.watch_weights import layer_movement
from tools.browsing import expect, open_page, open_watch

pytestmark = pytest.mark.browser

PLAYER = ".fitlab-player"
SLIDER = f'{PLAYER} input[data-role="epoch"]'
READOUT = f'{PLAYER} [data-role="readout"]'
PLAY = f'{PLAYER} [data-act="play"]'
PICTURE = ".st-key-watch_{} svg.marks"
PHONE = {"width": 390, "height": 844}


def move_to(page, epoch: int) -> None:
    page.locator(SLIDER).fill(str(epoch))
    expect(page.locator(READOUT)).to_have_text(f"epoch {epoch} of 100")


def pixels(page, name: str) -> np.ndarray:
    from PIL import Image

    shot = page.locator(PICTURE.format(name)).screenshot(animations="disabled")
    return np.asarray(Image.open(io.BytesIO(shot)).convert("RGB"), dtype=np.int16)


def changed_share(before: np.ndarray, after: np.ndarray) -> float:
    """Of the pixels coloured in either picture (the cells: text, axes and
    background are grey or white), the share whose colour moved by more than
    a faint tint."""
    coloured = ((before.max(axis=2) - before.min(axis=2)) > 30) | ((after.max(axis=2) - after.min(axis=2)) > 30)
    moved = np.abs(before - after).max(axis=2) > 24
    return float(moved[coloured].mean()) if coloured.any() else 0.0


def test_the_change_since_epoch_0_is_plainly_visible_at_the_defaults(page, server):
    open_page(page, server)
    open_watch(page)
    expect(page.locator(PICTURE.format("change"))).to_have_count(1)
    at_end = pixels(page, "change")
    move_to(page, 0)
    at_start = pixels(page, "change")
    assert at_start.shape == at_end.shape
    # Today's shared-scale heatmaps change 0.4% of their pixels; the change
    # view recolours most of its cells (all white at epoch 0).
    assert changed_share(at_start, at_end) > 0.5
    # One line says what is shown and how much each layer moved, torch's numbers.
    moved = layer_movement(train(Config()).frames)
    note = page.locator(".st-key-watch").get_by_text("its weights moved")
    expect(note).to_contain_text(f"shared (used 2×) {100 * moved[1]:.0f}%")


_AXIS_LABELS = """(svg, title) => {
    const axis = [...svg.querySelectorAll('.role-axis')].find(
        (a) => a.querySelector('.role-axis-title text')?.textContent === title);
    return axis ? [...axis.querySelectorAll('.role-axis-label text')].map((t) => t.textContent) : null;
}"""


def axis_labels(page, name: str, title: str) -> list[str]:
    """The tick labels of the axis titled `title` in picture `name`."""
    return page.locator(PICTURE.format(name)).evaluate(_AXIS_LABELS, title)


def test_the_prediction_axes_stay_put_as_the_epoch_moves(page, server):
    # Issue 32: the y-axis rescaled every frame, so progress read as tick
    # labels changing. Now the points move and the axes stay.
    open_page(page, server)
    open_watch(page)
    expect(page.locator(PICTURE.format("predictions"))).to_have_count(1)
    run = train(Config())
    final, labels = run.test_predictions.prediction, run.test_predictions.label
    late = axis_labels(page, "predictions", "student's prediction")
    move_to(page, 0)
    early = axis_labels(page, "predictions", "student's prediction")
    assert early and late and early == late
    # The axis spans the labels and the last frame's predictions, torch's numbers, and little more.
    ticks = [float(t.replace("−", "-")) for t in late]
    low, high = min(final.min(), labels.min()), max(final.max(), labels.max())
    step = ticks[1] - ticks[0]
    assert ticks[0] <= low + step and ticks[-1] >= high - step
    assert ticks[0] >= low - (high - low) and ticks[-1] <= high + (high - low)


def test_one_slider_one_readout_and_play_stops_clearly_or_loops(page, server):
    open_page(page, server)
    open_watch(page)
    watch = page.locator(".st-key-watch")
    expect(page.locator(SLIDER)).to_have_count(1)
    # The charts' own inputs are hidden: the page's slider is the only one seen.
    assert watch.locator('input[type="range"]:visible').count() == 1
    assert watch.get_by_text("epoch 100 of 100").count() == 1
    assert "⏮" not in watch.inner_text() and "⏸" not in watch.inner_text()
    assert page.locator(SLIDER).bounding_box()["width"] >= 0.4 * watch.bounding_box()["width"]
    assert "above the pictures" in watch.inner_text()
    move_to(page, 90)
    page.locator(f'{PLAYER} [data-role="speed"]').select_option(label="fast")
    page.locator(PLAY).click()
    expect(page.locator(PLAY)).to_have_text("▶ Replay")        # it stopped at the end, and says so
    expect(page.locator(READOUT)).to_have_text("epoch 100 of 100: the end")
    page.locator(f'{PLAYER} [data-role="loop"]').check()
    move_to(page, 94)
    page.locator(PLAY).click()
    page.wait_for_function(f"() => Number(document.querySelector('{SLIDER}').value) < 50")   # wrapped round
    expect(page.locator(PLAY)).to_have_text("Pause")
    page.locator(PLAY).click()
    expect(page.locator(PLAY)).to_have_text("▶ Play")


def test_at_phone_size_the_pictures_stack_in_the_screen_under_the_controls(pages, server):
    with pages.page(viewport=PHONE, is_mobile=True, has_touch=True) as phone:
        open_page(phone, server)
        open_watch(phone)
        pictures = phone.locator(".st-key-watch_pictures svg.marks")
        expect(pictures).to_have_count(6)
        boxes = pictures.evaluate_all("(els) => els.map((e) => e.getBoundingClientRect().toJSON())")
        # The weights row keeps its 160 px a matrix row (readable across a room): on a phone it
        # scrolls sideways in its own box, which lies in the screen, as the annotated code does.
        weights = phone.locator(".st-key-watch_weights")
        inside = [b for b, el in zip(boxes, pictures.all(), strict=True)
                  if not el.evaluate("(e) => !!e.closest('.st-key-watch_weights')")]
        assert len(inside) == 5 and all(b["left"] >= 0 and b["right"] <= PHONE["width"] for b in inside), boxes
        row = weights.evaluate("(e) => ({box: e.getBoundingClientRect().toJSON(), scroll: e.scrollWidth, "
                               "client: e.clientWidth, overflow: getComputedStyle(e).overflowX})")
        assert row["box"]["left"] >= 0 and row["box"]["right"] <= PHONE["width"], row
        assert row["scroll"] <= row["client"] or row["overflow"] == "auto", row
        assert len({round(b["left"]) for b in boxes}) <= 2      # one column, not side by side
        assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
        # The player is not sticky on a phone (it took 45% of the screen while the pictures
        # scrolled): it stands above the pictures, in reach when scrolled back to, inside the screen.
        slider = phone.locator(SLIDER)
        assert slider.bounding_box()["y"] < pictures.first.bounding_box()["y"]
        pictures.nth(5).scroll_into_view_if_needed()
        slider.scroll_into_view_if_needed()
        box = slider.bounding_box()
        assert 0 <= box["y"] and box["y"] + box["height"] <= PHONE["height"]
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
