"""The page, driven through Streamlit's AppTest."""

import json

import pytest

import fitlab
from fitlab import Config, train
from fitlab.weights import parameter_matrix
from tests.page.helpers import loss_charts


@pytest.fixture
def train_calls(monkeypatch):
    calls = []
    real = fitlab.train

    def counting(config, **kwargs):
        calls.append(config)
        return real(config, **kwargs)

    monkeypatch.setattr(fitlab, "train", counting)
    return calls


def test_default_page_renders_chart_and_both_tables(app):
    assert not app.exception and not app.error
    assert len(loss_charts(app)) == 1
    assert len(app.dataframe) == 2
    run = train(Config())
    teacher = app.dataframe[0].value
    assert teacher.equals(parameter_matrix(run.teacher_params))
    last = run.history.iloc[-1]
    assert [m.value for m in app.metric] == [
        f"{last.train_loss:.4g}", f"{last.test_loss:.4g}",
        f"{run.baseline.r_squared(last.train_loss, 'train'):.2f}",
        f"{run.baseline.r_squared(last.test_loss, 'test'):.2f}"]
    assert app.get("download_button")


def test_sidebar_bounds_equal_configs(app):
    widths = app.select_slider(key="width").options
    assert (int(widths[0]), int(widths[-1])) == fitlab.BOUNDS["width"]
    assert (app.slider(key="epochs").min, app.slider(key="epochs").max) == fitlab.BOUNDS["epochs"]
    assert app.number_input(key="batch_size").max == Config().n_train


def test_the_settings_whose_steps_pass_through_are_the_drawn_sliders(app):
    # Compare's run log lets a slider's quick steps pass through (ui.sidebar.slid_settings), never a box's.
    from ui.sidebar import slid_settings

    drawn = {w.key for w in [*app.slider, *app.select_slider] if w.key in fitlab.BOUNDS}
    assert slid_settings() == drawn and {"width", "lr"} <= drawn and "seed" not in drawn


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_detach_off_shows_the_real_error_then_back_shows_the_chart(app):
    app.checkbox(key="detach").uncheck().run()
    assert not app.exception
    expected = train(Config(detach=False)).error.message
    assert len(app.error) == 1 and expected in app.error[0].value
    assert "[torch.FloatTensor [5, 1]]" in app.error[0].value
    assert not loss_charts(app)
    assert any("reshape" in m.value for m in app.markdown)
    app.checkbox(key="detach").check().run()
    assert not app.error and len(loss_charts(app)) == 1


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_error_follows_the_width(app):
    app.slider(key="epochs").set_value(3)  # the lesson's fix gallery trains its fixes for as many
    app.select_slider(key="width").set_value(7)
    app.checkbox(key="detach").uncheck().run()
    assert "[torch.FloatTensor [7, 1]]" in app.error[0].value


def test_a_config_seen_before_does_not_train_again(app, train_calls):
    app.run()
    assert train_calls == []
    app.select_slider(key="width").set_value(6).run()
    assert train_calls == [Config(width=6)]
    app.select_slider(key="width").set_value(5).run()
    app.select_slider(key="width").set_value(6).run()
    assert train_calls == [Config(width=6)]


def test_the_learning_rate_slides_through_one_two_five_from_1e_6_to_10(app):
    lr = app.select_slider(key="lr")
    assert lr.value == 0.01 and lr.options[:4] == ["1e-06", "2e-06", "5e-06", "1e-05"] and lr.options[-1] == "10"
    assert len(lr.options) == 22 and lr.options[12:15] == ["0.01", "0.02", "0.05"]
    lr.set_value(0.02).run()
    assert app.select_slider(key="lr").value == 0.02 and not app.exception and not app.error
    run = train(Config(lr=0.02))
    assert app.metric[0].value == f"{run.history.train_loss.iloc[-1]:.4g}"


def test_batch_size_follows_a_smaller_n_train(app):
    app.slider(key="n_train").set_value(3).run()
    assert not app.exception and not app.error
    assert app.number_input(key="batch_size").value == 3
    assert len(loss_charts(app)) == 1


def test_log_scale_toggle(app):
    # The lines are the chart's first layer.
    linear = json.loads(loss_charts(app.toggle(key="log_scale").set_value(False).run())[0].proto.spec)
    assert linear["layer"][0]["encoding"]["y"]["scale"] == {"zero": True}
    app.toggle(key="log_scale").set_value(True).run()
    spec = json.loads(loss_charts(app)[0].proto.spec)
    assert spec["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
