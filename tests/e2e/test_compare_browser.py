"""Compare runs in the browser: 13 runs, so the log drops one and says so;
each picked run's lines in a colour of its own; a table of final losses and
R², in a grid that sorts."""

from __future__ import annotations

import pytest

from fitlab import Config, train
from fitlab.runlog import describe_changes

from .browsing import expect, open_page, rerun_after, wait_idle
from .test_screens import make_runs

pytestmark = pytest.mark.browser

_LINE_COLOURS = """(svg) => [...svg.querySelectorAll('.mark-line path')].map((p) => p.getAttribute('stroke'))"""


def test_each_run_its_own_colour_a_sortable_table_and_a_dropped_run_named(page, server):
    open_page(page, server)
    make_runs(page, 12)                                  # 13 runs: the log keeps 12
    rerun_after(page, lambda: page.get_by_role("tab", name="Compare runs").click())
    panel = page.get_by_role("tabpanel", name="Compare runs")
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
        final = train(config).history.iloc[-1]
        assert float(row[2]) == pytest.approx(final.test_loss, rel=1e-3)
        assert float(row[1]) == pytest.approx(final.train_loss, rel=1e-3)


def test_the_sweep_names_its_axes_and_downloads_as_csv(page, server, tmp_path):
    import pandas as pd

    import fitlab
    from fitlab.sweeps import final_losses

    open_page(page, server)
    # Waits on what the open tab draws, not on seeing its rerun start: in two of six
    # full runs beside the other worker, waiting for the rerun to be seen timed out.
    tab = page.get_by_role("tab", name="Sweep")
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    panel = page.get_by_role("tabpanel", name="Sweep")
    expect(panel.get_by_role("button", name="Run the sweep")).to_be_visible()
    wait_idle(page)
    rerun_after(page, lambda: panel.get_by_role("button", name="Run the sweep").click())
    expect(panel.get_by_role("heading", name="Final test MSE by lr and seed")).to_be_visible()
    cells = page.locator('.st-key-sweep_heatmap svg.marks g.mark-rect.role-mark path')
    expect(cells).to_have_count(20)
    fills = cells.evaluate_all("(paths) => paths.map((p) => p.getAttribute('fill'))")
    assert len(set(fills)) >= 15                      # ranks: nearly every cell a colour of its own
    with page.expect_download() as download:
        page.locator(".st-key-download_sweep button").click()
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    got = pd.read_csv(path)
    lrs, seeds = sorted(got.lr.unique()), sorted(got.seed.unique())
    expected = final_losses(fitlab.sweep(Config(), lr=lrs, seed=[int(s) for s in seeds]), ["lr", "seed"])
    merged = got.merge(expected, on=["lr", "seed"], suffixes=("", "_torch"))
    assert len(merged) == 20
    assert (merged.test_loss - merged.test_loss_torch).abs().max() <= 1e-6 * merged.test_loss_torch.abs().max()
