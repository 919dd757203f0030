"""The graph's count of stale saved tensors and the ledger's count of stale
parameters, told apart as torch counts them (issue 44: "2 stale" beside
"3 of 10 saved tensors are stale", unexplained)."""

import pytest

from fitlab import Config
from fitlab.failure.autopsy import autopsy
from ui.tabs.failure.views import stale_count_note


@pytest.mark.parametrize("repeats", [1, 2, 3])
def test_the_graph_says_how_its_stale_tensors_are_the_ledgers_stale_parameters(repeats):
    replay = autopsy(Config(detach=False, shared_repeats=repeats))
    stale_parameters = int(replay.ledger.stale.sum())
    assert len(replay.graph.stale) == repeats + 1 and stale_parameters == 2
    note = stale_count_note(replay.graph)
    if repeats == 1:
        assert note == ""      # one save per parameter: the counts agree
    else:
        assert f"**{stale_parameters}** stale parameters" in note and "once per use" in note
