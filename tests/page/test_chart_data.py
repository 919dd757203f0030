"""The page's charts carry the run's own data. Each chart's spec is built
once per run, its data sets written as Arrow IPC bytes (ui/charts.py says
why): a later view, by any session, builds no chart and converts or writes
no data set again, and what it sends is what st.vega_lite_chart sends for
the chart itself."""

from __future__ import annotations

import functools
import json
import types

import pandas as pd
import pyarrow as pa
import pytest
import streamlit as st
import streamlit.dataframe_util as dataframe_util
import streamlit.elements.vega_charts as vega_charts
from streamlit.testing.v1 import AppTest

import ui.tabs.training as training
import ui.tabs.watch as watch
from fitlab import Config, train
from fitlab.figures.charts import loss_chart
from fitlab.figures.watch_charts import watch_panels
from tests.page.helpers import open_tab, run_page

# Non-default settings: every number below depends on them.
QUERY = {"width": "6", "epochs": "12", "lr": "0.03"}
CONFIG = Config(width=6, epochs=12, lr=0.03)


@pytest.fixture
def conversions(monkeypatch):
    """How many chart data sets Streamlit has converted or written as Arrow
    IPC bytes itself so far: [count]."""
    st.cache_data.clear()
    st.cache_resource.clear()
    calls = [0]
    real = dataframe_util.convert_anything_to_arrow_bytes

    def convert(data, *args, **kwargs):
        calls[0] += 1
        return real(data, *args, **kwargs)

    streamlits = types.SimpleNamespace(**vars(dataframe_util))
    streamlits.convert_anything_to_arrow_bytes = convert
    monkeypatch.setattr(vega_charts, "dataframe_util", streamlits)
    yield calls
    st.cache_resource.clear()


def view() -> AppTest:
    """The page with its Watch it learn tab open: the loss chart (drawn on
    every tab) and the six pictures."""
    at = open_tab(run_page(120, **QUERY), "Watch it learn")
    assert not at.exception
    return at


def sent(at: AppTest) -> dict[str, pd.DataFrame]:
    """Every data set the page's charts send, by name, as the browser reads it."""
    return {d.name: pa.ipc.open_stream(d.data.data).read_pandas()
            for chart in at.get("vega_lite_chart") for d in chart.proto.datasets}


def test_later_views_build_no_chart_and_convert_no_data(conversions, monkeypatch):
    built = []

    def counted(real):
        @functools.wraps(real)  # the same name: the spec memo keys on it
        def wrapper(*args, **kwargs):
            built.append(real.__name__)
            return real(*args, **kwargs)
        return wrapper

    for module, name in ((training, "loss_chart"), (watch, "watch_panels")):
        monkeypatch.setattr(module, name, counted(getattr(module, name)))
    first = view()
    assert sorted(built) == ["loss_chart", "watch_panels", "watch_panels"]  # the glance's two, the tab's six
    first.run()
    later = view()
    again = run_page(120, **QUERY)  # the Training tab: the loss chart and the glance
    assert not again.exception and len(again.get("vega_lite_chart")) == 3
    assert conversions[0] == 0 and len(built) == 3
    assert sent(later).keys() == sent(first).keys()
    assert [c.proto for c in again.get("vega_lite_chart")] == [c.proto for c in run_page(120, **QUERY).get(
        "vega_lite_chart")]


def test_a_kept_spec_is_drawn_as_st_vega_lite_chart_draws_the_spec():
    at = AppTest.from_function(both_ways).run()
    assert not at.exception
    direct, kept, glance_like = (c.proto for c in at.get("vega_lite_chart"))
    assert kept == direct and kept.datasets
    assert json.loads(glance_like.spec)["height"] == 125 and glance_like.datasets == direct.datasets


def both_ways():
    import pandas as pd
    import streamlit as st

    from ui import charts

    def spec():
        return {"datasets": {"rows": pd.DataFrame({"epoch": [0, 1, 2], "loss": [1.0, 0.5, float("nan")]})},
                "data": {"name": "rows"}, "mark": "line",
                "encoding": {"x": {"field": "epoch", "type": "quantitative"},
                             "y": {"field": "loss", "type": "quantitative"}}}

    st.vega_lite_chart(spec(), width="stretch")
    charts.draw(spec, "a chart")
    st.vega_lite_chart({**charts.spec(spec, "a chart"), "height": 125}, width="stretch")


def test_the_charts_send_the_runs_own_numbers(conversions):
    data = sent(view())
    run = train(CONFIG)
    for panel in watch_panels(run).values():
        for name, table in panel["datasets"].items():
            pd.testing.assert_frame_equal(data[name], table.reset_index(drop=True), check_dtype=False)
    losses = loss_chart(run.history, True, run.baseline, run.diverged_at).to_dict()["datasets"]
    for name, rows in losses.items():
        pd.testing.assert_frame_equal(data[name], pd.DataFrame(rows), check_dtype=False)
    pictures = {name for panel in watch_panels(run).values() for name in panel["datasets"]}
    assert data.keys() == losses.keys() | pictures   # nothing else, nothing left out
