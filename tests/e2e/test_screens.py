"""Screens a person uses, checked by what the browser drew: the sweep, the
controls' steps, and the page at phone size (Compare runs with a full run
log: test_full_run_log.py)."""

from __future__ import annotations

import re

import pytest

from .browsing import browser_page, expect, open_page, open_tab, rerun_after


def test_clicking_a_sweep_cell_opens_it_as_the_current_run(page, server):
    open_page(page, server)
    panel = page.get_by_role("tabpanel", name="Sweep")
    open_tab(page, "Sweep", panel.get_by_role("button", name="Run the sweep"))
    rerun_after(page, lambda: panel.get_by_role("button", name="Run the sweep").click())
    cells = page.locator('.st-key-sweep_heatmap svg.marks g.mark-rect.role-mark path')
    expect(cells).to_have_count(20)   # 5 lr × 4 seeds
    # The heatmap's x labels are upright: the label text is not rotated.
    angles = page.locator('.st-key-sweep_heatmap svg.marks .role-axis-label text').evaluate_all(
        "(texts) => texts.map((t) => t.getAttribute('transform') || '')")
    assert not any("rotate" in a for a in angles), angles
    # Seeds are drawn top down 3, 2, 1, 0 and lr across 0.001 … 0.1: the
    # top cell of the fourth column is lr=0.03, seed=3.
    boxes = cells.evaluate_all("(paths) => paths.map((p) => p.getBoundingClientRect().toJSON())")
    top = min(b["y"] for b in boxes)
    lefts = sorted({round(b["x"]) for b in boxes})
    target = next(i for i, b in enumerate(boxes) if b["y"] == top and round(b["x"]) == lefts[3])
    rerun_after(page, lambda: cells.nth(target).click())
    expect(page.get_by_role("tab", name="Training")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("spinbutton", name="Learning rate")).to_have_value("0.03")
    expect(page).to_have_url(re.compile(r"[?&]seed=3\b"))


def test_the_controls_step_where_it_matters(page, server):
    open_page(page, server)
    box = page.get_by_role("spinbutton", name="Learning rate")
    step_up = page.locator('[data-testid="stSidebar"] [data-testid="stNumberInput"]',
                           has_text="Learning rate").locator('[data-testid="stNumberInputStepUp"]')
    rerun_after(page, lambda: step_up.click())
    expect(box).to_have_value("0.02")
    rerun_after(page, lambda: step_up.click())
    expect(box).to_have_value("0.05")
    # The width slider: every width to 16, then one key press from 16 is 24.
    thumb = page.get_by_role("slider", name="Hidden width")
    rerun_after(page, lambda: (thumb.focus(), *[thumb.press("ArrowRight") for _ in range(11)]))
    expect(thumb).to_have_attribute("aria-valuetext", "16")
    rerun_after(page, lambda: thumb.press("ArrowRight"))
    expect(page).to_have_url(re.compile(r"[?&]width=24\b"))


PHONE = {"width": 390, "height": 844}


@pytest.fixture
def phone(browser):
    """A page the size of a phone's screen, touch and all."""
    with browser_page(browser, viewport=PHONE, is_mobile=True, has_touch=True) as page:
        yield page


def within_the_screen(locator) -> None:
    """Every element `locator` finds lies inside the phone's width."""
    locator.first.wait_for()
    edges = locator.evaluate_all(
        "(els) => els.map((e) => { const r = e.getBoundingClientRect(); return [r.left, r.right]; })")
    assert edges and all(left >= 0 and right <= PHONE["width"] for left, right in edges), edges


def test_the_page_fits_a_phone(phone, server):
    open_page(phone, server)
    # Nothing scrolls sideways: not the page, not the tab bar (it wraps).
    phone.wait_for_function("""() => {
        const bar = document.querySelector('[role="tablist"]');
        return bar && bar.scrollWidth <= bar.clientWidth; }""")
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    within_the_screen(phone.get_by_role("tab"))
    expect(phone.get_by_role("tab", name="Sweep")).to_be_visible()
    # The intro's control is in the closed sidebar: it says how to open it,
    # and links the lesson itself.
    expect(phone.get_by_test_id("stExpandSidebarButton")).to_be_visible()
    lesson = phone.get_by_role("link", name="the lesson")
    expect(lesson).to_be_visible()
    open_page(phone, f"{server}/{lesson.get_attribute('href')}")
    expect(phone.locator('[data-testid="stAlert"]', has_text="loss.backward()")).to_have_count(1)


def test_the_lesson_reads_on_a_phone(phone, server):
    open_page(phone, f"{server}/?detach=false")
    # The fix gallery, in its tab: each variant a block, its outcome and verdict on screen.
    cells = phone.locator(".st-key-fix_gallery td")
    open_tab(phone, "Fix gallery", cells.first)
    expect(cells.first).to_be_visible()
    phone.wait_for_function("""() => [...document.querySelectorAll('.st-key-fix_gallery td')]
        .every((td) => getComputedStyle(td).display === 'block')""")
    within_the_screen(cells)
    expect(phone.locator(".st-key-fix_gallery tr", has_text="RuntimeError").first).to_be_visible()
    # Torch's long messages wrap instead of running off in one line.
    phone.get_by_text("Torch's messages in full").click()
    message = phone.locator('[data-testid="stExpander"]', has_text="Torch's messages in full").locator("pre").first
    expect(message).to_contain_text("one of the variables needed for gradient computation")
    assert message.evaluate("(p) => p.scrollWidth <= p.clientWidth")
