"""The page's engine choice and Sweep section, through AppTest."""

import json

import pytest

from fitlab import Config, train
from tests.page.helpers import open_tab


def captions(at):
    return " ".join(c.value for c in at.caption)


def test_page_says_which_engine_ran_and_offers_the_other(app, trained):
    assert app.radio(key="engine").value == "fast"
    assert "Trained by the **fast** engine" in captions(app)
    app.radio(key="engine").set_value("autograd").run()
    assert not app.exception
    assert "Trained by the **autograd** engine" in captions(app)
    run = trained(Config(engine="autograd"))
    assert app.metric[0].value == f"{run.history.train_loss.iloc[-1]:.4g}"


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_undetached_labels_run_autograd_whatever_the_engine(app):
    app.slider(key="epochs").set_value(3)  # the lesson's fix gallery trains its fixes for as many
    app.checkbox(key="detach").uncheck().run()
    assert app.radio(key="engine").value == "fast"
    assert "is at version 2; expected version 1" in app.error[0].value


def test_sweep_shows_a_heatmap_and_loads_a_cell(app):
    open_tab(app, "Sweep")
    app.text_input(key="sweep_lr").set_value("0.01, 0.03")   # 0.03: between the slider's stops
    app.text_input(key="sweep_seed").set_value("0, 3")
    app.button(key="sweep_run").click().run()
    assert not app.exception and not app.error
    specs = [json.loads(c.proto.spec) for c in app.get("vega_lite_chart")]
    heatmaps = [s for s in specs if any(layer.get("encoding", {}).get("y", {}).get("field") == "seed"
                                        for layer in s.get("layer", []))]
    assert len(heatmaps) == 1
    cell = app.selectbox(key="sweep_cell")
    assert cell.options == [
        "lr=0.01, seed=0", "lr=0.01, seed=3", "lr=0.03, seed=0", "lr=0.03, seed=3"]
    cell.select_index(3).run()
    app.button(key="sweep_load").click().run()
    assert not app.exception
    assert app.session_state["view"] == "Training"   # the loaded cell's own view
    assert app.select_slider(key="lr").value == 0.03 and app.number_input(key="seed").value == 3
    run = train(Config(lr=0.03, seed=3))
    assert app.metric[1].value == f"{run.history.test_loss.iloc[-1]:.4g}"


def test_a_bad_sweep_value_is_shown_not_raised(app):
    open_tab(app, "Sweep")
    app.text_input(key="sweep_lr").set_value("0.01, fast")
    app.button(key="sweep_run").click().run()
    assert not app.exception
    assert app.error[0].value == "This sweep cannot run:"
    assert "lr values '0.01, fast' are not allowed" in app.text[0].value


def heatmaps(at):
    return [c for c in at.get("vega_lite_chart") if '"rect"' in c.proto.spec]


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
def test_a_sweep_over_the_budget_is_refused_in_the_pages_words_and_no_old_heatmap_stays(app):
    open_tab(app, "Sweep")
    app.text_input(key="sweep_lr").set_value("0.01, 0.05").run()
    app.button(key="sweep_run").click().run()
    assert len(heatmaps(app)) == 1
    # An input error takes the old heatmap away.
    app.text_input(key="sweep_lr").set_value("fast")
    app.button(key="sweep_run").click().run()
    assert app.error and not heatmaps(app)
    app.text_input(key="sweep_lr").set_value("0.01, 0.05")
    app.button(key="sweep_run").click().run()
    assert not app.error and len(heatmaps(app)) == 1
    # The link, then 16 learning rates by 16 seeds.
    for key, value in dict(width=256, shared_repeats=3, n_train=199, batch_size=199, epochs=445).items():
        app.session_state[key] = value
    app.run()
    assert not app.error  # one run of it is within the budget
    app.text_input(key="sweep_lr").set_value(", ".join(f"{0.001 * (i + 1):g}" for i in range(16)))
    app.text_input(key="sweep_seed").set_value(", ".join(str(i) for i in range(16)))
    app.button(key="sweep_run").click().run()
    assert not app.exception
    assert len(app.error) == 1
    message = app.error[0].value
    assert message.startswith("This sweep is too much work for this page: 256 cells")
    assert "**Hidden width** 256" in message and "**Advanced › Epochs** 445" in message
    assert not heatmaps(app)


def test_a_sweep_cell_between_the_sliders_stops_loads_as_it_is(app):
    open_tab(app, "Sweep")
    app.selectbox(key="sweep_x").set_value("width").run()
    app.text_input(key="sweep_width").set_value("4, 20").run()
    app.text_input(key="sweep_seed").set_value("0, 3")
    app.button(key="sweep_run").click().run()
    assert not app.exception and not app.error
    cell = app.selectbox(key="sweep_cell")
    cell.select_index(cell.options.index("width=20, seed=3")).run()
    app.button(key="sweep_load").click().run()
    assert not app.exception and not app.error
    assert app.select_slider(key="width").value == 20 and "20" in app.select_slider(key="width").options
    assert app.metric[1].value == f"{train(Config(width=20, seed=3)).history.test_loss.iloc[-1]:.4g}"


def test_the_sweep_says_what_each_axis_compares(app):
    open_tab(app, "Sweep")
    assert "teacher, the data and the student's start stay the same" in captions(app)
    assert "not as a seed to choose" in captions(app)
    app.selectbox(key="sweep_x").set_value("width").run()
    assert "each width is a different task" in captions(app)


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
    assert len(heatmaps(app)) == 1  # drawn again from the kept result, without sweeping again



def test_every_download_is_named_by_the_runs_settings(app, monkeypatch):
    """The history's and the sweep's files carry the settings that made them,
    through the one naming function (not always fitlab-history.csv)."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
    names = []
    load = MemoryMediaFileStorage.load_and_get_id

    def recording(self, data, mimetype, kind, filename=None):
        names.append(filename)
        return load(self, data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", recording)
    app.slider(key="epochs").set_value(40).run()
    assert "fitlab-history-epochs40.csv" in names
    open_tab(app, "Sweep")
    app.text_input(key="sweep_lr").set_value("0.01, 0.05")
    app.text_input(key="sweep_seed").set_value("0, 3")
    app.button(key="sweep_run").click().run()
    assert not app.exception
    assert "fitlab-sweep-epochs40-lr-by-seed.csv" in names
