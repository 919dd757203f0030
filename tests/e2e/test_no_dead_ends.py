"""No dead ends, in the browser: a link over the work budget keeps the page
whole and offers the nearest settings that fit, one click away; every
download arrives, however quickly they follow each other; a bad link's
warning gives each setting's allowed range, inside its box."""

from __future__ import annotations

import io
import re
from dataclasses import replace

import pandas as pd
import pytest

from fitlab import Config, train
from fitlab.compare import parameters_csv
from fitlab.config import SETTINGS
from fitlab.serving.affordable import nearest_affordable
from tools.browsing import DRAWN_CHART, expect, open_page, open_tab, rerun_after

pytestmark = pytest.mark.browser

OVER_BUDGET = "/?width=256&epochs=2000&batch_size=1"
WIDTHS = SETTINGS["width"].stops


def test_an_over_budget_link_keeps_the_page_and_offers_the_nearest_settings_that_fit(page, server):
    open_page(page, server + OVER_BUDGET)
    expect(page.get_by_role("tab", name="Training")).to_be_visible()
    expect(page.get_by_role("tab", name="Compare runs")).to_be_visible()
    expect(page.locator('[data-testid="stAlert"]', has_text="too much work")).to_have_count(1)
    offers = page.locator(".st-key-budget_offers button")
    expect(offers.first).to_have_text(re.compile(r"^Advanced › Epochs 2000 → \d+$"))
    # Only settings that train are offered (issue 32): width 128 and
    # repeats 0 are among the nearest by the estimate, and diverge at epoch 1.
    nearest = nearest_affordable(Config(width=256, epochs=2000, batch_size=1), choices={"width": WIDTHS})
    diverging = [o for o in nearest if train(replace(o, epochs=2)).diverged_at is not None]
    assert {o.width for o in diverging} >= {128} and {o.shared_repeats for o in diverging} >= {0}
    texts = offers.all_inner_texts()
    assert not any("Hidden width" in t or "Shared layer repeats" in t for t in texts), texts
    epochs = int(texts[0].rsplit("→", 1)[1])
    assert epochs <= nearest[0].epochs
    rerun_after(page, lambda: offers.first.click())
    page.wait_for_selector(DRAWN_CHART)                        # it ran: the loss chart is drawn
    expect(page.locator('[data-testid="stAlert"]', has_text="too much work")).to_have_count(0)
    expect(page.locator('[data-testid="stAlert"]', has_text="diverged")).to_have_count(0)
    expect(page).to_have_url(re.compile(rf"[?&]epochs={epochs}\b"))
    expect(page.get_by_role("slider", name="Hidden width")).to_have_attribute("aria-valuetext", "256")


def clicked_downloads(page, keys: list[str], tmp_path) -> list[str]:
    """Click each download button right after the other (a click reruns the
    page; the next does not wait for that), and return the files' texts once
    all have arrived (the suite's 90 s patience, polled)."""
    arrived = []

    def keep(download) -> None:
        arrived.append(download)

    page.on("download", keep)
    for key in keys:
        page.locator(f".st-key-{key} button").click()
    for _ in range(900):
        if len(arrived) >= len(keys):
            break
        page.wait_for_timeout(100)
    page.remove_listener("download", keep)
    assert len(arrived) == len(keys), f"{len(arrived)} of {len(keys)} downloads arrived"
    texts = []
    for i, download in enumerate(arrived):
        path = tmp_path / f"{i}-{download.suggested_filename}"
        download.save_as(path)
        texts.append(path.read_text())
    return texts


def test_two_quick_downloads_both_arrive_every_time(page, server, tmp_path):
    open_page(page, server)
    thumb = page.get_by_role("slider", name="Hidden width")
    rerun_after(page, lambda: (thumb.focus(), thumb.press("ArrowRight")))      # a second run, width 6
    open_tab(page, "Compare runs", page.locator(".st-key-download_parameters button"))
    for _ in range(2):
        got = clicked_downloads(page, ["download_runs", "download_parameters", "download_parameters"], tmp_path)
        runs, parameters = (next(t for t in got if word in t.splitlines()[0]) for word in ("train_loss", "parameter"))
        assert sum("parameter" in t.splitlines()[0] for t in got) == 2
    # The parameters file is torch's: each picked run's teacher and student.
    labels = list(dict.fromkeys(pd.read_csv(io.StringIO(parameters))["run"]))
    assert len(labels) == 2
    expected = parameters_csv([(labels[0], train(Config())), (labels[1], train(Config(width=6)))])
    assert parameters == expected and runs.startswith("run,")


_BOX_AND_LINES = """(box) => [box, box.querySelector('[data-testid="stText"]')].map((el) => {
    const r = el.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom};
})"""


def test_a_bad_links_warning_gives_the_allowed_range_inside_its_box(page, server):
    open_page(page, server + "/?width=9999&lr=abc&batch_size=70")
    box = page.locator(".st-key-url_warning")
    lines = box.locator('[data-testid="stText"]')
    expect(lines).to_contain_text("width=9999: 1 to 256; using the default, 5.")
    expect(lines).to_contain_text("lr=abc: 1e-06 to 10; using the default, 0.01.")
    expect(lines).to_contain_text("batch_size=70: 1 to 50")
    # Both boxes from one layout: measured apart, a chart drawn above in between moved the lines.
    outer, inner = box.evaluate(_BOX_AND_LINES)
    assert outer["top"] <= inner["top"] and inner["bottom"] <= outer["bottom"]
    expect(box).not_to_have_css("background-color", "rgba(0, 0, 0, 0)")   # the warning's colours


_DRAWN = """(svg) => ({
    dashed: [...svg.querySelectorAll('.mark-line path')].filter((p) => p.getAttribute('stroke-dasharray')).length,
    lines: svg.querySelectorAll('.mark-line path').length,
    diamonds: svg.querySelectorAll('.mark-symbol path').length,
})"""


def test_student_vs_teacher_pictures_agree_with_their_captions(page, server):
    open_page(page, server)
    open_tab(page, "Student vs teacher")
    panel = page.get_by_role("tabpanel", name="Student vs teacher")
    charts = panel.locator('[data-testid="stVegaLiteChart"] svg.marks')
    expect(charts).to_have_count(3)
    distances = charts.nth(0).evaluate(_DRAWN)
    # Raw as three solid lines; matched as points where it was computed: no
    # dashed line through sparse points to run above the raw curve.
    assert distances["lines"] == 3 and distances["dashed"] == 0 and distances["diamonds"] > 3
    # At the defaults the exact matching finds a nearer relabelling (tests/lib/student/test_matching.py),
    # so the caption says what the diamonds are, not that they sit on the lines.
    expect(panel).to_contain_text("Diamonds: the nearest relabelling, found by trying every one that matters")
    expect(panel).not_to_contain_text("sits on its line")
    # The loss on the line to the teacher: a log axis (ticks a decade apart) and a train/test legend.
    slices = charts.nth(2)
    ticks = slices.evaluate("""(svg) => [...svg.querySelectorAll('.role-axis')].find((a) =>
        a.querySelector('.role-axis-title text')?.textContent.startsWith('mean squared error'))
        .querySelectorAll('.role-axis-label text').length""")
    assert ticks >= 3
    legend = slices.evaluate("(svg) => [...svg.querySelectorAll('.role-legend-label text')].map((t) => t.textContent)")
    assert "train" in legend and "test" in legend
