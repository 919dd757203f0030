"""The page's sentences issue 33 found false at particular settings, each
checked at the setting where it was, against the run it describes."""


import numpy as np
import pyarrow as pa
import pytest

from fitlab import Config, train
from fitlab.failure.fixes import GRADIENT_TOLERANCE, unchecked_loop
from tests.page.helpers import charts_encoding, open_page, open_tab
from ui.tabs.failure.views import hooks_note
from ui.tabs.student import approach_note
from ui.words import intro_html


def captions(at) -> str:
    return " ".join(c.value for c in at.caption)


@pytest.mark.parametrize("query", [dict(detach="false", epochs="1", batch_size="50"),
                                   dict(detach="false", tied="false")])
def test_the_hooks_caption_says_what_the_hooked_loop_did_at_these_settings(query):
    at = open_page(timeout=120, **query)
    assert not at.exception
    said = captions(at)
    assert "No saved-tensor hooks" in said
    config = Config(detach=False, **({"epochs": 1, "batch_size": 50} if "epochs" in query else {"tied": False}))
    hooked, gap = unchecked_loop(config)
    assert hooks_note(config, hooked, gap) in said
    if "epochs" in query:   # one step: no second step to fail at, and wrong gradients to the end
        assert hooked.error is None and gap > GRADIENT_TOLERANCE
        assert "fails at" not in said and "no second backward" in said and "on wrong gradients" in said
    else:                   # untied: the student's first gradients are .detach()'s
        assert gap <= GRADIENT_TOLERANCE and hooked.error is not None
        assert "wrong" not in hooks_note(config, hooked, gap) and "equal `.detach()`'s" in said


def test_a_lesson_of_many_epochs_runs_it_stops_at_its_first_backward_whatever_the_epochs():
    at = open_page(timeout=120, detach="false", epochs="2000")
    assert not at.exception
    assert len(at.error) == 1 and "raised RuntimeError** at epoch 1, batch 1" in at.error[0].value
    assert "too much work" not in at.error[0].value


def test_a_refused_lesson_does_not_say_to_untick_what_is_unticked():
    said = intro_html(None, detach_ticked=False)
    assert "untick <b>" not in said and "cannot run here" in said
    assert "untick <b>" in intro_html(None, detach_ticked=True)


@pytest.mark.parametrize("lr", [2.0, 10.0])
def test_a_diverged_student_is_said_where_its_loss_and_its_distances_left_the_numbers(lr):
    run = train(Config(lr=lr))
    note = approach_note(run)
    loss_gone = int(run.history[~np.isfinite(run.history.train_loss)].epoch.min())
    drawn = run.distances[np.isfinite(run.distances.raw)]
    assert f"diverged at epoch {loss_gone}, where the train loss became infinite" in note
    assert f"the last to epoch {drawn.epoch.max()}" in note
    if lr == 2.0:   # the loss is infinite from epoch 4; the last layer's distance is drawn to epoch 8
        assert loss_gone == 4 and drawn.epoch.max() == 8


def test_the_slice_caption_says_the_loss_at_the_teacher_as_it_is_and_the_chart_leaves_it_off():
    at = open_page(timeout=120)
    open_tab(at, "Student vs teacher")
    slices = train(Config()).loss_slices
    at_teacher = slices[slices.t == 1][["train_loss", "test_loss"]].to_numpy()
    assert 0 < at_teacher.max() < 1e-12   # rounding, not zero
    said = captions(at)
    assert "the loss is zero" not in said and f"at most {at_teacher.max():.2g}" in said
    chart = charts_encoding(at, "x", "t")
    assert len(chart) == 1
    drawn = [pa.ipc.open_stream(d.data.data).read_pandas() for d in chart[0].proto.datasets]
    assert drawn and all(0 < len(d) and d.t.max() < 1 for d in drawn)
