"""The prediction-against-label pictures (issue 44), as drawn: one unit as
long across as up, so the perfect student's dashed line runs at 45°; the
Student tab's square plot spans the same range both ways; at other
settings too; a diverged run's empty scatter says why."""

from __future__ import annotations

import re

import pytest

from tools.browsing import expect, open_page, open_tab, open_watch

pytestmark = pytest.mark.browser

STUDENT_SCATTER = ".st-key-prediction_chart svg.marks"
WATCH_SCATTER = ".st-key-watch_predictions svg.marks"
# The dashed line's two ends, in the picture's pixels.
_DIAGONAL = """(svg) => {
    const path = [...svg.querySelectorAll('g.mark-line path')].find((p) => p.getAttribute('stroke-dasharray'));
    return path.getAttribute('d');
}"""
_TICKS = """(svg, title) => {
    const axis = [...svg.querySelectorAll('.role-axis')].find(
        (a) => a.querySelector('.role-axis-title text')?.textContent === title);
    return [...axis.querySelectorAll('.role-axis-label text')].map((t) => t.textContent);
}"""


def slope(svg) -> float:
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", svg.evaluate(_DIAGONAL))]
    (x1, y1), (x2, y2) = numbers[:2], numbers[-2:]
    return abs(y2 - y1) / abs(x2 - x1)


@pytest.mark.parametrize("query", ["", "?width=7&lr=0.1", "?shared_repeats=0&batch_size=10"])
def test_the_perfect_students_line_runs_at_45_degrees_on_equal_axes(pages, server, query):
    with pages.page(viewport={"width": 1280, "height": 720}) as page:
        open_page(page, f"{server}/{query}")
        open_tab(page, "Student vs teacher")
        student = page.locator(STUDENT_SCATTER)
        expect(student).to_be_visible()
        assert slope(student) == pytest.approx(1, abs=0.005)   # within 0.15°: the path's 3 decimals allow 1e-4
        assert student.evaluate(_TICKS, "true label (the teacher)") == student.evaluate(
            _TICKS, "student's prediction")
        open_watch(page)
        assert slope(page.locator(WATCH_SCATTER)) == pytest.approx(1, abs=0.005)   # was 0.989 (issue 44)


def test_a_diverged_runs_empty_scatter_says_why(page, server):
    open_page(page, f"{server}/?lr=5")
    open_tab(page, "Student vs teacher")
    expect(page.locator(STUDENT_SCATTER)).to_contain_text("diverged")
