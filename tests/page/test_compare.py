"""The comparison view and the student-versus-teacher charts, through AppTest."""

import io
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from fitlab import Config, train
from fitlab.compare import runs_csv
from tests.page.helpers import charts_encoding, open_tab


def chart_by_colour(at, field):
    """The one chart whose colour encodes `field`, as (spec, data)."""
    found = charts_encoding(at, "color", field)
    assert len(found) == 1
    chart = found[0]
    return json.loads(chart.proto.spec), pa.ipc.open_stream(chart.proto.datasets[0].data.data).read_pandas()


def test_hidden_tabs_draw_no_charts_and_the_picks_survive_them(app):
    specs = [json.loads(c.proto.spec) for c in app.get("vega_lite_chart")]
    # The Training tab's only: its loss chart and the first screen's moving pictures (those with
    # an epoch input); Watch it learn draws its own when opened.
    loss = [s for s in specs if s.get("encoding", {}).get("color", {}).get("field") == "split"]
    moving = [s for s in specs if any(p.get("name") == "epoch" for p in s.get("params", []))]
    assert len(loss) == 1 and len(moving) == 2 and len(specs) == 3
    app.select_slider(key="width").set_value(6).run()
    open_tab(app, "Compare runs")
    app.multiselect(key="compare_picked").unselect("#1 defaults").run()
    app.slider(key="compare_smoothing").set_value(0.5).run()
    open_tab(app, "Training")
    assert not charts_encoding(app, "color", "run")
    open_tab(app, "Compare runs")
    assert app.multiselect(key="compare_picked").value == ["#2 width=6"]
    assert app.slider(key="compare_smoothing").value == 0.5


def test_two_configs_are_overlaid_and_the_combined_csv_has_both(app):
    open_tab(app, "Compare runs")
    assert app.multiselect(key="compare_picked").value == ["#1 defaults"]
    app.select_slider(key="width").set_value(6).run()
    assert not app.exception and not app.error
    picked = app.multiselect(key="compare_picked").value
    assert picked == ["#1 defaults", "#2 width=6"]
    spec, data = chart_by_colour(app, "run")
    assert set(data.run) == set(picked)
    assert spec["encoding"]["color"]["sort"] == picked
    log = app.session_state["run_log"]
    table = pd.read_csv(io.StringIO(runs_csv(log.find(picked))))
    assert set(table.run) == set(picked)
    assert set(table.width) == {5, 6}
    assert (table.groupby("run").size() == Config().epochs + 1).all()


def test_unpicking_a_run_takes_it_off_the_chart(app):
    open_tab(app, "Compare runs")
    app.select_slider(key="width").set_value(6).run()
    app.multiselect(key="compare_picked").unselect("#1 defaults").run()
    _, data = chart_by_colour(app, "run")
    assert set(data.run) == {"#2 width=6"}
    # Going back to the first config reuses its number and does not pick it again.
    app.select_slider(key="width").set_value(5).run()
    assert app.multiselect(key="compare_picked").value == ["#2 width=6"]
    assert app.multiselect(key="compare_picked").options == ["#2 width=6", "#1 defaults"]


def test_smoothing_keeps_the_raw_value_and_log_scale_switches_the_axis(app):
    open_tab(app, "Compare runs")
    spec, _ = chart_by_colour(app, "run")
    assert spec["encoding"]["y"]["scale"]["type"] == "log"   # the page's one default
    app.slider(key="compare_smoothing").set_value(0.8)
    app.toggle(key="compare_log_scale").set_value(False).run()
    spec, data = chart_by_colour(app, "run")
    assert spec["encoding"]["y"]["scale"].get("type") is None
    assert (data.loss != data.raw_loss).any()
    assert data.raw_loss.iloc[0] == data.loss.iloc[0]    # epoch 0: nothing to average yet


