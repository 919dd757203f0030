"""One number format on the charts' axes and whole epochs (issue 44): a
diverged run (lr 5) labelled epochs "0.0 1.0 2.0" and mixed "10,000",
"100,000,000" and "1e+12" on one axis."""

from __future__ import annotations

import re

import pytest

from tools.browsing import DRAWN_CHART, expect, open_page

pytestmark = pytest.mark.browser

_LABELS = """(svg, title) => {
    const axis = [...svg.querySelectorAll('.role-axis')].find(
        (a) => a.querySelector('.role-axis-title text')?.textContent === title);
    return [...axis.querySelectorAll('.role-axis-label text')].map((t) => t.textContent).filter((t) => t);
}"""


@pytest.mark.parametrize("query", ["?lr=5", "", "?lr=0.1&epochs=3"])
def test_the_loss_charts_epochs_are_whole_and_its_losses_one_format(page, server, query):
    open_page(page, f"{server}/{query}")
    chart = page.locator(DRAWN_CHART)
    expect(chart).to_be_visible()
    epochs = chart.evaluate(_LABELS, "epoch")
    assert epochs and all(re.fullmatch(r"\d+", e) for e in epochs), epochs
    losses = chart.evaluate(_LABELS, "mean squared error")
    assert losses and not any("," in x for x in losses), losses
    values = [float(x.replace("−", "-")) for x in losses]
    # 1e+3 and up always as a power of ten, never written out.
    assert all("e" in x for x, v in zip(losses, values) if abs(v) >= 1000), losses
