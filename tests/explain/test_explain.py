"""fitlab.explain on failing, finishing and erroring scripts, run in this process through
run_script (the CLI's own cases are in test_cli.py); decode.

Expected lines are the fixture scripts' own, marked `# saved-here`, `# written-here`,
`# failed-here`, `# silent-here`; nothing here copies torch's wording.
"""

import contextlib
import io
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from fitlab.explain import Recorder, decode, format_report, run_script
from fitlab.explain.decode import normalise_producer

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def marked(script: str, mark: str) -> int:
    """The 1-based line of the script that carries `# <mark>`."""
    lines = (SCRIPTS / script).read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(f"# {mark}")]
    assert len(hits) == 1, (script, mark, hits)
    return hits[0]


def explain(script: str, *args: str, tmp_path: Path = None) -> tuple:
    """Run a fixture through run_script, as the CLI does; (exit code, report dict, printed text)."""
    report = run_script(str(SCRIPTS / script), list(args))
    return report.exit_code, json.loads(report.to_json()), format_report(report)


def innermost(frames: list) -> dict:
    assert frames, "no user frame"
    return frames[-1]


def assert_at(frame: dict, script: str, mark: str) -> None:
    line = marked(script, mark)
    assert Path(frame["file"]).resolve() == (SCRIPTS / script).resolve()
    assert frame["line"] == line
    assert frame["code"] == (SCRIPTS / script).read_text().splitlines()[line - 1].strip()


FAILING = [
    # script, first write's op, fix kind
    ("blog_reinit.py", "aten::normal_", "detach_labels"),
    ("gan_step.py", "aten::addcdiv_", "fresh_forward_after_step"),
    ("retain_step.py", "aten::_foreach_add_", "fresh_forward_after_step"),
    ("exp_augassign.py", "aten::add_", "augmented_assignment"),
    ("relu_inplace.py", "aten::relu_", "inplace_module"),
    ("tanh_index.py", "aten::fill_", "index_assignment"),
    ("view_write.py", "aten::mul_", "augmented_assignment"),
    ("view_add.py", "aten::add_", "augmented_assignment"),  # torch names the view (the mixing layer's input)
    ("view_base_read.py", "aten::add_", "clone_before_write"),  # torch names the base (tanh's output)
    ("loop_later_write.py", "aten::add_", "augmented_assignment"),
    ("autograd_grad.py", "aten::mul_", "augmented_assignment"),
    ("silent_then_error.py", "aten::add_", "augmented_assignment"),
    # torch names the tensor as "output 0 of torch::autograd::CopySlices" (a slice assignment made it)
    ("slice_assign_saved.py", "aten::fill_", "index_assignment"),
    # raised in a ThreadPoolExecutor's thread, raised again by result() on the main thread
    ("thread_pool_logger.py", "aten::mul_", "augmented_assignment"),
    # a forward hook writes its module's output, which the module's tanh saved
    ("hook_clamp.py", "aten::clamp_", "hook_output"),
    # DistributedDataParallel's C++ threads write too, with no Python frame (gloo, one process)
    ("ddp_augassign.py", "aten::add_", "augmented_assignment"),
]


@pytest.mark.parametrize("script,op,fix", FAILING)
def test_failing_script_names_saved_written_and_failed_lines(script, op, fix, tmp_path):
    code, report, stderr = explain(script, tmp_path=tmp_path)
    assert code == 1, stderr
    assert report["status"] == "inplace_error"
    facts = decode(report["error"])
    assert facts is not None
    t = report["tensor"]
    assert tuple(t["shape"]) == facts.shape
    assert (t["version"], t["saved_version"]) == (facts.version, facts.expected_version)
    assert t["node"] and t["saved_as"]
    assert_at(innermost(report["saved_at"]), script, "saved-here")
    assert_at(innermost(report["writes"][0]["frames"]), script, "written-here")
    assert_at(innermost(report["failed_at"]), script, "failed-here")
    assert report["writes"][0]["op"] == op
    assert report["writes"][0]["version_before"] == facts.expected_version
    assert report["fix"]["kind"] == fix
    # The human report on stderr names the same lines.
    assert f"{script}:{marked(script, 'written-here')}" in stderr
    assert f"{script}:{marked(script, 'saved-here')}" in stderr
    assert "Fix:" in stderr


def test_blog_write_is_called_from_net_apply(tmp_path):
    _, report, _ = explain("blog_reinit.py", tmp_path=tmp_path)
    frames = report["writes"][0]["frames"]
    assert [f["function"] for f in frames[-2:]] == ["<module>", "init_weight"]
    assert "net.apply(init_weight)" in frames[-2]["code"]
    assert report["tensor"]["node"] == "AddmmBackward0" and report["tensor"]["saved_as"] == "mat2"


