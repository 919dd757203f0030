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
    drawn = cells.evaluate_all("(paths) => paths.map((p) => [p.getAttribute('fill'), p.getAttribute('aria-label')])")
    legend = page.locator(".st-key-sweep_heatmap svg.marks .role-legend-title").text_content()
    assert "constant" in legend and "worse" in legend
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
    # Each cell coloured against the constant predictor: red worse (R² < 0), blue better; the
    # palest red or deepest blue is the best cell.
    r2 = {(round(r.lr, 6), int(r.seed)): r.test_r2 for r in got.itertuples()}
    red_minus_blue = {}
    for fill, label in drawn:
        fields = dict(part.split(": ", 1) for part in label.split("; ") if part.startswith(("lr: ", "seed: ")))
        rgb = [int(fill[i:i + 2], 16) for i in (1, 3, 5)] if fill.startswith("#") else \
            [int(v) for v in fill[fill.index("(") + 1:-1].split(",")]
        red_minus_blue[(round(float(fields["lr"]), 6), int(fields["seed"]))] = rgb[0] - rgb[2]
    assert len(red_minus_blue) == 20
    for cell, difference in red_minus_blue.items():
        assert (difference > 0) == (r2[cell] < 0), (cell, r2[cell], difference)
    best = max(r2, key=r2.get)
    assert red_minus_blue[best] == min(red_minus_blue.values())
