"""The lesson runs the blog's own script through fitlab.explain in a worker process and
shows it with the saved, written and failed lines marked, for any sidebar setting; the
other views cite its lines. Expected lines are found in the rendered script's text,
so they test the recorder's frames, not a copy of them."""

import html
import re
import sys

import pytest
import torch

from fitlab import Config, train
from fitlab.explain import decode
from fitlab.explain.decode import MAX_CHARS
from fitlab.failure.blog_script import blog_script
from fitlab.failure.explained import SCRIPT_NAME, explained_blog
from fitlab.failure.fixes import VARIANTS
from tests.page.helpers import open_page, open_tab

SCRIPT_HEAD = "# The blog's script"
LINES = {  # role: (the code the report must point at, the script's line that called it)
    "saved": ("return net(X).reshape((-1, 1))", "True_label = get_label(net, X)"),
    "written": ("nn.init.kaiming_normal_(m.weight)", "net.apply(init_weight)"),
    "failed": ("loss.backward()", "train(net, trainer, Loss, X[:"),
}
MARKS = {"saved": "saved here", "written": "written here", "failed": "backward fails here"}
_ROW = re.compile(r'<div data-line="(?P<n>\d+)"(?: data-mark="(?P<role>\w+)"[^>]*)?><span class="n">\d+</span>'
                  r'(?:<span>)?<code>(?P<code>.*?)</code>(?:<span class="say"><span class="role">\w+</span> '
                  r'(?P<says>.*?)</span></span>)?</div>')


def line_of(script: str, code: str) -> int:
    """The 1-based line of `script` whose code starts with `code`."""
    hits = [i for i, line in enumerate(script.splitlines(), start=1) if line.strip().startswith(code)]
    assert len(hits) == 1, (code, hits)
    return hits[0]


def test_explained_blog_finds_the_three_lines_and_restores_the_process():
    config = Config(detach=False, width=4, shared_repeats=5)
    argv, main = list(sys.argv), sys.modules["__main__"]
    explained = explained_blog(config)
    assert sys.argv == argv and sys.modules["__main__"] is main and not torch.is_anomaly_enabled()
    script = explained.script
    assert script == blog_script(config)
    report = explained.report
    assert report.status == "inplace_error"
    assert report.error == train(config).error.message
    facts = decode(report.error)
    assert tuple(report.tensor.shape) == facts.shape == (4, 1)
    for role, (inner, caller) in LINES.items():
        marks = {m.caller: m.line for m in explained.marks if m.role == role}
        assert marks == {False: line_of(script, inner), True: line_of(script, caller)}, role
    assert report.writes[0].op == "aten::normal_" and report.fix.kind == "detach_labels"
    # Anomaly mode names the forward line that saved the tensor: the report's "saved at".
    assert explained.anomaly_node == report.tensor.node
    assert [f.line for f in explained.anomaly_frames] == [m.line for m in explained.marks if m.role == "saved"]
    assert "0.weight Parameter containing" in explained.printed
    # --fix's rerun: the labels detached, and it runs (no reference applies to a detach).
    proof = report.proof
    assert proof.verdict == "runs" and [c.kind for c in proof.culprits] == ["detach_labels"]
    assert "-True_label = get_label(net, X)\n+True_label = get_label(net, X).detach()" in proof.diff
    assert proof.diff.startswith(f"--- a/{SCRIPT_NAME}\n+++ b/{SCRIPT_NAME}")


def test_detached_script_runs_its_first_epoch_only():
    explained = explained_blog(Config(epochs=50))
    assert explained.report.status == "finished" and explained.config.epochs == 1
    assert explained.printed.count("epoch ") == 1 and explained.anomaly_node is None


def shown_script(at) -> list[tuple[str, str | None, str]]:
    """The marked script as the page draws it (HTML): per line its code,
    the role it is marked with (or None), and what the mark says."""
    bodies = [h.proto.body for h in at.get("html") if 'class="fitlab-script"' in h.proto.body]
    assert len(bodies) == 1
    rows = [m for m in _ROW.finditer(bodies[0])]
    assert [int(m["n"]) for m in rows] == list(range(1, len(rows) + 1))
    return [(html.unescape(m["code"]).rstrip(" ") if m["code"] != " " else "", m["role"],
             html.unescape(m["says"] or "")) for m in rows]


