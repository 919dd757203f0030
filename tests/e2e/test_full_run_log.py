"""Compare runs with a full run log, in the browser: at 12 runs the overlay
stays readable; at 13 the log drops one and says so, each picked run's lines
in a colour of its own, a table of final losses and R², in a grid that sorts.

One page builds the log for both tests (`run_log`): each test built its own
before, 11 and 12 runs one after the other, 29 s and 36 s of the browser
suite's 466 s (c700743, load about 5)."""

from __future__ import annotations

import pytest

from fitlab import Config
from fitlab.compare import describe_changes
from tools.browsing import expect, open_page, open_tab, rerun_after, wait_idle
from ui.words import SETTING_WORDS

pytestmark = pytest.mark.browser

# The drawn size of the plot itself (its y grid), and the legend's entries,
# of the Vega chart in the open tab.
_OVERLAY_SIZES = """(panel) => {
    const svg = panel.querySelector('[data-testid="stVegaLiteChart"] svg.marks');
    const grid = svg.querySelector('.role-axis-grid').getBoundingClientRect();
    const labels = [...svg.querySelectorAll('.role-legend-label text')];
    const chart = svg.getBoundingClientRect();
    return {plotWidth: grid.width, plotHeight: grid.height, chartHeight: chart.height,
            legend: labels.map((t) => t.textContent),
            legendBottom: Math.max(...labels.map((t) => t.getBoundingClientRect().bottom)),
            chartBottom: chart.bottom};
}"""
_LINE_COLOURS = """(svg) => [...svg.querySelectorAll('.mark-line path')].map((p) => p.getAttribute('stroke'))"""


class RunLog:
    """One browser page whose session's run log grows as the tests ask."""

    def __init__(self, page, server: str):
        self.page, self.runs = page, 1
        open_page(page, server)                          # run #1: the defaults

    def grow_to(self, runs: int) -> None:
        """Runs until the log has had `runs` of them, then the Compare tab open.
        Each run is a step of its own: a width step, then a step of the
        shared layer's uses, and so on, however quickly they follow (only a
        setting stepped again at once passes through a run:
        tests/lib/test_runlog_steps.py)."""
        if runs < self.runs:
            raise RuntimeError(f"the shared page has made {self.runs} runs already, more than {runs}: "
                               "its tests must run in file order")
        page = self.page
        if runs > self.runs:
            training = page.get_by_role("tab", name="Training")
            if training.get_attribute("aria-selected") != "true":
                open_tab(page, "Training")   # drawn on every tab: its rerun shows as Compare's going
                expect(page.locator(".st-key-compare_clear")).to_have_count(0)
                wait_idle(page)
            width = page.get_by_role("slider", name="Hidden width")
            uses = page.get_by_role("slider", name=SETTING_WORDS["shared_repeats"].label)
            while self.runs < runs:
                thumb = width if self.runs % 2 else uses     # run #2 is a width step
                rerun_after(page, lambda: (thumb.focus(), thumb.press("ArrowRight")))
                self.runs += 1
        compare = page.get_by_role("tab", name="Compare runs")
        if compare.get_attribute("aria-selected") != "true":
            open_tab(page, "Compare runs", page.locator(".st-key-compare_clear"))


@pytest.fixture(scope="module")
def run_log(pages, server):
    with pages.page(viewport={"width": 1400, "height": 1000}) as page:
        yield RunLog(page, server)


def test_compare_stays_readable_with_the_full_run_log(run_log, server):
    run_log.grow_to(12)                                  # the log's 12 runs, all kept
    panel = run_log.page.get_by_role("tabpanel", name="Compare runs")
    expect(panel.locator('[data-testid="stVegaLiteChart"] svg.marks')).to_have_count(1)
    sizes = panel.evaluate(_OVERLAY_SIZES)
    assert len(sizes["legend"]) == 12 and sizes["legend"][0] == "#1 defaults"
    assert sizes["plotHeight"] >= 340, sizes        # the spec's 360, whatever the legend
    assert sizes["plotWidth"] >= 600, sizes
    assert sizes["legendBottom"] <= sizes["chartBottom"] + 1, sizes  # no entry cut off


def test_each_run_its_own_colour_a_sortable_table_and_a_dropped_run_named(run_log, server, trained):
    run_log.grow_to(13)                                  # 13 runs: the log keeps 12
    panel = run_log.page.get_by_role("tabpanel", name="Compare runs")
    expect(panel).to_contain_text("Dropped from the log, oldest first: #1 defaults.")
    svg = panel.locator('[data-testid="stVegaLiteChart"] svg.marks')
    expect(svg).to_have_count(1)
    strokes = svg.evaluate(_LINE_COLOURS)
    assert len(strokes) == 24                            # 12 runs × (train, test)
    assert len(set(strokes)) == 12                       # one colour per run, shared by its two lines
    # The table: a sortable grid (st.dataframe), one row per picked run, torch's final losses.
    grid = panel.locator('[data-testid="stDataFrame"] table[role="grid"]')
    expect(grid).to_have_attribute("aria-rowcount", "13")   # a header and 12 runs
    headers = grid.locator("thead th").all_text_contents()
    assert headers == ["run", "final train MSE", "final test MSE", "train R²", "test R²"]
    rows = grid.locator("tbody tr").evaluate_all(
        "(rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent))")
    assert len(rows) == 12
    for number, row in enumerate(rows, start=2):        # #2 … #13: width, then the layer's uses, in turn
        config = Config(width=5 + number // 2, shared_repeats=2 + (number - 1) // 2)
        assert row[0] == f"#{number} {describe_changes(config)}"
        final = trained(config).history.iloc[-1]
        assert float(row[2]) == pytest.approx(final.test_loss, rel=1e-3)
        assert float(row[1]) == pytest.approx(final.train_loss, rel=1e-3)
