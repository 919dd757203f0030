"""Every note that words a run says what the run's own numbers say, at drawn
settings (Hypothesis, derandomized, few small configs on the fast engine):
no "fell", "improved", "fitted" or "closer" the numbers deny, and the right
sentence for near-constant labels, a rising loss, divergence and the fewest
epochs (Config allows no fewer than 1; a run that failed at once has none)."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitlab import Config, train
from fitlab.config import BOUNDS
from fitlab.failure.autopsy import autopsy
from fitlab.failure.fixes import GRADIENT_TOLERANCE, HOOKS, Failure, fix_gallery, references, verdicts
from fitlab.outcome import outcome
from ui.tabs.failure.gallery import FREED_GRAPH, verdict_text
from ui.tabs.failure.views import hooks_note, ledger_note
from ui.tabs.student import approach_note, recording_note
from ui.tabs.training import divergence_note, fit_note
from ui.tabs.watch import recording_note as watch_recording_note
from ui.tabs.watch import shared_scale_note, watch_note
from ui.words import intro_html


def _config(**fields) -> Config:
    return Config(**{**fields, "batch_size": min(fields["batch_size"], fields["n_train"])})


CONFIGS = st.builds(
    _config,
    width=st.integers(1, 6), shared_repeats=st.integers(0, 8),
    lr=st.sampled_from([1e-4, 0.01, 0.1, 0.5, 1.0, 3.0, 10.0, 1e-6]),
    batch_size=st.sampled_from([1, 5, 50]), epochs=st.integers(BOUNDS["epochs"][0], 12),
    tied=st.booleans(), seed=st.integers(0, 3), n_train=st.sampled_from([50, 1, 199]))
FEW = settings(max_examples=15, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow])


def moved_closer(run) -> float:
    raw = run.distances.pivot(index="epoch", columns="layer", values="raw")
    total = np.sqrt((raw ** 2).sum(axis=1))
    return 1 - total.iloc[-1] / total.iloc[0]


def assert_words_follow_the_numbers(text, run):
    facts = outcome(run)
    if "fell" in text or "improved" in text:
        assert facts.loss_fell, text
    if facts.loss_rose and np.isfinite(facts.end_loss):
        assert "rose" in text and "improved" not in text, text
    for match in re.finditer(r"fitted|fits its", text):
        before = text[max(0, match.start() - 12):match.start()]
        assert "not" in before or facts.fits_training_rows, text
    # Folds: no 1-fold for a small change, no fold of 7 or more digits.
    assert not re.search(r"\b1-fold|\d{1,3}(,\d{3}){2,}-fold", text), text
    if facts.constant_fits_exactly:   # one training row: the constant fits it, the student may too
        assert "not fitted" not in text and "not yet fitted" not in text and "not that it fits" not in text
    config = run.config
    for match in re.finditer(r"(\d+) weights have many ways to fit ([\d,]+) rows?", text):
        assert int(match[2].replace(",", "")) == config.n_train < int(match[1]) == len(run.student_params)
    if "More training rows" in text:
        assert config.n_train < config.n_samples - 1, text
    if "closer to the teacher" in text:
        assert moved_closer(run) > 0, text
    if "further from the teacher" in text:
        assert moved_closer(run) < 0, text


@FEW
@given(CONFIGS)
def test_every_run_note_says_what_the_numbers_say(config):
    run = train(config)
    facts = outcome(run)
    fit, diverged = fit_note(run), divergence_note(run)
    approach = approach_note(run)
    # Divergence: said once, plainly, and no other note compares its losses.
    assert (diverged is not None) == (facts.diverged_at is not None)
    if facts.diverged_at is not None:
        assert fit is None
        assert f"diverged at epoch {facts.diverged_at}" in diverged
        assert f"diverged at epoch {facts.diverged_at}" in approach
        drawn = run.distances.dropna(subset=["raw"])
        drawn = drawn[np.isfinite(drawn.raw)]
        if len(drawn) < len(run.distances):   # the epochs said are the distances' own
            assert f"the last to epoch {drawn.epoch.max()}" in approach
            stopped = run.distances[~np.isfinite(run.distances.raw)].epoch.min()
            assert f"stop being numbers from epoch {stopped}" in approach
        return
    text, worse = fit
    assert worse == (run.history.test_loss.iloc[-1] > run.baseline.test_mse)
    assert_words_follow_the_numbers(text, run)
    assert_words_follow_the_numbers(approach, run)
    # Near-constant labels: said so, and R² not taken at its word.
    assert ("nearly constant" in text) == facts.near_constant_labels == ("nearly constant" in approach)
    if facts.near_constant_labels:
        assert "R²" in text and "means little" in text
    elif facts.loss_rose:
        assert text.startswith("**Training made the student worse.**")
        assert "larger learning rate" not in text
    # Recording and watching: the counts are the run's.
    matched = run.distances.dropna(subset=["matched"]).epoch.nunique()
    assert f"matched at {matched} of them" in recording_note(run.distances, config.epochs)
    exact = run.student_teacher.records.exact
    assert ("trying every relabelling" in recording_note(run.distances, config.epochs, exact)) == exact
    intro = intro_html(config)   # the shared layer as these settings use it
    assert ("(0 repeats)" in intro) == (config.shared_repeats == 0)
    assert ("used once" in intro) == (config.shared_repeats == 1)
    values = run.frames.values[np.isfinite(run.frames.values)]
    teacher = max(float(np.abs(a).max()) for _, w, b in run.student_teacher.teacher for a in (w, b))
    bound = max(teacher, float(np.quantile(np.abs(values), 0.995)) if values.size else 0.0, 1e-6)
    beyond = int((np.abs(values) > bound).sum())
    scale = shared_scale_note(run)
    assert f"±{bound:.3g}" in scale
    assert (f"{beyond:,} of the student's" in scale) if beyond else "past it" not in scale
    every = len(run.frames.epochs) == config.epochs + 1
    assert ("recorded at every epoch" in watch_recording_note(run)) == every
    assert ("diverged" in watch_note(run)) == (facts.diverged_at is not None)


@pytest.mark.parametrize("overrides", [dict(lr=1.0), dict(width=1), dict(shared_repeats=8)])
def test_the_issues_settings_get_the_true_sentence(overrides):
    run = train(Config(**overrides))
    text, _ = fit_note(run)
    approach = approach_note(run)
    if "lr" in overrides:   # the loss rises 0.575 → 72.1
        assert "rose" in text and "fell" not in text and "improved" not in text
        assert "larger learning rate" not in text and "rose" in approach and "0-fold" not in approach
    else:                   # labels' std 7e-6 / 3e-6: R² of −5.6e8 / −3.4e6 means little
        assert "nearly constant" in text and "means little" in text and "not yet fitted" not in text


def test_a_run_that_finished_no_epoch_claims_nothing_about_training():
    run = train(Config(detach=False, epochs=1))
    assert run.error is not None and outcome(run).epochs_trained == 0
    assert fit_note(run) is None and divergence_note(run) is None
    assert approach_note(run) == "No epoch finished: the student is where it started."


@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.builds(Config, width=st.integers(1, 6), shared_repeats=st.integers(1, 3), lr=st.sampled_from([0.1, 10.0]),
                 batch_size=st.sampled_from([5, 25, 50]), epochs=st.integers(1, 2), seed=st.integers(0, 3)))
def test_gallery_and_ledger_notes_follow_their_runs(config):
    outcomes = fix_gallery(config)
    blog, detached = references(outcomes)
    for o, v in zip(outcomes, verdicts(outcomes)):
        text = verdict_text(v, o, detached)
        if o.variant == HOOKS:   # the graph's caption on the hooked loop says what this row did
            said = hooks_note(config, o, v.gradient_gap)
            assert ("fails at" in said) == (o.error is not None)
            assert ("wrong" in said) == (v.gradient_gap > GRADIENT_TOLERANCE)
        if o.error is None:
            assert not text.startswith("✗")
            finite = np.isfinite(o.history.train_loss)
            if not finite.all():   # a diverged run is said so, and not "identical" NaN for NaN
                assert f"diverged at epoch {o.history.epoch[~finite].iloc[0]}" in text
                assert "numbers identical" not in text and "✓ fixes it" not in text
            continue
        assert text.startswith("✗")
        if v.failure is Failure.SAME:   # named as the blog's: the same message, word for word
            assert "the blog's very error" in text and o.error.message == blog.error.message
            continue
        assert f"epoch {o.error.epoch}, batch {o.error.batch}" in text
        if v.failure is Failure.FREED_GRAPH:
            assert (o.error.epoch - 1) * config.batches_per_epoch + o.error.batch == 2
            assert FREED_GRAPH in text and "the second step" in FREED_GRAPH
    replay = autopsy(config)
    note = ledger_note(replay)
    assert f"saved **{len(replay.saved_parameters)}** of {len(replay.ledger)} parameters" in note
    assert f"**{int(replay.ledger.stale.sum())}** of them are stale" in note