SETTINGS = [
    dict(),
    dict(width=7, shared_repeats=0),
    dict(width=3, shared_repeats=8),
    dict(tied="false", shared_repeats=3),
    dict(batch_size=1, seed=9, epochs=2),
    dict(batch_size=50, lr=0.5, width=12),
]


@pytest.mark.slow  # the lesson's script runs in a worker process
@pytest.mark.parametrize("settings", SETTINGS, ids=str)
def test_lesson_marks_the_three_lines_of_the_blogs_script(settings):
    query = {"epochs": 3, **settings, "detach": "false"}
    at = open_page(timeout=180, **{k: str(v) for k, v in query.items()})
    assert not at.exception
    config = Config(detach=False, **{k: (v == "true" if v in ("true", "false") else v)
                                     for k, v in query.items() if k != "detach"})
    script = blog_script(config)
    shown = shown_script(at)
    assert [code for code, _, _ in shown] == script.rstrip("\n").splitlines()
    for role, (inner, caller) in LINES.items():
        _, marked_as, says = shown[line_of(script, inner) - 1]
        assert marked_as == role and says.startswith(MARKS[role]), role
        assert shown[line_of(script, caller) - 1][2]
    assert len([row for row in shown if row[1] is not None]) == 6
    story = next(m.value for m in at.markdown if m.value.startswith("- **Saved**"))
    for inner, _ in LINES.values():
        assert f"line {line_of(script, inner)} (`{inner}" in story
    anomaly = next(c.value for c in at.code if c.value.startswith(f'File "{SCRIPT_NAME}"'))
    assert f'line {line_of(script, LINES["saved"][0])}, in get_label' in anomaly
    captions = " ".join(c.value for c in at.caption)
    assert f"is after line {line_of(script, 'net.apply(init_weight)')}" in captions
    [diff] = [c.value for c in at.code if c.language == "diff"]
    assert "+True_label = get_label(net, X).detach()" in diff
    words = next(m.value for m in at.markdown if m.value.startswith("**Proof, not advice.**"))
    assert "it **runs**" in words and "No reference applies" in words
    assert "stop gradients reaching the teacher's graph" in words
    report = next(c.value for c in at.code if c.value.startswith("[torch.FloatTensor"))
    assert f"{SCRIPT_NAME}:{line_of(script, LINES['written'][0])}" in report and "<string>" not in report
    open_tab(at, "Fix gallery", key="failure_view")   # the gallery cites the same script's lines
    gallery_note = next(c.value for c in at.caption if c.value.startswith("In the blog's script"))
    assert f"change line {line_of(script, LINES['saved'][0])}" in gallery_note
    assert f"*retain_graph=True* changes line {line_of(script, LINES['failed'][0])}" in gallery_note


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_the_views_keep_their_order_under_the_script():
    at = open_page(timeout=180, detach="false", epochs="3")
    headers = [h.value for h in at.header]
    assert headers.index("The blog's script, run for real") < headers.index("Inside the failure")
    assert [s.value for s in at.subheader][:4] == [
        "1. Version ledger", "2. The labels' autograd graph", "3. Anomaly trace",
        "4. The blog's “more vivid example”, run"]


# --- Decode your own message --------------------------------------------------

def provoked(make) -> str:
    """torch's own message for a backward made by `make()`."""
    with pytest.raises(RuntimeError) as caught:
        make()
    return str(caught.value)


def relu_output_written():
    x = torch.randn(4, 4, requires_grad=True)
    y = torch.relu(x)
    y.mul_(2)
    y.sum().backward()


def leaf_written():
    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3)
    y = (w * x).sum()
    x.add_(1)
    y.backward()


def decode_page(message: str):
    """The page after pasting `message` into the decoder and pressing Decode."""
    at = open_page()
    at.text_area(key="decode_message").input(message)
    next(b for b in at.button if b.label == "Decode").click().run()
    assert not at.exception
    return at


def page_words(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [i.value for i in at.info] + [c.value for c in at.code])


