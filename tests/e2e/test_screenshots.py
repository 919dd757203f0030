"""The README's pictures, retaken in the real browser on request:

    FITLAB_SCREENSHOTS=1 python -m pytest tests/e2e/test_screenshots.py

Off by default, so a test run never rewrites files in docs/.
"""

from __future__ import annotations

import os

import pytest

from tools.browsing import (
    CHART,
    DOCS,
    browser_page,
    expect,
    open_page,
    open_tab,
    open_watch,
    rerun_after,
    toggle_detach,
)

pytestmark = pytest.mark.skipif(os.environ.get("FITLAB_SCREENSHOTS") != "1",
                                reason="set FITLAB_SCREENSHOTS=1 to retake the README's pictures")


@pytest.fixture
def tall_page(browser):
    """A page tall enough that nothing scrolls: Streamlit scrolls an inner
    container, which element screenshots do not follow."""
    with browser_page(browser, viewport={"width": 1400, "height": 4000}) as page:
        yield page


def test_default_page_and_error_panel(page, server):
    open_page(page, server)
    page.wait_for_selector(CHART)
    expect(page.get_by_text("Download the loss history (CSV)")).to_be_visible()
    page.screenshot(path=str(DOCS / "default-page.png"))
    toggle_detach(page)
    expect(page.locator('[data-testid="stAlert"]', has_text="loss.backward()")).to_have_count(1)
    page.screenshot(path=str(DOCS / "error-panel.png"))


def test_comparison_views(tall_page, server):
    page = tall_page
    open_page(page, server)
    width = page.get_by_role("slider", name="Hidden width")
    rerun_after(page, lambda: (width.focus(), *[width.press("ArrowRight") for _ in range(11)]))
    lr = page.get_by_role("slider", name="Learning rate")
    rerun_after(page, lambda: (lr.focus(), lr.press("ArrowRight"), lr.press("ArrowRight")))   # 0.01 → 0.05

    open_tab(page, "Compare runs")
    panel = page.get_by_role("tabpanel", name="Compare runs")
    expect(panel.locator('[data-testid="stVegaLiteChart"] svg.marks')).to_have_count(1)  # log axis by default
    panel.screenshot(path=str(DOCS / "compare-runs.png"))

    open_tab(page, "Student vs teacher")
    expect(page.get_by_text("Loss on the straight line to the teacher")).to_be_visible()
    page.get_by_role("tabpanel", name="Student vs teacher").screenshot(
        path=str(DOCS / "student-vs-teacher.png"))


def test_watch_it_learn(tall_page, server):
    page = tall_page
    open_page(page, server)
    open_watch(page)
    watch = page.locator(".st-key-watch")
    expect(watch.locator(".st-key-watch_pictures svg.marks")).to_have_count(6)
    page.locator('.fitlab-player input[data-role="epoch"]').fill("20")
    expect(page.locator('.fitlab-player [data-role="readout"]')).to_have_text("epoch 20 of 100")
    watch.screenshot(path=str(DOCS / "watch-it-learn.png"))
