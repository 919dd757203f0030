"""Browser history you can trust (issue 32): one entry per deliberate change,
holding what the person chose, and Back returns to the previous screen."""

from __future__ import annotations

import pytest

from tools.browsing import expect, open_tab, rerun_after, sidebar_widget, wait_idle
from tools.browsing import open_page as open_any_page

pytestmark = pytest.mark.browser


@pytest.fixture
def page(fresh_page):
    """Each test walks Back through a tab of its own: a reused tab's history holds the tests before."""
    return fresh_page


def open_page(page, url: str) -> None:
    """Open the page and wait for its history handling (ui/browser.py's script, drawn with the sidebar):
    in a full CI run on a busy machine a change made before it ran replaced the first entry."""
    open_any_page(page, url)
    page.wait_for_function("() => window.fitlabHistory === true")


def history_length(page) -> int:
    return page.evaluate("() => history.length")


def test_one_lr_step_is_one_entry_and_back_shows_the_value_before(page, server):
    open_page(page, server)
    entries = history_length(page)
    lr = page.get_by_role("slider", name="Learning rate")
    rerun_after(page, lambda: (lr.focus(), lr.press("ArrowRight")))
    expect(lr).to_have_attribute("aria-valuetext", "0.02")
    assert "lr=0.02" in page.url
    page.wait_for_function(f"() => history.length === {entries + 1}")
    rerun_after(page, page.go_back)
    expect(lr).to_have_attribute("aria-valuetext", "0.01")
    assert "lr=" not in page.url


def test_a_slider_move_and_detach_are_entries_back_walks_through(page, server):
    open_page(page, server)
    entries = history_length(page)
    width = page.get_by_role("slider", name="Hidden width")
    rerun_after(page, lambda: (width.focus(), width.press("ArrowRight")))
    expect(width).to_have_attribute("aria-valuetext", "6")
    detach = sidebar_widget(page, "stCheckbox", "Detach the labels")
    rerun_after(page, lambda: detach.locator("label").click())
    expect(detach.locator("input")).not_to_be_checked()
    # The entry is pushed by the page's script as the URL changes, which can come after the
    # rerun is seen on a busy machine: wait for it, as the quick-clicks test does.
    page.wait_for_function(f"() => history.length === {entries + 2}")   # today: replaced, no entry added
    assert history_length(page) == entries + 2
    rerun_after(page, page.go_back)                # back to width 6 with the labels detached
    expect(detach.locator("input")).to_be_checked()
    expect(width).to_have_attribute("aria-valuetext", "6")
    assert page.url.startswith(server)
    rerun_after(page, page.go_back)                # back to the defaults, still in the app
    expect(width).to_have_attribute("aria-valuetext", "5")
    assert "width=" not in page.url and page.url.startswith(server)


def test_five_quick_lr_presses_are_five_stops_and_back_shows_only_stops(page, server):
    open_page(page, server)
    lr = page.get_by_role("slider", name="Learning rate")
    lr.focus()
    for _ in range(5):                  # quick presses: none waits for the page's run
        lr.press("ArrowRight")
    expect(lr).to_have_attribute("aria-valuetext", "0.5")    # 0.01 → 0.02 → 0.05 → 0.1 → 0.2 → 0.5
    wait_idle(page)
    shown = []
    while lr.get_attribute("aria-valuetext") != "0.01" and len(shown) < 5:
        rerun_after(page, page.go_back)  # each entry a stop the person passed, never a value between
        shown.append(lr.get_attribute("aria-valuetext"))
    assert shown[-1] == "0.01" and set(shown) <= {"0.01", "0.02", "0.05", "0.1", "0.2"}, shown
    assert shown == sorted(shown, key=float, reverse=True) and page.url.startswith(server)


