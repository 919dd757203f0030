"""The diagnosis views on the page, at a non-default width and repeats."""

import json

import pytest

from fitlab import Config, train
from fitlab.blog import setup
from fitlab.failure.autopsy import autopsy
from fitlab.failure.fixes import VARIANTS
from fitlab.figures.tables import ledger_table
from fitlab.shared_layer.gradients import tied_gradient_ledger
from fitlab.weights import parameter_table
from tests.lib.failure.test_replay import parse_dot, red
from tests.page.helpers import charts_encoding, loss_charts, open_page, open_tab
from ui.tabs.failure.gallery import VARIANT_NAMES

SETTINGS = dict(width=7, shared_repeats=3, epochs=5)


@pytest.fixture
def app():
    at = open_page(timeout=120)
    for key, value in SETTINGS.items():
        (at.select_slider if key == "width" else at.slider)(key=key).set_value(value)
    return at


@pytest.fixture
def failing(app):
    app.checkbox(key="detach").uncheck().run()
    assert not app.exception
    return app


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_error_panel_stays_first_then_the_four_views(failing):
    kinds = [type(e).__name__ for e in failing.main]
    assert kinds.index("Error") < kinds.index("Header")
    assert [s.value for s in failing.subheader][:4] == [
        "1. Version ledger", "2. The labels' autograd graph", "3. Anomaly trace",
        "4. The blog's “more vivid example”, run"]
    assert len(failing.error) == 1 and not loss_charts(failing)
    assert "Fix gallery" not in [s.value for s in failing.subheader]   # its own tab, trained when opened


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_version_ledger_view(failing):
    ledger = failing.table[0].value
    expected = ledger_table(autopsy(Config(detach=False, **SETTINGS)).ledger)
    assert ledger.equals(expected)
    assert sorted(ledger.parameter[ledger.stale]) == ["last.weight", "shared.weight"]


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_graph_view_shows_the_stale_tensors(failing):
    dot = failing.get("graphviz_chart")[0].proto.spec
    nodes, _ = parse_dot(dot)
    stale = [a for a in nodes.values() if a.get("shape") == "note" and red(a)]
    assert len(stale) == 4  # last.weight once, the shared weight once per use
    assert any("[7, 1]  now v2, saved v1" in a["label"] for a in stale)
    assert any("`mat2` = `last.weight`" in m.value for m in failing.markdown)


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_anomaly_view_quotes_the_label_line_of_the_blogs_script(failing):
    trace = next(c.value for c in failing.code if c.value.startswith('File "blog.py"'))
    assert "in get_label\n    return net(X).reshape((-1, 1))" in trace
    assert "fitlab" not in trace and "module.py" not in trace
    assert any("The same line as *saved here* above." in m.value for m in failing.markdown)


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_fix_gallery_view(failing):
    open_tab(failing, "Fix gallery", key="failure_view")
    assert not failing.exception
    assert failing.error[0].value.startswith("**`loss.backward()` raised")   # the lesson's first screen stays
    table = failing.table[0].value
    assert list(table.variant) == [VARIANT_NAMES[v.key] for v in VARIANTS]
    message = train(Config(detach=False, **SETTINGS)).error.message
    assert table.outcome[0] == f"RuntimeError: {message}"
    assert table.outcome[1].startswith("trains: final train MSE")


GRADIENTS = "The shared layer's gradients"


def test_tied_gradient_view_when_detached(app):
    open_tab(app, GRADIENTS)
    assert not app.exception
    assert "Tied-gradient ledger" in [s.value for s in app.subheader]
    summary = app.table[0].value
    expected = tied_gradient_ledger(Config(**SETTINGS))
    assert len(summary) == expected.uses + 2
    assert any(f"**{expected.uses} uses**" in m.value for m in app.markdown)
    assert expected.max_difference > 0   # width 7, 3 uses: float32 sums in another order
    assert any(f"differ by at most **{expected.max_difference:.3g}**" in m.value for m in app.markdown)
    app.toggle(key="gradients_entries").set_value(True).run()
    assert app.dataframe[-1].value.equals(expected.table)


