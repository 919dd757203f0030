"""The fit's quality on the page: the diverged run's warning, table, metrics
and chart, and the default run's R² and its warning."""

import json

from fitlab import Config
from tests.page.helpers import loss_charts, open_page, shown_values


def test_the_diverged_page_shows_nan_and_no_caption_that_cannot_apply(diverged):
    at = open_page(**{k: str(v) for k, v in diverged.config.changes().items()})
    assert not at.exception
    assert any("diverged at epoch 1" in w.value for w in at.warning)
    assert not any("per-batch means" in c.value for c in at.caption)
    assert not any("worse than a constant" in i.value for i in at.info)
    student = shown_values(at.dataframe[1])
    cells = set(student.to_numpy().ravel())
    assert "nan" in cells and "None" not in cells
    # Padding past the first layer's 10 inputs (width 16) is blank, not "nan".
    assert set(student.loc["first, unit 0", [f"in {c}" for c in range(10, 16)]]) == {""}
    assert [m.value for m in at.metric] == ["nan", "nan", "n/a", "n/a"]
    spec = json.loads(loss_charts(at)[0].proto.spec)
    assert spec["layer"][0]["encoding"]["x"]["scale"]["domain"] == [0, 1]


def test_the_default_page_shows_r_squared_and_the_warning(trained):
    default_run = trained(Config())
    at = open_page()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Test R²"] == f"{default_run.baseline.r_squared(default_run.history.test_loss.iloc[-1], 'test'):.2f}"
    assert any("worse than a constant" in i.value for i in at.info)
