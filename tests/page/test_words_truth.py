"""The page's sentences issue 21 found true only sometimes, checked against
torch and against the runs they describe."""

import dataclasses
import warnings

import pytest
import torch

from fitlab import Config, train
from fitlab.explain import decode
from fitlab.explain.causes import BUMPS
from fitlab.explain.causes import FREED_GRAPH as FREED_GRAPH_WORDS
from fitlab.explain.decode import LIKELY_CAUSES
from fitlab.failure.autopsy import autopsy
from tests.explain.test_causes import harmful
from ui.decode import decoded_parts, likely_causes
from ui.tabs.failure.gallery import FREED_GRAPH
from ui.tabs.failure.lesson import FIX_CODE, RULE, WHICH_WRITES
from ui.tabs.failure.views import ledger_note
from ui.tabs.student import WHY_RAW_STAYS_LARGE, approach_note
from ui.words import intro_html


def saved_slice_message():
    w = torch.randn(2, requires_grad=True)
    b = torch.randn(5, requires_grad=True) * 2
    saved = b[1:3]
    loss = (saved * w).sum()
    b.add_(1)
    with pytest.raises(RuntimeError) as raised:
        loss.backward()
    return str(raised.value)


def words(message):
    return " ".join(f"{part} {meaning}" for part, meaning in decoded_parts(decode(message)))


def test_as_strided_is_explained_as_any_view_written_in_place_a_saved_slice_too():
    message = saved_slice_message()
    assert "output 0 of AsStrided," in message       # a slice, not a transposed weight
    said = words(message)
    assert "almost always" not in said and "Torch 2.x names" not in said
    assert "a saved slice" in said and "`AsStridedBackward0`" in said
    assert "no layer's weight seen transposed" in said   # a 1-D view: issue 33's shape-aware kind


def test_the_backtrace_hint_shows_the_forward_line_only_if_anomaly_mode_was_on_for_the_forward():
    x = torch.randn(4, requires_grad=True)
    y = x.sigmoid()
    y.mul_(2)
    with warnings.catch_warnings(record=True) as caught, torch.autograd.set_detect_anomaly(True):
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError) as raised:
            y.sum().backward()
    message = str(raised.value)
    assert "the backtrace further above" in message
    assert any("No forward pass information available" in str(w.message) for w in caught)
    said = words(message)
    assert "Only if it was on during the forward pass too" in said and "turned on just for the backward" in said


def test_the_freed_graph_note_says_the_second_step_not_batch_2():
    assert "the second step needs it again" in FREED_GRAPH and "batch 2" not in FREED_GRAPH


def test_the_intro_makes_no_unsourced_superlative():
    for config in (Config(), Config(detach=False), None):
        assert "most searched" not in intro_html(config)


def test_the_ledger_says_a_data_write_bumps_no_version():
    layer = torch.nn.Linear(2, 2)
    before = layer.weight._version
    layer.weight.data.zero_()
    assert layer.weight._version == before
    note = ledger_note(autopsy(Config(epochs=1)))
    assert "Every in-place write" not in note and "(a write through `.data` does not)" in note


def test_at_the_defaults_the_approach_note_says_the_student_has_not_fitted_its_rows():
    run = train(Config())
    train_mse, constant = run.history.train_loss.iloc[-1], run.baseline.train_mse
    assert train_mse > constant
    note = approach_note(run)
    assert f"has not fitted its training rows (train MSE {train_mse:.4g}, above the constant predictor's " \
           f"{constant:.4g})" in note
    assert "fitting the labels does not take" not in note and "Matched equals raw" not in note
    assert "fitted by weights that are not the teacher's" not in WHY_RAW_STAYS_LARGE


def test_the_lesson_says_which_writes_bumped_the_versions_not_every_write():
    from ui.tabs.failure.lesson import error_explanation

    config = Config(detach=False, epochs=1)
    text = error_explanation(train(config), autopsy(config))
    assert "Every in-place write" not in text
    assert "Each of its in-place writes (`kaiming_normal_`, `zeros_`) bumped a parameter's version counter" in " ".join(
        text.split())


def test_the_decoder_and_the_lesson_give_no_harmful_hint_and_say_the_bumps_once():
    facts = decode("one of the variables needed for gradient computation has been modified by an inplace "
                   "operation: [torch.FloatTensor [3]], which is output 0 of TBackward0, is at version 2; "
                   "expected version 1 instead.")
    # The old decoder's GAN hint, which the one list no longer holds.
    assert "every backward that needs the graph before the step" not in " ".join(likely_causes(facts))
    for kind, keys in LIKELY_CAUSES.items():
        for text in likely_causes(dataclasses.replace(facts, causes=keys)):
            assert harmful(text) is None, (kind, text)
    assert all(harmful(words) is None for words in (RULE, WHICH_WRITES, FIX_CODE, FREED_GRAPH_WORDS))
    assert BUMPS in WHICH_WRITES
