"""The Fix gallery's verdicts in view (issue 44): at 1280×720 and 1440×900
the table fits its column, every verdict cell inside it, with no sideways
scrolling."""

from __future__ import annotations

import pytest

from tools.browsing import open_page, open_tab

pytestmark = pytest.mark.browser

GALLERY = ".st-key-fix_gallery"
_BOXES = """(gallery) => {
    const column = gallery.getBoundingClientRect();
    const scrollers = [...gallery.querySelectorAll('*')].filter((e) => e.scrollWidth > e.clientWidth + 1
        && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX));
    const verdicts = [...gallery.querySelectorAll('tbody tr')].map((r) => r.cells[3].getBoundingClientRect());
    return {left: column.left, right: column.right, scrollers: scrollers.length,
            verdicts: verdicts.map((v) => [v.left, v.right])};
}"""


@pytest.mark.parametrize("size", [{"width": 1280, "height": 720}, {"width": 1440, "height": 900}],
                         ids=["1280", "1440"])
def test_every_verdict_is_inside_the_column_without_sideways_scrolling(pages, server, size):
    with pages.page(viewport=size) as page:
        open_page(page, f"{server}/?detach=false&epochs=20")
        open_tab(page, "Fix gallery", page.locator(f"{GALLERY} tbody tr").first)
        boxes = page.locator(GALLERY).evaluate(_BOXES)
        assert boxes["verdicts"], boxes
        assert boxes["scrollers"] == 0, boxes
        for left, right in boxes["verdicts"]:
            assert boxes["left"] <= left and right <= boxes["right"] + 0.5, (left, right, boxes)