def test_pinned_runs_survive_clearing_the_log(app):
    open_tab(app, "Compare runs")
    for i, width in enumerate((6, 7, 8)):
        app.select_slider(key="width").set_value(width).run()
        # Looking at each run (a rerun on it): a slider stepped on at once would pass
        # through 7 (tests/lib/test_runlog_steps.py).
        app.slider(key="compare_smoothing").set_value(0.1 * (i + 1)).run()
    app.multiselect(key="compare_pinned").select("#2 width=6").run()
    app.button(key="compare_clear").click().run()
    assert not app.exception
    assert app.multiselect(key="compare_picked").options == ["#2 width=6", "#4 width=8"]
    assert app.multiselect(key="compare_picked").value == ["#2 width=6", "#4 width=8"]
    _, data = chart_by_colour(app, "run")
    assert set(data.run) == {"#2 width=6", "#4 width=8"}


def test_student_versus_teacher_charts_show_the_runs_own_data(app):
    assert not charts_encoding(app, "color", "layer")  # drawn only while its tab is open
    open_tab(app, "Student vs teacher")
    _, distances = chart_by_colour(app, "layer")
    assert set(distances.measure) == {"raw", "matched"}
    assert set(distances.layer) == {"first", "shared", "last"}
    _, slices = chart_by_colour(app, "path")
    assert set(slices.path) == {"initial student → teacher", "final student → teacher"}
    # The loss chart (Training tab, colour by split) is layered too: its constant-predictor rules.
    layered = [spec for spec in (json.loads(c.proto.spec) for c in app.get("vega_lite_chart"))
               if "layer" in spec and spec.get("encoding", {}).get("color", {}).get("field") not in ("split", "layer")]
    assert len(layered) == 1   # the prediction scatter with its y = x line (the distances: raw lines, matched points)


def test_the_distance_chart_shows_the_approach_and_says_how_far_it_got(app):
    open_tab(app, "Student vs teacher")
    spec, distances = chart_by_colour(app, "layer")
    # Relative to each layer's start, on an axis that does not start at zero.
    assert spec["encoding"]["y"]["field"] == "relative" and spec["encoding"]["y"]["scale"]["zero"] is False
    start = distances[(distances.epoch == 0) & (distances.measure == "raw")]
    assert np.allclose(start.relative, 1.0)
    run = train(Config())
    last = run.distances[run.distances.epoch == run.config.epochs].set_index("layer")
    first = run.distances[run.distances.epoch == 0].set_index("layer")
    drawn = distances[(distances.epoch == run.config.epochs) & (distances.measure == "raw")].set_index("layer")
    assert np.allclose(drawn.relative, (last.raw / first.raw)[drawn.index])
    assert (drawn.relative < 1).all()          # every layer came closer…
    assert (drawn.relative > 0.8).all()        # …by little, while the loss fell a thousandfold
    moved = 1 - np.sqrt((last.raw ** 2).sum() / (first.raw ** 2).sum())
    text = " ".join(c.value for c in app.caption)
    assert f"came {moved:.1%} closer to the teacher's" in text
    # At the defaults the exhaustive search finds a nearer relabelling, and the page says how.
    final = run.distances[run.distances.epoch == run.config.epochs]
    assert (final.matched ** 2).sum() < (final.raw ** 2).sum()
    assert "Diamonds: the nearest relabelling, found by trying every one that matters at this width." in text


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_a_failed_run_is_listed_but_has_no_student_charts(app):
    app.checkbox(key="detach").uncheck().run()
    assert not app.exception
    open_tab(app, "Compare runs", key="failure_view")
    assert app.multiselect(key="compare_picked").value == ["#1 defaults", "#2 detach=False (stopped: RuntimeError)"]
    specs = [json.loads(c.proto.spec) for c in app.get("vega_lite_chart")]
    lesson = [s for s in specs if any(p.get("name") == "moment" for p in s.get("params", []))]
    assert len(lesson) == 1                     # the lesson's opening picture, above the tabs
    kinds = {s.get("encoding", {}).get("color", {}).get("field") for s in specs if s not in lesson}
    assert kinds == {"run"}
