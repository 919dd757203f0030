"""The page's sentences issue 33 found false at particular settings, each
checked at the setting where it was, against the run it describes."""

import math

import numpy as np
import pyarrow as pa
import pytest
import torch

from fitlab import Config, train
from fitlab.explain import decode
from fitlab.explain.causes import CAUSES
from fitlab.explain.causes import FREED_GRAPH as CAUSES_FREED_GRAPH
from fitlab.explain.decode import freed_graph
from fitlab.failure.fixes import BLOG, DETACH, GRADIENT_TOLERANCE, VARIANTS, run_variant, unchecked_loop
from fitlab.outcome import outcome
from fitlab.shared_layer.gradients import tied_gradient_ledger
from tests.page.helpers import charts_encoding, open_page, open_tab
from ui.decode import decoded_parts, likely_causes
from ui.tabs.failure.gallery import VARIANT_NAMES
from ui.tabs.failure.lesson import RULE, WHICH_WRITES
from ui.tabs.failure.views import hooks_note
from ui.tabs.student import approach_note, recording_note
from ui.tabs.training import fit_note, training_error
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
    if len(drawn) == len(run.distances):
        assert "every distance from the teacher stayed a number, and is drawn" in note
    else:
        assert f"the last to epoch {drawn.epoch.max()}" in note
    # The run stops where its loss left the numbers (issue 32); at lr 2 that is
    # epoch 4, and the weights are still finite there, so every distance is drawn.
    assert int(run.history.epoch.max()) == loss_gone
    if lr == 2.0:
        assert loss_gone == 4 and drawn.epoch.max() == 4 and len(drawn) == len(run.distances)


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


def test_one_training_row_is_said_fitted_as_far_as_it_is_and_no_fold_reads_as_nonsense():
    run = train(Config(n_train=1, batch_size=1))
    facts = outcome(run)
    assert facts.constant_mse == 0 and facts.end_loss < 1e-12 * facts.start_loss
    text, worse = fit_note(run)
    for said in (text, approach_note(run)):
        assert "not yet fitted" not in said and "has not fitted" not in said and "let it go further" not in said
        assert "-fold" not in said
        digits = math.floor(math.log10(facts.start_loss / facts.end_loss))
        assert f"fell by more than {digits} orders of magnitude" in said
        assert f"off by {training_error(run):.2g} of the labels' size" in said
    labels = run.student_teacher.labels.astype(np.float64)
    assert training_error(run) == pytest.approx(math.sqrt(facts.end_loss / np.mean(labels ** 2)))


def test_the_most_training_rows_are_not_said_few_nor_more_offered_and_one_test_row_is_said():
    config = Config(n_train=199, seed=4)
    run = train(config)
    text, worse = fit_note(run)
    assert worse and outcome(run).fits_training_rows and config.n_test == 1
    assert len(run.student_params) < config.n_train == config.n_samples - 1
    assert "many ways to fit" not in text and "More training rows" not in text
    assert "rests on a single row's error" in text


def test_a_small_fall_is_said_in_percent():
    run = train(Config(lr=1e-6))
    facts = outcome(run)
    assert facts.loss_fell and facts.loss_ratio < 1.05
    percent = 100 * (1 - facts.end_loss / facts.start_loss)
    assert f"fell by {percent:.2g}% (from" in fit_note(run)[0] and "-fold" not in fit_note(run)[0]


def test_the_sweep_names_no_swept_axis_as_another_setting_and_says_its_engine():
    at = open_page(timeout=120, seed="12345", lr="10", engine="autograd")
    open_tab(at, "Sweep")
    assert "on the fast engine, not autograd" in captions(at) and "but **Advanced › Engine**" in captions(at)
    at.selectbox(key="sweep_x").select("lr").run()
    at.selectbox(key="sweep_y").select("seed").run()
    at.text_input(key="sweep_lr").set_value("0.01, 0.05")
    at.text_input(key="sweep_seed").set_value("0, 3")
    at.button(key="sweep_run").click().run()
    assert not at.exception and not at.error
    said = captions(at)
    assert "After 100 epochs on the fast engine; other settings: the defaults." in said
    assert "seed=12345" not in said and "lr=10" not in said and "engine=autograd" not in said


