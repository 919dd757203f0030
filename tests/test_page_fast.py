"""The page's engine choice and Sweep section, through AppTest."""

import json
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from fitlab import Config, train
from tests.page_helpers import open_tab

APP = str(Path(__file__).resolve().parents[1] / "streamlit_app.py")


@pytest.fixture
def app():
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    return at


def captions(at):
    return " ".join(c.value for c in at.caption)


def test_page_says_which_engine_ran_and_offers_the_other(app):
    assert app.radio(key="engine").value == "fast"
    assert "Trained by the **fast** engine" in captions(app)
    app.radio(key="engine").set_value("autograd").run()
    assert not app.exception
    assert "Trained by the **autograd** engine" in captions(app)
    run = train(Config(engine="autograd"))
    assert app.metric[0].value == f"{run.history.train_loss.iloc[-1]:.4g}"


def test_undetached_labels_run_autograd_whatever_the_engine(app):
    app.checkbox(key="detach").uncheck().run()
    assert app.radio(key="engine").value == "fast"
    assert "is at version 2; expected version 1" in app.error[0].value


def test_sweep_shows_a_heatmap_and_loads_a_cell(app):
    open_tab(app, "Sweep")
    app.text_input(key="sweep_lr").set_value("0.01, 0.05")
    app.text_input(key="sweep_seed").set_value("0, 3")
    app.button(key="sweep_run").click().run()
    assert not app.exception and not app.error
    specs = [json.loads(c.proto.spec) for c in app.get("vega_lite_chart")]
    heatmaps = [s for s in specs if any(layer.get("encoding", {}).get("y", {}).get("field") == "seed"
                                        for layer in s.get("layer", []))]
    assert len(heatmaps) == 1
    cell = app.selectbox(key="sweep_cell")
    assert cell.options == [
        "lr=0.01, seed=0", "lr=0.01, seed=3", "lr=0.05, seed=0", "lr=0.05, seed=3"]
    cell.select_index(3).run()
    app.button(key="sweep_load").click().run()
    assert not app.exception
    assert app.number_input(key="lr").value == 0.05 and app.number_input(key="seed").value == 3
    run = train(Config(lr=0.05, seed=3))
    assert app.metric[1].value == f"{run.history.test_loss.iloc[-1]:.4g}"


def test_a_bad_sweep_value_is_shown_not_raised(app):
    open_tab(app, "Sweep")
    app.text_input(key="sweep_lr").set_value("0.01, fast")
    app.button(key="sweep_run").click().run()
    assert not app.exception
    assert "lr values '0.01, fast' are not allowed" in app.error[0].value


def test_a_closed_sweep_tab_draws_nothing_and_keeps_its_values(app):
    assert not app.text_input  # the Sweep tab is closed
    open_tab(app, "Sweep")
    app.text_input(key="sweep_lr").set_value("0.01, 0.05").run()
    open_tab(app, "Training")
    assert not app.text_input
    open_tab(app, "Sweep")
    assert app.text_input(key="sweep_lr").value == "0.01, 0.05"


def test_the_sweeps_result_and_picked_cell_survive_leaving_its_tab(app):
    open_tab(app, "Sweep")
    app.text_input(key="sweep_lr").set_value("0.01, 0.05")
    app.text_input(key="sweep_seed").set_value("0, 3")
    app.button(key="sweep_run").click().run()
    app.selectbox(key="sweep_cell").select_index(2).run()
    picked = app.selectbox(key="sweep_cell").value
    open_tab(app, "Training")
    open_tab(app, "Sweep")
    assert app.selectbox(key="sweep_cell").value == picked
    heatmaps = [c for c in app.get("vega_lite_chart") if '"rect"' in c.proto.spec]
    assert len(heatmaps) == 1  # drawn again from the kept result, without sweeping again