def test_frames_are_only_the_users(tmp_path):
    _, report, _ = explain("gan_step.py", tmp_path=tmp_path)
    torch_dir = Path(torch.__file__).resolve().parent
    every = report["saved_at"] + report["failed_at"] + [f for w in report["writes"] for f in w["frames"]]
    for f in every:
        path = Path(f["file"]).resolve()
        assert torch_dir not in path.parents and (ROOT / "fitlab") not in path.parents
        assert path == (SCRIPTS / "gan_step.py").resolve()


def test_a_save_inside_torchscript_names_the_write_and_says_why_the_save_is_unknown(tmp_path):
    code, report, text = explain("scripted_module.py", tmp_path=tmp_path)
    assert code == 1 and report["tensor"]["node"] == "SigmoidBackward0" and report["saved_at"] == []
    assert_at(innermost(report["writes"][0]["frames"]), "scripted_module.py", "written-here")
    assert_at(innermost(report["failed_at"]), "scripted_module.py", "failed-here")
    assert any("TorchScript" in n for n in report["notes"]) and "saved at   (no frame of yours)" in text


def test_loop_reports_the_write_after_the_save_not_the_earlier_one(tmp_path):
    _, report, _ = explain("loop_later_write.py", tmp_path=tmp_path)
    assert len(report["writes"]) == 1
    assert "buf.mul_" not in report["writes"][0]["frames"][-1]["code"]


def test_silent_write_in_a_finishing_script(tmp_path):
    code, report, stderr = explain("finishes_silent.py", tmp_path=tmp_path)
    assert code == 0, stderr
    assert report["status"] == "finished"
    [silent] = report["silent_writes"]
    assert_at(innermost(silent["frames"]), "finishes_silent.py", "silent-here")
    assert silent["op"] == "aten::mul_"
    assert silent["tensor"]["shape"] == list(nn.Linear(4, 1).weight.t().shape)
    assert f"finishes_silent.py:{marked('finishes_silent.py', 'silent-here')}" in stderr


def test_silent_write_reported_beside_the_error(tmp_path):
    _, report, _ = explain("silent_then_error.py", tmp_path=tmp_path)
    [silent] = report["silent_writes"]
    assert_at(innermost(silent["frames"]), "silent_then_error.py", "silent-here")


def test_correct_script_finishes_clean(tmp_path):
    code, report, stderr = explain("finishes_clean.py", tmp_path=tmp_path)
    assert code == 0, stderr
    assert report["status"] == "finished" and report["silent_writes"] == [] and report["writes"] == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors(tmp_path):
    code, report, _ = explain("tanh_index.py", "cuda", tmp_path=tmp_path)
    assert code == 1 and decode(report["error"]).device == "cuda"
    assert_at(innermost(report["writes"][0]["frames"]), "tanh_index.py", "written-here")


def test_run_script_in_process_restores_globals():
    argv, path, main = sys.argv, list(sys.path), sys.modules["__main__"]
    report = run_script(str(SCRIPTS / "exp_augassign.py"), ["extra"])
    assert report.status == "inplace_error"
    assert report.writes[0].frames[-1].line == marked("exp_augassign.py", "written-here")
    assert sys.argv is argv and sys.path == path and sys.modules["__main__"] is main
    assert torch._C._len_torch_function_stack() == 0
    assert torch._C._len_torch_dispatch_stack() == 0
    assert json.loads(report.to_json())["writes"][0]["op"] == "aten::add_"
    text = format_report(report)
    assert f"exp_augassign.py:{marked('exp_augassign.py', 'saved-here')}" in text


def run_alone(path: Path) -> str | None:
    """Run a script as __main__ in this process without the recorder; its error's text or None."""
    argv = sys.argv
    sys.argv = [str(path)]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(str(path), run_name="__main__")
    except RuntimeError as exc:
        return str(exc)
    finally:
        sys.argv = argv
    return None


@pytest.mark.parametrize("script", [s for s, _, _ in FAILING] + ["finishes_clean.py", "finishes_silent.py"])
def test_recorder_does_not_change_what_fails(script):
    """Run alone and under the recorder, every fixture fails (or not) the same way."""
    alone = run_alone(SCRIPTS / script)
    with contextlib.redirect_stdout(io.StringIO()):
        report = run_script(str(SCRIPTS / script))
    assert (alone is not None) == (report.status == "inplace_error")
    assert report.error == alone


