"""The sweep in the browser: its heatmap names its axes and downloads as a
CSV of torch's own final losses (Compare runs with a full run log:
test_full_run_log.py)."""

from __future__ import annotations

import pytest

from fitlab import Config
from tools.browsing import expect, open_page, open_tab, rerun_after

pytestmark = pytest.mark.browser


def test_the_sweep_names_its_axes_and_downloads_as_csv(page, server, tmp_path):
    import pandas as pd

    import fitlab
    from fitlab.sweeps import final_losses

    open_page(page, server)
    panel = page.get_by_role("tabpanel", name="Sweep")
    open_tab(page, "Sweep", panel.get_by_role("button", name="Run the sweep"))
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
