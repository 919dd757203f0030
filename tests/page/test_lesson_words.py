"""The lesson's words against the replay and torch: the saved view torch
names, what the graph saved, torch's wording against the blog's, the grad
mode note, the vivid example's note and table, the real versions and shape."""

import threading

import pytest
import torch

from fitlab import Config, train
from fitlab.blog import BLOG_ERROR_MESSAGE, setup
from fitlab.data import attached_labels
from fitlab.failure.autopsy import autopsy
from fitlab.failure.graph import grad_fns, named_in_error
from fitlab.failure.vivid import vivid_example
from ui.tabs.failure.lesson import error_explanation, wording_note
from ui.tabs.failure.views import GRAD_MODE_NOTE, vivid_note, vivid_table


@pytest.mark.parametrize("width", [5, 9])
def test_the_saved_view_torch_names_was_tbackward_when_saved(width):
    config = Config(detach=False, width=width)
    found = autopsy(config)
    culprit = named_in_error(found.graph, found.error)
    assert (culprit.saved_grad_fn, culprit.grad_fn) == ("TBackward0", "AsStridedBackward0")
    assert "output 0 of AsStrided" in found.error
    text = error_explanation(train(config), found)
    assert "`TBackward0`" in text and "`AsStridedBackward0`" in text and "trace of the write" in text
    assert "a strided view, hence" not in text  # the old, wrong reason


def test_the_lesson_names_exactly_what_the_graph_saved():
    config = Config(detach=False, shared_repeats=3)
    start = setup(config, attached_labels)
    # Independently: the storages of every tensor the labels' graph saved.
    raw = [getattr(fn, a) for fn in grad_fns(start.labels) for a in dir(fn) if a.startswith("_raw_saved_")]
    saved = {r.data.untyped_storage().data_ptr() for r in raw if isinstance(getattr(r, "data", None), torch.Tensor)}
    named = dict(start.teacher.named_layers())
    weights_saved = {name for name, layer in named.items() if layer.weight.untyped_storage().data_ptr() in saved}
    biases_saved = {name for name, layer in named.items() if layer.bias.untyped_storage().data_ptr() in saved}
    assert weights_saved == {"shared", "last"} and biases_saved == set()
    text = error_explanation(train(config), autopsy(config))
    said, _, _ = text.partition("Not saved:")
    assert "`shared.weight`" in said and "`last.weight`" in said
    assert "`first.weight`" not in said and ".bias`" not in said
    assert "the weights it multiplied by" not in text


def test_torchs_wording_differs_from_the_blogs_and_the_note_says_how():
    message = train(Config(detach=False)).error.message
    assert "output 0 of AsStrided," in message and "AsStridedBackward0" not in message
    assert "set_detect_anomaly(True, check_nan=False)" in message
    assert "output 0 of AsStridedBackward0," in BLOG_ERROR_MESSAGE
    note = wording_note(message, torch.__version__)
    assert "`AsStrided` where the blog's reads `AsStridedBackward0`" in note
    assert "`torch.autograd.set_detect_anomaly(True, check_nan=False)`" in note and torch.__version__ in note
    assert wording_note(BLOG_ERROR_MESSAGE, "old") is None  # the same wording: nothing to say


def test_set_grad_enabled_true_changes_nothing_here():
    out = {}

    def fresh_thread():  # grad mode is per thread: see its default where the blog's script starts
        out["default"] = torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        out["anomaly"] = torch.is_anomaly_enabled()
        out["error"] = train(Config(detach=False)).error.message

    thread = threading.Thread(target=fresh_thread)
    thread.start()
    thread.join()
    assert out["default"] is True and out["anomaly"] is False
    assert out["error"] == train(Config(detach=False)).error.message
    assert "`torch.is_grad_enabled()` is `True`" in GRAD_MODE_NOTE
    assert "torch.autograd.set_detect_anomaly(True)" in GRAD_MODE_NOTE


def test_the_vivid_page_words_come_from_the_runs():
    cases = vivid_example(Config(detach=False))
    note = vivid_note(cases)
    assert "2 of 4 edits run and 2 raise" in note and "`AddmmBackward0`" in note and "`result`" in note
    table = vivid_table(cases)
    assert list(table.net) == ["the blog's net"] * 2 + ["the blog's net + a final ReLU"] * 2
    assert list(table["loss.backward()"]) == ["✓ runs", "✓ runs"] + [
        "✗ RuntimeError: [torch.FloatTensor [200, 1]], which is output 0 of Relu, is at version 1; "
        "expected version 0"] * 2


def test_lesson_quotes_the_real_versions_and_shape():
    failed = train(Config(detach=False, width=9))
    text = error_explanation(failed, autopsy(failed.config))
    assert "`[9, 1]`" in text and "saved at version 1 and is now at version 2" in text
    assert "reshape" in text
