"""Blank cells blank (issue 44): the parameter tables' padding past a layer's
inputs read "None" on a projector.

st.dataframe draws its cells on a canvas (glide data grid); its accessible
grid in the DOM reads empty for a blank cell and for "None" alike. So the test
records every string the page draws on a canvas, by wrapping fillText and
strokeText before the page's own scripts run, and reads that."""

from __future__ import annotations

import pytest

from fitlab import Config
from fitlab.weights import parameter_matrix
from tools.browsing import TABLE, browser_page, expect, open_page

pytestmark = pytest.mark.browser  # on the suite's shared server, as the other browser tests

_RECORD_DRAWN_TEXT = """() => {
    window.__drawn = [];
    for (const name of ['fillText', 'strokeText']) {
        const draw = CanvasRenderingContext2D.prototype[name];
        CanvasRenderingContext2D.prototype[name] = function (text, ...rest) {
            window.__drawn.push(String(text));
            return draw.call(this, text, ...rest);
        };
    }
}"""
_A_WEIGHT_DRAWN = "() => window.__drawn.some((text) => /^-?\\d+\\.\\d{4}$/.test(text))"
_ALL_DRAWN = "(wanted) => wanted.every((text) => window.__drawn.includes(text))"
MISSING = {"None", "none", "nan", "NaN", "null", "undefined", "<NA>"}


def test_the_parameter_tables_draw_their_padding_blank_and_their_weights_as_numbers(browser, server, trained):
    # The default net's hidden layers take 5 inputs, the first 10: "in 5".."in 9"
    # are padding for every row but the first layer's.
    run = trained(Config())
    with browser_page(browser, viewport={"width": 1280, "height": 720}) as page:
        page.add_init_script(f"({_RECORD_DRAWN_TEXT})()")
        open_page(page, f"{server}/")
        expect(page.locator(TABLE)).to_have_count(2)  # the teacher's and the student's
        for table in page.locator(TABLE).all():
            table.scroll_into_view_if_needed()  # the grid draws only what is in view
            page.wait_for_function(_A_WEIGHT_DRAWN)
        assert not MISSING & drawn_text(page), sorted(MISSING & drawn_text(page))
        # Every weight of each table's first and last rows, as the grid's %.4f writes them.
        for params in (run.teacher_params, run.student_params):
            matrix = parameter_matrix(params)
            assert matrix.isna().to_numpy().any()  # there is padding to draw
            shown = [f"{w:.4f}" for w in [*matrix.iloc[0].dropna(), *matrix.iloc[-1].dropna()]]
            page.wait_for_function(_ALL_DRAWN, arg=shown)
        assert not MISSING & drawn_text(page), sorted(MISSING & drawn_text(page))


def drawn_text(page) -> set[str]:
    """Every string the page has drawn on a canvas so far."""
    return set(page.evaluate("() => window.__drawn"))
