"""The Watch it learn tab's scrubbed view, through AppTest (the browser
suite moves it: tests/e2e)."""

import json

import pytest

from fitlab import Config, train
from tests.page.helpers import open_page, open_tab

WATCH = "Watch it learn"


def watch_elements(at):
    return [c for c in at.get("vega_lite_chart")
            if any(p.get("name") == "epoch" for p in json.loads(c.proto.spec).get("params", []))]


def watch_charts(at):
    return [json.loads(c.proto.spec) for c in watch_elements(at)]


def test_the_watch_tab_draws_every_picture_of_the_run_at_a_scrubbed_epoch():
    at = open_tab(open_page(), WATCH)
    assert not at.exception
    specs = watch_charts(at)
    assert len(specs) == 6      # loss, distance, predictions, diagram, change, weights
    for spec in specs:
        epoch = {p["name"]: p for p in spec["params"]}["epoch"]
        assert epoch["bind"]["input"] == "range" and epoch["bind"]["max"] == 100
    names = {d.name for chart in watch_elements(at) for d in chart.proto.datasets}
    assert names >= {"losses", "distances", "predictions", "edges", "weights_1"}
    [player] = [h for h in at.get("html") if "fitlab-player" in h.proto.body]
    run = train(Config())
    assert json.dumps([int(e) for e in run.frames.epochs]) in player.proto.body
    assert player.proto.unsafe_allow_javascript


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_the_lesson_has_no_scrubbed_view():
    at = open_page(detach="false", epochs="3")  # the fix gallery trains its fixes for as many
    assert not at.exception
    assert watch_charts(at) == []
    assert not [h for h in at.get("html") if "fitlab-player" in h.proto.body]


def test_the_scrubbed_view_is_drawn_only_while_its_tab_is_open():
    at = open_page()
    # The default page: the Training tab, its first screen's two moving
    # pictures (the watch view's loss and predictions) and its loss chart.
    assert len(watch_charts(at)) == 2 and len(at.get("vega_lite_chart")) == 3
    names = {d.name for chart in watch_elements(at) for d in chart.proto.datasets}
    assert {"losses", "predictions"} <= names and "edges" not in names
    open_tab(at, WATCH)
    assert len(watch_charts(at)) == 6
    open_tab(at, "Compare runs")
    assert watch_charts(at) == []
    open_tab(at, WATCH)
    assert len(watch_charts(at)) == 6


def test_the_one_line_says_how_far_each_layer_moved_and_a_diverged_run_says_it_diverged():
    from fitlab.figures.watch_weights import layer_movement
    from ui.tabs.watch import watch_note

    run = train(Config(width=7, lr=0.05, epochs=30))
    moved = layer_movement(run.frames)
    note = watch_note(run)
    assert f"first {100 * moved[0]:.0f}%" in note or f"first {100 * moved[0]:.2g}%" in note
    assert "By epoch 30" in note
    diverged = train(Config(lr=10.0, epochs=15))
    assert watch_note(diverged).startswith("The student at the epoch the slider picks. Its weights diverged")
    assert "nan%" not in watch_note(diverged)


def test_the_player_is_read_from_its_asset_file_whatever_the_working_folder(tmp_path, monkeypatch):
    import importlib

    import ui.tabs.watch as watch

    monkeypatch.chdir(tmp_path)
    player = importlib.reload(watch).player_html(train(Config(epochs=4)))
    assert player.startswith("<style>") and '<div class="fitlab-player">' in player
    assert "epoch 4 of 4" in player and "%(" not in player
