"""The Student vs teacher tab's notes against the run's records."""

import pytest

from fitlab import Config, train
from fitlab.student.distance import MAX_POINTS, matched_points
from ui.tabs.student import recording_note


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