def test_history_is_bounded():
    rec = Recorder(per_storage=4, max_storages=16)
    keep = torch.zeros(3)
    with rec:
        for _ in range(100):
            keep.add_(1)
        for _ in range(200):
            torch.ones(5).mul_(2)
    assert len(rec.history) <= 16
    assert all(len(h) <= 4 for h in rec.history.values())
    assert keep._version == 100


def test_history_keeps_the_write_after_the_save_when_older_ones_fall_off():
    rec = Recorder(per_storage=4)
    w = torch.randn(3, requires_grad=True)
    x = torch.ones(3)
    with rec:
        for _ in range(10):
            x.mul_(1.0)
        y = (w * x).sum()
        x.add_(1)
        with pytest.raises(RuntimeError) as info:
            y.backward()
    assert rec.failure is not None and rec.failure.exc is info.value
    assert [w.op for w in rec.failure.writes] == ["aten::add_"]
    assert rec.failure.writes_missing == 0


# decode: messages torch 2.13 produces, provoked here.

def _provoke(make) -> str:
    with pytest.raises(RuntimeError) as info:
        make()
    return str(info.value)


def _exp_augassign():
    x = torch.randn(3, requires_grad=True)
    y = x.exp()
    y += 1
    y.sum().backward()


def _relu_after_sigmoid():
    x = torch.randn(2, 4, requires_grad=True)
    torch.relu_(torch.sigmoid(x)).sum().backward()


def _tanh_index():
    h = torch.tanh(torch.randn(3, 2, requires_grad=True))
    h[:, 0] = 0
    h.sum().backward()


def _blog_weight():
    lin = nn.Linear(5, 1)
    out = lin(torch.randn(4, 5, requires_grad=True))
    with torch.no_grad():
        nn.init.kaiming_normal_(lin.weight)
    out.sum().backward()


def _leaf_weight():
    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3, requires_grad=True)
    y = (w * x).sum()
    with torch.no_grad():
        w.add_(1)
    y.backward()


@pytest.mark.parametrize("make,shape,producer,kind,cause", [
    (_exp_augassign, (3,), "Exp", "activation_output", "augmented_assignment"),
    (_relu_after_sigmoid, (2, 4), "Sigmoid", "activation_output", "inplace_module"),
    (_tanh_index, (3, 2), "Tanh", "activation_output", "index_assignment"),
    (_blog_weight, (5, 1), "AsStrided", "transposed_weight", "detach_labels"),
    (_leaf_weight, (3,), None, "leaf", "fresh_forward_after_step"),
])
def test_decode_real_messages(make, shape, producer, kind, cause):
    d = decode(_provoke(make))
    assert d is not None
    assert d.shape == shape and d.producer == producer and d.kind == kind
    assert cause in d.causes
    assert (d.dtype, d.device) == ("float32", "cpu")
    assert d.version == d.expected_version + 1 and d.gap == 1


def test_decode_gan_step_gap_counts_writes():
    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3, requires_grad=True)
    y = (w * x).sum()
    with torch.no_grad():
        for _ in range(3):
            w.add_(1)
    d = decode(_provoke(y.backward))
    assert d.gap == 3 and d.version == w._version


BLOG = ("RuntimeError: one of the variables needed for gradient computation has been modified by an "
        "inplace operation: [torch.FloatTensor [5, 1]], which is output 0 of AsStridedBackward0, is at "
        "version 2; expected version 1 instead. Hint: enable anomaly detection to find the operation that "
        "failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).")
OLD = [
    (BLOG, "torch.FloatTensor", "cpu", (5, 1), "AsStrided", "transposed_weight", 2, 1),
    (("one of the variables needed for gradient computation has been modified by an inplace operation: "
     "[torch.FloatTensor [128, 1]], which is output 0 of TBackward, is at version 2; expected version 1 "
     "instead. Hint: the backtrace further above shows the operation that failed to compute its gradient. "
     "The variable in question was changed in there or anywhere later. Good luck!"),
     "torch.FloatTensor", "cpu", (128, 1), "T", "transposed_weight", 2, 1),
    (("one of the variables needed for gradient computation has been modified by an inplace operation: "
     "[torch.cuda.FloatTensor [1000, 1]], which is output 0 of TanhBackward, is at version 3; expected "
     "version 0 instead. Hint: enable anomaly detection"),
     "torch.cuda.FloatTensor", "cuda", (1000, 1), "Tanh", "activation_output", 3, 0),
    (("one of the variables needed for gradient computation has been modified by an inplace operation: "
     "[torch.cuda.FloatTensor [1, 512, 4, 4]] is at version 24; expected version 23 instead."),
     "torch.cuda.FloatTensor", "cuda", (1, 512, 4, 4), None, "leaf", 24, 23),
    (("one of the variables needed for gradient computation has been modified by an inplace operation: "
     "[torch.FloatTensor [3]] is at version 1; expected version 0 instead."),
     "torch.FloatTensor", "cpu", (3,), None, "leaf", 1, 0),
    (("one of the variables needed for gradient computation has been modified by an inplace operation: "
     "[torch.FloatTensor [4, 4]], which is output 0 of Relu, is at version 1; expected version 0 instead."),
     "torch.FloatTensor", "cpu", (4, 4), "Relu", "activation_output", 1, 0),
    (("one of the variables needed for gradient computation has been modified by an inplace operation: "
     "[torch.cuda.HalfTensor [8, 3]], which is output 0 of SliceBackward0, is at version 5; expected "
     "version 4 instead."), "torch.cuda.HalfTensor", "cuda", (8, 3), "Slice", "index_view", 5, 4),
]


