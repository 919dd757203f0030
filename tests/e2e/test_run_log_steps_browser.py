"""Compare runs holds every run the person saw, and not the steps a page
replaced before drawing them (fitlab.serving.runlog.RunLog's `only_seen`):
quick clicks, each as soon as its chart is drawn, are runs of their own; a
slider held on an arrow key logs where it stopped."""

from __future__ import annotations

import pytest

from .browsing import chart_drawn_after, expect, open_page, open_tab, rerun_after, sidebar_widget

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
    step_up = sidebar_widget(page, "stNumberInput", "Learning rate").locator('[data-testid="stNumberInputStepUp"]')
    box = page.get_by_role("spinbutton", name="Learning rate")
    for lr in ("0.02", "0.05", "0.1"):        # the next click as soon as the chart is there
        chart_drawn_after(page, step_up.click)
        expect(box).to_have_value(lr)
    # Today: two of four (a run had to stay on screen 2 s to count).
    assert logged_runs(page) == ["#1 defaults", "#2 lr=0.02", "#3 lr=0.05", "#4 lr=0.1"]


def test_a_held_arrow_key_logs_where_the_slider_stopped(page, server):
    open_page(page, server)
    thumb = page.get_by_role("slider", name="Hidden width")
    thumb.focus()

    def hold_the_key():                                  # a held key repeats every 30 ms or so
        for _ in range(4):
            thumb.press("ArrowRight")
            page.wait_for_timeout(30)
    rerun_after(page, hold_the_key)
    expect(thumb).to_have_attribute("aria-valuetext", "9")
    runs = logged_runs(page)
    # The steps on the way were replaced before they were drawn. A loaded
    # machine's browser can sit on a key press while the server draws the step
    # before, which is then on screen and kept (seen: width 7 between 5 and 9):
    # so at most one in-between run, never all three.
    assert runs[0] == "#1 defaults" and runs[-1].endswith(" width=9") and len(runs) <= 3, runs
    # Width 9 was drawn: a further step is a run of its own.
    rerun_after(page, lambda: (thumb.focus(), thumb.press("ArrowRight")))
    assert logged_runs(page) == [*runs, f"#{len(runs) + 1} width=10"]