def test_the_lesson_link_keeps_the_session_and_its_runs(page, server):
    open_page(page, server)
    width = page.get_by_role("slider", name="Hidden width")
    rerun_after(page, lambda: (width.focus(), width.press("ArrowRight")))
    expect(width).to_have_attribute("aria-valuetext", "6")
    entries = history_length(page)
    page.evaluate("() => { window.fitlabSameDocument = true; }")
    rerun_after(page, lambda: page.locator(".st-key-intro a", has_text="the lesson").click())
    expect(sidebar_widget(page, "stCheckbox", "Detach the labels").locator("input")).not_to_be_checked()
    assert "detach=false" in page.url and "width=6" in page.url
    assert page.evaluate("() => window.fitlabSameDocument === true")   # today: a reload, a new session
    assert history_length(page) == entries + 1
    open_tab(page, "Compare runs", page.locator(".st-key-compare_clear"))
    expect(page.get_by_role("button", name="Remove #2 width=6")).to_be_visible()   # the runs before the link
    expect(page.get_by_role("button", name="Remove #1 defaults")).to_be_visible()


def test_back_after_a_sweep_cell_returns_to_the_settings_before_it_whole(page, server):
    open_page(page, f"{server}/?lr=0.02&seed=1&width=6")
    page.locator('[data-testid="stSidebar"] [data-testid="stExpander"] summary', has_text="Advanced").click()
    lr, seed = page.get_by_role("slider", name="Learning rate"), page.get_by_role("spinbutton", name="Seed")
    expect(seed).to_have_value("1")
    width = page.get_by_role("slider", name="Hidden width")
    panel = page.get_by_role("tabpanel", name="Sweep")
    open_tab(page, "Sweep", panel.get_by_role("button", name="Run the sweep"))
    rerun_after(page, lambda: panel.get_by_role("button", name="Run the sweep").click())
    cell = page.locator('.st-key-sweep_heatmap svg.marks g.mark-rect.role-mark path[aria-label^="lr: 0.1; seed: 3;"]')
    entries = history_length(page)
    rerun_after(page, cell.click)                  # the cell lr 0.1, seed 3: two settings at once
    expect(lr).to_have_attribute("aria-valuetext", "0.1")
    expect(seed).to_have_value("3")
    assert "lr=0.1" in page.url and "seed=3" in page.url and "width=6" in page.url
    assert history_length(page) == entries + 1     # today: two, lr=0.02&seed=3 between
    rerun_after(page, page.go_back)
    expect(lr).to_have_attribute("aria-valuetext", "0.02")   # today: lr 0.02 with seed 3, half applied
    expect(seed).to_have_value("1")
    expect(width).to_have_attribute("aria-valuetext", "6")
    assert "lr=0.02" in page.url and "seed=1" in page.url and "width=6" in page.url


def test_back_after_a_sweep_cell_returns_to_the_sweep_tab(page, server):
    open_page(page, server)
    panel = page.get_by_role("tabpanel", name="Sweep")
    open_tab(page, "Sweep", panel.get_by_role("button", name="Run the sweep"))
    rerun_after(page, lambda: panel.get_by_role("button", name="Run the sweep").click())
    cell = page.locator('.st-key-sweep_heatmap svg.marks g.mark-rect.role-mark path[aria-label^="lr: 0.1; seed: 3;"]')
    rerun_after(page, cell.click)                  # the cell opens on its Training tab
    expect(page.get_by_role("tab", name="Training")).to_have_attribute("aria-selected", "true")
    assert "view=" not in page.url and "lr=0.1" in page.url   # the first tab: a clean URL
    rerun_after(page, page.go_back)
    expect(page.get_by_role("tab", name="Sweep")).to_have_attribute("aria-selected", "true")  # today: Training
    expect(panel.locator(".st-key-sweep_heatmap svg.marks")).to_be_visible()
    assert "view=Sweep" in page.url and "lr=" not in page.url
    page.reload()                                  # a reload, or the link shared, opens the same tab
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
    expect(page.get_by_role("tab", name="Sweep")).to_have_attribute("aria-selected", "true")