def test_the_intro_and_the_gradients_tab_count_the_shared_layers_uses():
    at = open_page(timeout=120, shared_repeats="0")
    first = at.get("html")[0].proto.body
    assert "without its <b>shared layer</b> (0 repeats)" in first and "with one <b>shared layer</b>" not in first
    at = open_page(timeout=120, shared_repeats="1")
    assert "used once" in at.get("html")[0].proto.body
    open_tab(at, "The shared layer's gradients")
    ledger = tied_gradient_ledger(Config(shared_repeats=1))
    assert ledger.uses == 1
    said = " ".join(m.value for m in at.markdown)
    assert "**one use**" in said and "nothing to add up" in said and "**add up**" not in said
    assert ("exactly equal" in said) == (ledger.max_difference == 0)


def test_the_recording_note_says_costlier_matching_not_wider_nets_gets_fewer_epochs():
    narrow, wide = train(Config(width=8)), train(Config(width=9))
    counts = [r.distances.dropna(subset=["matched"]).epoch.nunique() for r in (narrow, wide)]
    assert counts[0] < counts[1]   # width 8 is matched at fewer epochs than width 9
    assert narrow.student_teacher.records.exact and not wide.student_teacher.records.exact
    for run, count in zip((narrow, wide), counts):
        note = recording_note(run.distances, 100, run.student_teacher.records.exact)
        assert f"matched at {count} of them" in note and "wide nets get fewer" not in note
    assert "trying every relabelling" in recording_note(narrow.distances, 100, True)
    assert "weight matching" in recording_note(wide.distances, 100, False)


def test_the_gallery_says_how_many_lines_each_variant_changes_and_a_diverged_fix_diverged():
    at = open_page(timeout=180, detach="false", lr="10", epochs="5")
    open_tab(at, "Fix gallery", key="failure_view")
    assert not at.exception
    said = " ".join(m.value for m in at.markdown)
    lines = {v.lines for v in VARIANTS if v != BLOG}
    assert lines == {1, 2} and "Each variant changes one or two lines of the blog's script" in said
    table = at.table[0].value
    detach = table[table.variant == VARIANT_NAMES[DETACH.key]].verdict.iloc[0]
    history = run_variant(Config(detach=False, lr=10, epochs=5), DETACH).history
    gone = int(history[~np.isfinite(history.train_loss)].epoch.iloc[0])
    assert detach == f"✓ fixes the in-place error; training diverged at epoch {gone} (its train loss became infinite)"
    assert not any("numbers identical" in v for v in table.verdict)


def test_watch_says_how_many_values_its_clamped_colour_scale_cannot_tell_apart():
    at = open_page(timeout=120, lr="1")
    open_tab(at, "Watch it learn")
    assert not at.exception
    run = train(Config(lr=1.0))
    values = run.frames.values[np.isfinite(run.frames.values)]
    teacher = max(float(np.abs(a).max()) for _, w, b in run.student_teacher.teacher for a in (w, b))
    bound = max(teacher, float(np.quantile(np.abs(values), 0.995)))
    beyond = int((np.abs(values) > bound).sum())
    assert beyond > 0 and np.abs(values).max() > bound   # at lr 1 a value 8.58 on a ±5.82 scale
    said = " ".join(m.value for m in at.markdown) + captions(at)
    assert "(equal colours, equal values)." not in said
    assert f"one scale, ±{bound:.3g}: equal colours, equal values within it; {beyond:,} of the student's" in said


def raised(backward) -> str:
    with pytest.raises(RuntimeError) as caught:
        backward()
    return str(caught.value)


