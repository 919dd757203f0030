"""The Watch pictures read across a room (issue 44): at 1280×720 every
picture at least 160 px each way, a weight matrix's row 160 px, and no
picture's subtitle cut short."""

from __future__ import annotations

import pytest

from tools.browsing import open_page, open_watch

pytestmark = pytest.mark.browser

_SIZES = """(root) => [...root.querySelectorAll('svg.marks')].map((svg) => {
    const box = svg.getBoundingClientRect();
    const rects = [...svg.querySelectorAll('g.mark-rect path')].map((p) => p.getBoundingClientRect());
    const widest = rects.length ? Math.max(...rects.map((r) => r.right)) - Math.min(...rects.map((r) => r.left)) : 0;
    const cut = [...svg.querySelectorAll('.role-title text, .role-title-subtitle text')]
        .some((t) => t.textContent.includes('…'));
    return {width: box.width, height: box.height, rects: widest, cut};
})"""


def test_every_watch_picture_is_at_least_160_px_and_uncut(pages, server):
    with pages.page(viewport={"width": 1280, "height": 720}) as page:
        open_page(page, server)
        open_watch(page)
        pictures = page.locator(".st-key-watch_pictures").evaluate(_SIZES)
        assert len(pictures) == 6
        for picture in pictures:
            assert picture["width"] >= 160 and picture["height"] >= 160, picture
            assert not picture["cut"], picture
        for name in ("change", "weights"):      # the heatmaps: their matrices' drawn width
            (heatmap,) = page.locator(f".st-key-watch_{name}").evaluate(_SIZES)
            assert heatmap["rects"] >= 160, (name, heatmap)
