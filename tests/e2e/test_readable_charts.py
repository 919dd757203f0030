"""Readable across a room (issue 44), read from the charts as drawn at
1280×720: every axis label and title, legend and subtitle at least 14 px,
in a colour with at least 4.5:1 contrast on the page's white (WCAG AA)."""

from __future__ import annotations

import pytest

from tools.browsing import expect, open_page, open_watch

pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1280, "height": 720}
# Every text of the charts' axes, legends and titles: its size and fill as drawn.
_GUIDE_TEXT = """(root) => [...root.querySelectorAll(
    'svg.marks .role-axis text, svg.marks .role-legend text, svg.marks .role-title text')]
    .filter((t) => t.textContent.trim())
    .map((t) => [t.textContent, parseFloat(t.getAttribute('font-size') || getComputedStyle(t).fontSize),
                 t.getAttribute('fill') || getComputedStyle(t).fill])"""


def luminance(colour: str) -> float:
    if colour.startswith("#"):
        channels = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    else:
        channels = [int(float(v)) for v in colour[colour.index("(") + 1:-1].split(",")[:3]]
    linear = [c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_on_white(colour: str) -> float:
    return 1.05 / (luminance(colour) + 0.05)


def unreadable(page) -> list:
    """The charts' guide texts drawn under 14 px or under 4.5:1 on white."""
    texts = page.locator("body").evaluate(_GUIDE_TEXT)
    assert texts, "no chart text drawn"
    return [t for t in texts if t[1] < 14 or contrast_on_white(t[2]) < 4.5]


def test_the_loss_chart_and_the_watch_pictures_read_across_a_room(pages, server):
    with pages.page(viewport=PROJECTOR) as page:
        open_page(page, server)
        expect(page.locator(".st-key-loss_chart svg.marks")).to_be_visible()
        assert unreadable(page) == []
        open_watch(page)
        assert unreadable(page) == []