def test_the_ledger_says_exactly_equal_only_when_it_is():
    at = open_page()
    open_tab(at, GRADIENTS)
    exact = tied_gradient_ledger(Config())
    assert exact.max_difference == 0   # defaults: the sum and .grad agree bit for bit
    assert any("`.grad` are **exactly equal**" in m.value for m in at.markdown)
    assert not any("at most" in m.value for m in at.markdown)


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_the_student_table_says_no_step_touched_it_when_the_first_backward_failed(failing):
    config = Config(detach=False, **SETTINGS)
    run = train(config)
    assert (run.error.epoch, run.error.batch) == (1, 1)
    # What the table shows is the student exactly as the re-init left it.
    assert run.student_params.equals(parameter_table(setup(config).student.layer_arrays(), config.shared_repeats))
    captions = [c.value for c in failing.caption]
    assert any("no SGD step ever changed these weights" in c for c in captions)


def test_tying_comparison(app):
    open_tab(app, GRADIENTS)
    app.toggle(key="gradients_compare_tying").set_value(True).run()
    assert not app.exception
    assert len(loss_charts(app)) == 1  # the run's own
    (tying,) = charts_encoding(app, "strokeDash", "student")  # tied against untied
    assert json.loads(tying.proto.spec)["encoding"]["y"]["scale"]["type"] == "log"  # the page's one default
    counts = app.table[-1].value.set_index("student")["parameters"]
    assert counts["untied"] - counts["tied"] == 2 * (7 * 7 + 7)


def test_no_shared_layer(app):
    open_tab(app, GRADIENTS)
    app.slider(key="shared_repeats").set_value(0).run()
    assert not app.exception
    assert any("no shared layer" in i.value for i in app.info)


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_diagnosis_reruns_come_from_the_cache(failing, monkeypatch):
    import ui.tabs.failure.gallery as gallery
    import ui.tabs.failure.lesson as lesson
    import ui.tabs.failure.script as script
    import ui.tabs.gradients as gradients

    open_tab(failing, "Fix gallery", key="failure_view")
    calls = []
    for module, name in ((lesson, "autopsy"), (script, "run_isolated"), (gallery, "run_variant"),
                         (gradients, "tied_gradient_ledger")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    failing.run()
    failing.checkbox(key="detach").check().run()
    open_tab(failing, GRADIENTS)
    failing.checkbox(key="detach").uncheck().run()
    open_tab(failing, "Inside the failure", key="failure_view")
    open_tab(failing, "Fix gallery", key="failure_view")
    assert not failing.exception
    assert calls == ["tied_gradient_ledger"]  # the only view not yet seen for these settings


def test_a_closed_gradients_tab_draws_nothing_and_keeps_its_toggles(app):
    open_tab(app, GRADIENTS)
    app.toggle(key="gradients_entries").set_value(True).run()
    open_tab(app, "Training")
    assert "Tied-gradient ledger" not in [s.value for s in app.subheader]
    open_tab(app, GRADIENTS)
    assert app.toggle(key="gradients_entries").value


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_the_vivid_example_and_the_lesson_notes_on_the_page(failing):
    assert "4. The blog's “more vivid example”, run" in [s.value for s in failing.subheader]
    vivid = failing.table[-1].value
    assert list(vivid["loss.backward()"][:2]) == ["✓ runs", "✓ runs"]
    assert all(v.startswith("✗ RuntimeError") for v in vivid["loss.backward()"][2:])
    assert any("`TBackward0`" in m.value and "`AsStridedBackward0`" in m.value for m in failing.markdown)
    assert any("where the blog's reads `AsStridedBackward0`" in c.value for c in failing.caption)
    assert any("torch.set_grad_enabled(True)" in m.value for m in failing.markdown)


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_a_replay_whose_worker_dies_is_said_in_words_and_retried(monkeypatch):
    import ui.tabs.failure.script as script
    from fitlab.serving.isolation import WorkerDied

    def dies(*args, **kwargs):
        raise WorkerDied("the worker process exited (code -9)")

    real = script.run_isolated
    monkeypatch.setattr(script, "run_isolated", dies)
    page = open_page(detach="false", epochs="3")  # the fix gallery trains its fixes for as many
    assert not page.exception
    assert any("could not be run in the worker process" in w.value for w in page.warning)
    monkeypatch.setattr(script, "run_isolated", real)
    page.run()
    assert not page.exception and any("Error detected in AddmmBackward0" in m.value for m in page.markdown)
    assert not any("could not be run in the worker process" in w.value for w in page.warning)
