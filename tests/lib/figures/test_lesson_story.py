"""The lesson's opening picture, from a real replay: the chain of the
teacher's forward pass, the tensor torch's message names with its real
shape and versions, backward stopping there, at any width and depth."""

import pytest

from fitlab import Config
from fitlab.explain import decode
from fitlab.failure.autopsy import autopsy
from fitlab.failure.graph import named_in_error
from fitlab.failure.story import story_rows
from fitlab.figures.lesson import captions, story_chart


def replayed(config: Config):
    replay = autopsy(config)
    return replay, story_rows(replay.graph, named_in_error(replay.graph, replay.error))


@pytest.mark.parametrize("width, repeats", [(5, 2), (7, 0), (3, 4)])
def test_the_story_names_the_tensor_torch_names_with_its_shape_and_versions(width, repeats):
    replay, rows = replayed(Config(detach=False, width=width, shared_repeats=repeats))
    facts = decode(replay.error)
    culprit = rows[rows.culprit]
    assert len(culprit) == 1
    t = culprit.iloc[0]
    assert t.saved == "last.weight.t()" and t["shape"] == str(list(facts.shape)) == f"[{width}, 1]"
    assert (t.saved_version, t.version) == (facts.expected_version, facts.version) == (1, 2)
    # The forward chain: first, then a ReLU and a shared Linear per repeat, a ReLU, last, reshape.
    assert list(rows.operation) == ["Linear first", *["ReLU", "Linear shared"] * repeats, "ReLU",
                                    "Linear last", "reshape → labels"]
    # Backward reaches from the labels to the culprit's operation, no further.
    assert list(rows.reached) == [False] * (len(rows) - 2) + [True, True]
    # Every saved weight is stale: each shared use, and the last layer's.
    assert rows.stale.sum() == repeats + 1 == len(replay.graph.stale)


def test_the_pictures_words_and_steps_come_from_the_replay():
    _, rows = replayed(Config(detach=False, width=7))
    words = captions(rows)
    assert "last.weight.t() [7, 1]" in words[0] and "version 1" in words[0]
    assert "1 → 2" in words[1]
    assert "expected version 1 and found 2" in words[2]
    spec = story_chart(rows).to_dict()
    moment = next(p for p in spec["params"] if p["name"] == "moment")
    assert moment["value"] == 1 and moment["bind"]["input"] == "radio" and moment["bind"]["options"] == [1, 2, 3]
    assert any(d.get("shape") == "[7, 1]" for values in spec["datasets"].values() for d in values)