@pytest.mark.parametrize("message,ttype,device,shape,producer,kind,now,expected", OLD)
def test_decode_older_wordings(message, ttype, device, shape, producer, kind, now, expected):
    d = decode(message)
    assert (d.tensor_type, d.device, d.shape, d.producer, d.kind) == (ttype, device, shape, producer, kind)
    assert (d.version, d.expected_version, d.gap) == (now, expected, now - expected)


def test_decode_half_dtype_and_hints():
    assert decode(OLD[-1][0]).dtype == "float16"
    assert decode(BLOG).hint == "anomaly" and decode(OLD[1][0]).hint == "backtrace"


def test_decode_bare_message_and_garbage():
    bare = decode("RuntimeError: one of the variables needed for gradient computation has been "
                  "modified by an inplace operation")
    assert bare is not None and bare.shape is None and bare.kind == "unknown" and bare.causes
    assert decode("CUDA out of memory. Tried to allocate 2.00 MiB") is None
    assert decode("") is None
    assert decode(BLOG[:40]) is None


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_decode_never_raises_on_any_text(text):
    d = decode(text)
    assert d is None or "inplace operation" in text


@settings(max_examples=200, deadline=None)
@given(prefix=st.text(max_size=50), suffix=st.text(max_size=50),
       device=st.sampled_from(["", "cuda."]),
       dtype=st.sampled_from(["Float", "Double", "Half", "BFloat16", "Long"]),
       shape=st.lists(st.integers(0, 10_000), max_size=5),
       producer=st.one_of(st.none(), st.from_regex(r"[A-Z][a-z]{1,10}(Backward0?)?", fullmatch=True)),
       expected=st.integers(0, 10**6), gap=st.integers(1, 100))
def test_decode_round_trips_generated_messages(prefix, suffix, device, dtype, shape, producer, expected, gap):
    which = "" if producer is None else f", which is output 0 of {producer}"
    msg = (f"{prefix}one of the variables needed for gradient computation has been modified by an inplace "
           f"operation: [torch.{device}{dtype}Tensor [{', '.join(map(str, shape))}]]{which}, is at version "
           f"{expected + gap}; expected version {expected} instead.{suffix}")
    d = decode(msg)
    assert d.shape == tuple(shape) and d.version == expected + gap and d.gap == gap
    assert d.device == (device.rstrip(".") or "cpu")
    assert d.producer == (None if producer is None else normalise_producer(producer))
    if dtype == "Long":   # an integer tensor is no weight, whatever made it (issue 33)
        assert d.kind == "integer"
    else:
        assert d.kind == "leaf" if producer is None else d.kind != "leaf"


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["[", "torch.", "0, ", ", which is output 0 of ", "is at version 1"]),
       st.integers(1000, 50_000))
def test_decode_adversarial_long_inputs_complete(chunk, n):
    head = "one of the variables needed for gradient computation has been modified by an inplace operation: ["
    assert decode(head + chunk * n) is not None


@pytest.mark.slow  # a fresh interpreter
def test_the_decoder_imports_no_torch():
    """A fresh interpreter: `import fitlab.explain.decode` (the page's pure-text decoder) leaves
    torch unimported, and the package's `decode` is still the function."""
    code = ("import sys, fitlab.explain.decode, fitlab.explain as e; "
            "print('torch' in sys.modules, e.decode is sys.modules['fitlab.explain.decode'].decode)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["False", "True"]


def test_an_error_raised_in_a_pools_thread_names_the_thread():
    code, report, _ = explain("thread_pool_logger.py")
    assert code == 1 and report["fix"] is not None
    assert any("raised in thread 'logger_0'" in note for note in report["notes"])
