"""The diagnosis views on the page, at a non-default width and repeats."""

import pytest

from fitlab import Config, train
from fitlab.failure.autopsy import autopsy
from fitlab.failure.fixes import VARIANTS
from fitlab.shared_layer.gradients import tied_gradient_ledger
from tests.page_helpers import charts_encoding, loss_charts, open_page, open_tab
from tests.test_diagnosis import parse_dot, red

SETTINGS = dict(width=7, shared_repeats=3, epochs=5)


@pytest.fixture
def app():
    at = open_page(timeout=120)
    for key, value in SETTINGS.items():
        at.slider(key=key).set_value(value)
    return at


@pytest.fixture
def failing(app):
    app.checkbox(key="detach").uncheck().run()
    assert not app.exception
    return app


def test_error_panel_stays_first_then_the_four_views(failing):
    kinds = [type(e).__name__ for e in failing.main]
    assert kinds.index("Error") < kinds.index("Header")
    assert [s.value for s in failing.subheader][:4] == [
        "1. Version ledger", "2. The labels' autograd graph", "3. Anomaly trace", "4. Fix gallery"]
    assert len(failing.error) == 1 and not loss_charts(failing)


def test_version_ledger_view(failing):
    ledger = failing.table[0].value
    expected = autopsy(Config(detach=False, **SETTINGS)).ledger
    assert ledger.equals(expected)
    assert sorted(ledger.parameter[ledger.stale]) == ["last.weight", "shared (used 3×).weight"]


def test_graph_view_shows_the_stale_tensors(failing):
    dot = failing.get("graphviz_chart")[0].proto.spec
    nodes, _ = parse_dot(dot)
    stale = [a for a in nodes.values() if a.get("shape") == "note" and red(a)]
    assert len(stale) == 4  # last.weight once, the shared weight once per use
    assert any("[7, 1]  now v2, saved v1" in a["label"] for a in stale)
    assert any("`mat2` = `last.weight`" in m.value for m in failing.markdown)


def test_anomaly_view_quotes_the_label_line_of_the_blogs_script(failing):
    trace = next(c.value for c in failing.code if c.value.startswith('File "blog.py"'))
    assert "in get_label\n    return net(X).reshape((-1, 1))" in trace
    assert "fitlab" not in trace and "module.py" not in trace
    assert any("The same line as *saved here* above." in m.value for m in failing.markdown)


def test_fix_gallery_view(failing):
    table = failing.table[1].value
    assert list(table.variant) == [v.name for v in VARIANTS]
    message = train(Config(detach=False, **SETTINGS)).error.message
    assert table.outcome[0] == f"RuntimeError: {message}"
    assert table.outcome[1].startswith("trains: final train MSE")


GRADIENTS = "The shared layer's gradients"


def test_tied_gradient_view_when_detached(app):
    open_tab(app, GRADIENTS)
    assert not app.exception
    assert "5. Tied-gradient ledger" in [s.value for s in app.subheader]
    summary = app.table[0].value
    expected = tied_gradient_ledger(Config(**SETTINGS))
    assert len(summary) == expected.uses + 2
    assert any(f"**{expected.uses} uses**" in m.value for m in app.markdown)
    app.toggle(key="gradients_entries").set_value(True).run()
    assert app.dataframe[-1].value.equals(expected.table)


def test_tying_comparison(app):
    open_tab(app, GRADIENTS)
    app.toggle(key="gradients_compare_tying").set_value(True).run()
    assert not app.exception
    assert len(loss_charts(app)) == 1  # the run's own
    assert len(charts_encoding(app, "strokeDash", "student")) == 1  # tied against untied
    counts = app.table[-1].value.set_index("student")["parameters"]
    assert counts["untied"] - counts["tied"] == 2 * (7 * 7 + 7)


def test_no_shared_layer(app):
    open_tab(app, GRADIENTS)
    app.slider(key="shared_repeats").set_value(0).run()
    assert not app.exception
    assert any("no shared layer" in i.value for i in app.info)


def test_diagnosis_reruns_come_from_the_cache(failing, monkeypatch):
    import ui.tabs.failure as diagnosis
    import ui.tabs.gradients as gradients

    calls = []
    for module, name in ((diagnosis, "autopsy"), (diagnosis, "in_worker"), (diagnosis, "run_variant"),
                         (gradients, "tied_gradient_ledger")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    failing.run()
    failing.checkbox(key="detach").check().run()
    open_tab(failing, GRADIENTS)
    failing.checkbox(key="detach").uncheck().run()
    assert not failing.exception
    assert calls == ["tied_gradient_ledger"]  # the only view not yet seen for these settings


def test_a_closed_gradients_tab_draws_nothing_and_keeps_its_toggles(app):
    open_tab(app, GRADIENTS)
    app.toggle(key="gradients_entries").set_value(True).run()
    open_tab(app, "Training")
    assert "5. Tied-gradient ledger" not in [s.value for s in app.subheader]
    open_tab(app, GRADIENTS)
    assert app.toggle(key="gradients_entries").value
