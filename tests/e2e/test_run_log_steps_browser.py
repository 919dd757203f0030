"""Stepping a slider with the arrow keys logs where it stopped, not each step
on the way (fitlab.compare.RunLog's `settle`); a step the person stopped at
stays. A number box's quick clicks are each a run of their own."""

from __future__ import annotations

import pytest

from tools.browsing import chart_drawn_after, expect, open_page, open_tab, rerun_after, sidebar_widget

pytestmark = pytest.mark.browser


def logged_runs(page) -> list[str]:
    """The run log's entries, as the Compare tab's chart names them in its legend
    (a new run joins the overlay)."""
    tab = page.get_by_role("tab", name="Compare runs")
    svg = page.get_by_role("tabpanel", name="Compare runs").locator('[data-testid="stVegaLiteChart"] svg.marks')
    if tab.get_attribute("aria-selected") != "true":
        open_tab(page, "Compare runs", svg)
    expect(svg).to_have_count(1)
    return svg.locator(".role-legend-label text").all_text_contents()


def test_quick_clicks_each_waiting_for_its_chart_are_all_in_compare(page, server):
    open_page(page, server)
    step_up = sidebar_widget(page, "stNumberInput", "Batch size").locator('[data-testid="stNumberInputStepUp"]')
    box = page.get_by_role("spinbutton", name="Batch size")
    for size in ("6", "7", "8"):              # the next click as soon as the chart is there
        chart_drawn_after(page, step_up.click)
        expect(box).to_have_value(size)
    # The 2 s rule for every setting logged two of four.
    assert logged_runs(page) == ["#1 defaults", "#2 batch_size=6", "#3 batch_size=7", "#4 batch_size=8"]


def test_arrow_key_steps_log_where_the_slider_stopped(page, server):
    open_page(page, server)
    thumb = page.get_by_role("slider", name="Hidden width")
    thumb.focus()

    def step_four_times():                               # a person's pace: a press every 0.4 s
        for _ in range(4):
            thumb.press("ArrowRight")
            page.wait_for_timeout(400)
    rerun_after(page, step_four_times)
    expect(thumb).to_have_attribute("aria-valuetext", "9")
    runs = logged_runs(page)
    # The old page logged all five. A loaded machine's browser can sit on a key
    # press past the settle time (it is busy drawing the last run), which makes
    # one step look like a stop: so at most one in-between run, never four.
    assert runs[0] == "#1 defaults" and runs[-1].endswith(" width=9") and len(runs) <= 3, runs
    # The Compare tab ran the page again on width 9: the person stopped there,
    # so a further step is a run of its own.
    rerun_after(page, lambda: (thumb.focus(), thumb.press("ArrowRight")))
    assert logged_runs(page) == [*runs, f"#{len(runs) + 1} width=10"]
