"""The fix gallery's verdicts are facts the library returns (fitlab.failure.fixes.Verdict),
judged from real runs: at the default settings and at one batch per epoch, where the
freed graph fails at epoch 2 instead of batch 2."""

import numpy as np
import pytest

from fitlab import Config
from fitlab.explain.decode import decode, freed_graph
from fitlab.failure.autopsy import autopsy
from fitlab.failure.fixes import (
    DETACH,
    GRADIENT_TOLERANCE,
    Catch,
    Failure,
    Judgement,
    fix_gallery,
    gradient_gap,
    verdicts,
)

EXPECTED = {
    "blog": (Judgement.NO_FIX, Failure.BLOG, ()),
    "detach": (Judgement.FIXES, None, ()),
    "no_grad": (Judgement.FIXES, None, ()),
    "clone": (Judgement.NO_FIX, Failure.SAME, ()),
    "no_reshape": (Judgement.NO_FIX, Failure.SAME, ()),
    "deep_copy": (Judgement.NO_FIX, Failure.FREED_GRAPH, (Catch.TEACHER_GRADIENTS,)),
    "deep_copy_retain_graph": (Judgement.CATCH, None, (Catch.TEACHER_GRADIENTS, Catch.WALKS_LABEL_GRAPH)),
    "data_reinit": (Judgement.NO_FIX, Failure.FREED_GRAPH, (Catch.WRONG_GRADIENTS,)),
    "identity_hooks": (Judgement.NO_FIX, Failure.FREED_GRAPH, (Catch.WRONG_GRADIENTS,)),
    "identity_hooks_retain_graph": (
        Judgement.CATCH, None, (Catch.WRONG_GRADIENTS, Catch.WALKS_LABEL_GRAPH, Catch.TRAINS_ON_WRONG_GRADIENTS)),
}
SETTINGS = [dict(epochs=2), dict(epochs=2, width=9, shared_repeats=1, n_train=150, batch_size=150)]


@pytest.fixture(scope="module", params=SETTINGS, ids=["default", "one-batch"])
def judged(request):
    outcomes = fix_gallery(Config(detach=False, **request.param))
    return {o.variant.key: (o, v) for o, v in zip(outcomes, verdicts(outcomes))}


def test_every_variant_is_judged_from_what_its_run_did(judged):
    assert {name: (v.judgement, v.failure, v.catches) for name, (_, v) in judged.items()} == EXPECTED


def test_a_verdict_follows_the_measured_gap_and_the_error(judged):
    detached = judged[DETACH.key][0]
    for outcome, verdict in judged.values():
        gap = gradient_gap(outcome, detached)
        assert verdict.gradient_gap == gap
        assert (Catch.WRONG_GRADIENTS in verdict.catches) == (gap is not None and gap > GRADIENT_TOLERANCE)
        assert (verdict.judgement is Judgement.NO_FIX) == (outcome.error is not None)
        if verdict.failure is Failure.FREED_GRAPH:
            assert outcome.error.message.startswith("Trying to backward through the graph a second time")
            assert (outcome.error.epoch, outcome.error.batch) in {(1, 2), (2, 1)}
        if verdict.identical:
            assert outcome.history.equals(detached.history) and outcome is not detached
    wrong = [gradient_gap(o, detached) for o, v in judged.values() if Catch.WRONG_GRADIENTS in v.catches]
    assert min(wrong) > 1e3 * GRADIENT_TOLERANCE  # far from rounding: the tolerance decides nothing close


def test_a_wrong_run_trains_to_other_losses_than_detached(judged):
    detached = judged[DETACH.key][0]
    hooked, verdict = judged["identity_hooks_retain_graph"]
    assert Catch.TRAINS_ON_WRONG_GRADIENTS in verdict.catches
    assert not np.allclose(hooked.history.train_loss[1:], detached.history.train_loss[1:], rtol=1e-3)


def test_the_replay_says_which_parameters_the_labels_graph_saved():
    for repeats, saved in ((3, ("shared.weight", "last.weight")), (0, ("last.weight",))):
        replay = autopsy(Config(detach=False, shared_repeats=repeats))
        assert replay.saved_parameters == saved
        assert set(replay.unsaved_parameters) == set(replay.ledger.parameter) - set(saved)
        not_saved = replay.ledger.set_index("parameter")["saved"].map(len) == 0
        assert list(not_saved[not_saved].index) == list(replay.unsaved_parameters)


def test_decode_keeps_the_producer_and_the_hint_as_printed():
    message = ("one of the variables needed for gradient computation has been modified by an inplace "
               "operation: [torch.FloatTensor [5, 1]], which is output 0 of AsStridedBackward0, is at "
               "version 2; expected version 1 instead. Hint: enable anomaly detection to find the "
               "operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).")
    facts = decode(message)
    assert (facts.producer, facts.producer_name) == ("AsStrided", "AsStridedBackward0")
    assert facts.hint_call == "torch.autograd.set_detect_anomaly(True)"
    assert decode(message.replace("with torch.autograd.set_detect_anomaly(True)", "")).hint_call is None
    assert not freed_graph(message)