def test_decoder_explains_torch_2_13s_own_message():
    message = train(Config(detach=False)).error.message
    words = page_words(decode_page(message))
    assert "`[torch.FloatTensor …]`" in words and "shape `[5, 1]`" in words
    assert "`nn.Linear(5, 1)`" in words  # the transposed weight's layer
    assert "What made it: `AsStrided`" in words and "transposed" in words
    assert "written 1 time since" in words
    assert "python -m fitlab.explain your_script.py" in words
    assert "re-initialised in place" in words.split("Likely causes")[1].split("\n")[2]


@pytest.mark.parametrize("make,producer,kind_words", [
    (relu_output_written, "Relu", "activation or elementwise function"),
    (leaf_written, None, "**leaf**"),
], ids=["relu", "leaf"])
def test_decoder_on_provoked_messages(make, producer, kind_words):
    message = provoked(make)
    facts = decode(message)
    assert facts.producer == producer
    words = page_words(decode_page(message))
    assert kind_words in words and f"version {facts.version}; expected version {facts.expected_version}" in words


def test_decoder_on_older_wordings():
    from tests.explain.test_explain import BLOG, OLD

    words = page_words(decode_page(BLOG))  # the blog's torch: AsStridedBackward0, quoted as pasted
    assert "What made it: `AsStridedBackward0`" in words
    cuda = OLD[3][0]  # CUDA, "is at version 24; expected version 23", no producer
    words = page_words(decode_page(cuda))
    assert "on a CUDA GPU" in words and "shape `[1, 512, 4, 4]`" in words
    assert "written 1 time since" in words and "over and over" in words and "**leaf**" in words
    words = page_words(decode_page(OLD[1][0]))  # TBackward, the anomaly-mode hint
    assert "What made it: `TBackward`" in words and "Only if it was on during the forward pass too" in words


@pytest.mark.parametrize("garbage", [
    "hello", "CUDA out of memory. Tried to allocate 2.00 MiB", "**bold** <script>alert(1)</script>",
    "[link](javascript:alert(1)) <img src=x onerror=alert(1)>",
])
def test_decoder_garbage_gets_a_plain_answer(garbage):
    at = decode_page(garbage)
    assert sum(i.value.startswith("That is not this error") for i in at.info) == 1
    assert garbage not in page_words(at)


def test_decoder_never_renders_pasted_markup():
    payload = ("one of the variables needed for gradient computation has been modified by an inplace "
               "operation: [torch.<b>FloatTensor</b> [5, 1]], which is output 0 of **Bold**, "
               "<script>alert(1)</script> `code` :red[x]")
    at = decode_page(payload)
    words = page_words(at)
    for bit in ("<b>", "<script", "**Bold**", ":red[", "`code`"):
        assert bit not in words
    assert "Likely causes" in words  # still the family's message: the general causes
    box = at.text_area(key="decode_message")
    assert box.proto.max_chars == MAX_CHARS + 1  # one more than is read: a longer paste is told


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_decoder_is_there_with_detach_on_and_off():
    for query in ({}, {"detach": "false", "epochs": "2"}):
        at = open_page(timeout=180, **query)
        assert [e.label for e in at.expander][0] == "Decode your own error message"


def test_a_worker_that_times_out_gives_a_plain_warning(monkeypatch):
    def too_slow(*args, **kwargs):
        raise TimeoutError

    monkeypatch.setattr("ui.tabs.failure.script.run_isolated", too_slow)
    at = open_page(timeout=180, detach="false", epochs="3")
    assert not at.exception
    assert any("took too long" in w.value for w in at.warning)
    assert any(i.value.startswith("Not shown") for i in at.info)
    assert not [c for c in at.code if c.value.startswith(SCRIPT_HEAD)]
    assert not [h for h in at.get("html") if 'class="fitlab-script"' in h.proto.body]
    assert "4. The blog's “more vivid example”, run" in [s.value for s in at.subheader]
    open_tab(at, "Fix gallery", key="failure_view")   # the gallery stands without the script's note
    assert not at.exception and "Fix gallery" in [s.value for s in at.subheader]
    assert len(at.table[0].value) == len(VARIANTS)
    assert not [c for c in at.caption if c.value.startswith("In the blog's script")]
