"""The Student vs teacher tab's notes against the run's records."""

import pytest

from fitlab import Config, train
from fitlab.student.distance import MAX_POINTS, matched_points
from ui.tabs.student import matched_above_note, recording_note


@pytest.mark.parametrize("width,epochs", [(5, 100), (64, 300), (256, 40)])
def test_matched_distance_is_recorded_at_fewer_epochs_for_wide_nets(width, epochs):
    run = train(Config(width=width, epochs=epochs, batch_size=50))
    raw_epochs = run.distances["epoch"].unique()
    matched_epochs = run.distances.dropna(subset=["matched"])["epoch"].unique()
    assert len(raw_epochs) == min(epochs + 1, MAX_POINTS)
    assert len(matched_epochs) == min(epochs + 1, matched_points(width))
    assert {0, epochs} <= set(matched_epochs) <= set(raw_epochs)
    assert matched_points(256) < matched_points(64)
    note = recording_note(run.distances, epochs)
    assert f"matched at {len(matched_epochs)} of them" in note
    assert ("every epoch" in note) == (len(raw_epochs) == epochs + 1)


@pytest.mark.parametrize("config", [Config(), Config(width=8)])
def test_the_caption_says_why_diamonds_lie_above_a_layers_line_and_which(config):
    """A layer's matched distance may exceed its raw one (the relabelling
    minimises the whole net's distance): the caption names exactly the layers
    where torch's numbers put a diamond above the line, and says why; the
    whole net's matched distance never exceeds its raw one."""
    distances = train(config).distances.dropna(subset=["raw", "matched"])
    above = set(distances.layer[distances.matched > distances.raw * (1 + 1e-9)])
    note = matched_above_note(distances)
    for layer in distances.layer.unique():
        assert (f"the {layer} layer's" in note) == (layer in above)
    assert ("whole net closest" in note) == bool(above)
    squares = distances.assign(raw=distances.raw ** 2, matched=distances.matched ** 2).groupby("epoch")
    assert (squares.matched.sum() <= squares.raw.sum() * (1 + 1e-9)).all()