def decoder_words(message) -> str:
    return " ".join(f"{part} {meaning}" for part, meaning in decoded_parts(decode(message)))


def test_the_decoder_on_an_integer_leaf_names_index_writes_not_weights():
    embedding = torch.nn.Embedding(600, 8)
    idx = torch.randint(0, 512, (4, 512))
    out = embedding(idx).sum()
    idx.add_(1)
    message = raised(out.backward)
    assert "[torch.LongTensor [4, 512]]" in message
    facts = decode(message)
    assert facts.kind == "integer" and facts.dtype == "int64"
    said = decoder_words(message)
    assert "Most likely a weight changed in place" not in said and "cannot require gradients" in said
    assert not any("optimizer.step()" in c or "re-initialised" in c for c in likely_causes(facts))
    assert facts.causes[0] == "augmented_assignment"   # idx.add_(1) is one
    with pytest.raises(RuntimeError, match="floating point"):
        torch.zeros(2, dtype=torch.long).requires_grad_()   # why it cannot be a weight


def test_the_decoder_on_a_saved_slice_lists_the_write_to_the_sliced_tensor_first():
    w = torch.randn(2, requires_grad=True)
    b = torch.randn(5, requires_grad=True) * 2
    loss = (b[1:3] * w).sum()
    b.add_(1)
    message = raised(loss.backward)
    assert "[torch.FloatTensor [2]], which is output 0 of AsStrided," in message
    facts = decode(message)
    assert facts.kind == "view" and facts.causes[0] == "clone_before_write"
    assert CAUSES["clone_before_write"].sign in likely_causes(facts)[0]
    weight = decode(message.replace("[torch.FloatTensor [2]]", "[torch.FloatTensor [5, 1]]"))
    assert weight.kind == "transposed_weight" and "clone_before_write" in weight.causes


@pytest.mark.parametrize("printed", ["AsStridedBackward0", "TBackward", "AsStrided"])
def test_the_decoder_quotes_the_producer_as_pasted(printed):
    message = ("one of the variables needed for gradient computation has been modified by an inplace "
               f"operation: [torch.FloatTensor [5, 1]], which is output 0 of {printed}, is at version 2; "
               "expected version 1 instead.")
    parts = dict(decoded_parts(decode(message)))
    assert f"output 0 of {printed}" in parts and f"What made it: `{printed}`," in parts[f"output 0 of {printed}"]


def test_the_freed_graph_answer_says_a_part_that_saved_nothing_goes_through_again():
    x = torch.randn(3, requires_grad=True)
    nothing_saved = (x + 1).sum()
    nothing_saved.backward()
    nothing_saved.backward()                      # a second backward through it passes
    saved = (x * torch.randn(3, requires_grad=True)).sum()
    saved.backward()
    assert freed_graph(raised(saved.backward))    # one through a part that saved tensors does not
    assert "any part of that" not in CAUSES_FREED_GRAPH
    assert "a part that saved none, such as an addition or a sum, goes through again" in CAUSES_FREED_GRAPH


def test_the_lessons_rule_says_a_fused_step_and_a_data_write_bump_no_version():
    for make in (lambda p: torch.optim.SGD(p, lr=0.1, fused=True), lambda p: torch.optim.Adam(p, fused=True),
                 lambda p: torch.optim.AdamW(p, fused=True), lambda p: torch.optim.SGD(p, lr=0.1)):
        weight = torch.nn.Parameter(torch.randn(3))
        step = make([weight])
        weight.grad = torch.ones(3)
        before = weight._version
        step.step()
        fused = step.defaults.get("fused")
        assert (weight._version == before) == bool(fused), make   # fused: 1 → 1; plain: bumped
    data = torch.nn.Parameter(torch.randn(3))
    before = data._version
    data.data.add_(1)
    assert data._version == before
    assert "Every in-place write" not in RULE + WHICH_WRITES
    assert "a fused optimizer step (`fused=True`)" in WHICH_WRITES and "`.data`" in WHICH_WRITES
