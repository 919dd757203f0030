"""Parse torch's "modified by an inplace operation" message, in any version's wording, into facts.

The library returns facts and keys; the page chooses the words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Characters of a pasted text searched for the message: a whole log (about
# 1 MB), in which the message may be anywhere.
MAX_CHARS = 1_000_000

_CORE = re.compile(r"needed for gradient computation has been modified by an inplace operation")
# Each part is anchored on literal text and uses bounded, non-nested repetition, so a
# search over MAX_CHARS characters stays linear.
_TENSOR = re.compile(r": \[(?P<type>[A-Za-z_][\w.]{0,60}) \[(?P<shape>[0-9, ]{0,200})\]\]")
# A node C++ names itself is printed with its namespace: "torch::autograd::CopySlices" (a slice
# or index assignment into a tensor that is not a view).
_PRODUCER = re.compile(r", which is output (?P<index>\d{1,6}) of (?P<producer>[A-Za-z_][\w:]{0,100}),")
_VERSIONS = re.compile(r",? is at version (?P<now>\d{1,18}); expected version (?P<expected>\d{1,18}) instead")
_HINT_ANOMALY = "enable anomaly detection"
_HINT_BACKTRACE = "the backtrace further above"
_HINT_CALL = re.compile(r"with (?P<call>torch\.autograd\.set_detect_anomaly\([\w=, ]{0,60}\))")
_FREED = "Trying to backward through the graph a second time"
_ERROR = re.compile(f"{_CORE.pattern}|{_FREED}")

_DTYPES = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
    "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
    "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
    "ComplexHalf": "complex32",
}
_LEGACY = re.compile(r"torch\.(?:(?P<device>[a-z]\w{0,20})\.)?(?P<dtype>[A-Za-z0-9]{1,20})Tensor")
_BACKEND = re.compile(r"(?P<device>CPU|CUDA|HIP|XPU|MPS|XLA|Meta|Lazy)(?P<dtype>[A-Za-z0-9]{1,20})Type")

# Producers that are a transposition itself (torch before 2.13 named a saved `weight.t()` after
# its op: `TBackward`, `TBackward0`, `TransposeBackward0`), lower case.
TRANSPOSES = frozenset({"t", "transpose", "permute", "numpyt", "mt"})
_KINDS = (
    ("transposed_weight", {"asstrided", "expand", *TRANSPOSES}),
    ("activation_output", {"relu", "sigmoid", "tanh", "exp", "exp2", "expm1", "softmax", "logsoftmax",
                           "elu", "selu", "celu", "gelu", "silu", "mish", "leakyrelu", "hardtanh",
                           "hardsigmoid", "hardswish", "softplus", "relu6", "threshold", "sqrt",
                           "rsqrt", "reciprocal", "erf", "logsigmoid", "prelu"}),
    ("index_view", {"select", "slice", "index", "unsqueeze", "squeeze", "view", "reshapealias",
                    "unsafeview", "narrow", "split", "splitwithsizes", "unbind", "diagonal",
                    "alias", "unfold", "indexselect", "gather"}),
)
# Kinds whose saved tensor may be a weight (itself, or seen transposed), which an optimizer's step
# writes in place: in a GAN or with retain_graph=True, a step between forward and backward is likelier
# than the blog's re-initialisation.
_WEIGHT_KINDS = frozenset({"transposed_weight", "leaf", "unknown"})
# Likely causes per kind, most likely first: keys of the one list of causes (causes.py, pure text).
LIKELY_CAUSES = {
    "transposed_weight": ("detach_labels", "fresh_forward_after_step", "clone_before_write"),
    # The same family at a shape no weight seen transposed has (not 2-D): a saved slice or view,
    # whose base or itself was written (torch 2.13 names a saved `b[1:3]` AsStrided too).
    "view": ("clone_before_write", "index_assignment", "augmented_assignment"),
    "activation_output": ("inplace_module", "inplace_function", "augmented_assignment", "index_assignment"),
    "index_view": ("index_assignment", "augmented_assignment"),
    "leaf": ("fresh_forward_after_step", "detach_labels", "refilled_input", "augmented_assignment"),
    # An integer (or bool) tensor cannot require gradients: not a weight, but indices an op saved to
    # route its gradient (an embedding's input, gather's index), written in place since.
    "integer": ("augmented_assignment", "refilled_input", "index_assignment"),
    "other": ("augmented_assignment", "index_assignment", "fresh_forward_after_step"),
    "unknown": ("augmented_assignment", "index_assignment", "inplace_module", "fresh_forward_after_step",
                "detach_labels"),
}


@dataclass(frozen=True)
class Decoded:
    """The facts in one in-place error message. Fields the message lacks are None.

    tensor_type: as printed, e.g. "torch.cuda.FloatTensor"; dtype/device are derived
    from it. producer: the node that made the tensor without its "Backward0" suffix,
    e.g. "AsStrided", "T", "Relu"; kind: a key for the producer's family ("leaf" with
    no producer, "integer" for an integer or bool tensor, which cannot be a weight, "view"
    for the transposed-weight family at a shape that is not 2-D, "unknown" when the
    message names no tensor at all); gap: writes
    since the save (version - expected_version); causes: likely causes, most likely first
    (keys of fitlab.explain.causes.CAUSES), by the message's pattern and the signs in the
    pasted traceback's own frames (traceback_signs).
    producer_name: the producer as printed, e.g. "AsStridedBackward0" (wordings differ
    between versions); hint_call: the call the hint names, e.g.
    "torch.autograd.set_detect_anomaly(True)".
    """

    tensor_type: str | None
    dtype: str | None
    device: str | None
    shape: tuple | None
    output_index: int | None
    producer: str | None
    kind: str
    version: int | None
    expected_version: int | None
    gap: int | None
    hint: str | None
    causes: tuple
    producer_name: str | None = None
    hint_call: str | None = None


def normalise_producer(name: str) -> str:
    """"AsStridedBackward0" -> "AsStrided", "TBackward" -> "T", "Relu" -> "Relu",
    "torch::autograd::CopySlices" -> "CopySlices"."""
    stripped = re.sub(r"Backward\d*$", "", name.rpartition("::")[2])
    return stripped or name


def is_transpose(producer: str | None) -> bool:
    """Whether a (normalised) producer is a transposition itself ("T", "Transpose", "Permute")."""
    return producer is not None and producer.lower() in TRANSPOSES


def producer_kind(producer: str | None) -> str:
    """The kind key of a (normalised) producer name, "leaf" when there is none."""
    if producer is None:
        return "leaf"
    low = producer.lower()
    for kind, names in _KINDS:
        if low in names:
            return kind
    return "other"


def _type_facts(tensor_type: str) -> tuple:
    m = _LEGACY.fullmatch(tensor_type)
    if m:
        return _DTYPES.get(m["dtype"]), (m["device"] or "cpu")
    m = _BACKEND.fullmatch(tensor_type)
    if m:
        return _DTYPES.get(m["dtype"]), m["device"].lower()
    return None, None


def decode(message: str) -> Decoded | None:
    """The facts of an in-place error message, or None if `message` is not one. Never raises."""
    if not isinstance(message, str):
        return None
    text = message[:MAX_CHARS]
    core = _CORE.search(text)
    if core is None:
        return None
    pos = core.end()
    tensor_type = dtype = device = shape = index = producer = producer_name = version = expected = None
    m = _TENSOR.match(text, pos)
    if m:
        tensor_type = m["type"]
        dtype, device = _type_facts(tensor_type)
        dims = [d.strip() for d in m["shape"].split(",")]
        if all(dims) or dims == [""]:
            shape = tuple(int(d) for d in dims if d)
        pos = m.end()
        m = _PRODUCER.match(text, pos)
        if m:
            index, producer_name = int(m["index"]), m["producer"]
            producer = normalise_producer(producer_name)
            pos = m.end() - 1
        m = _VERSIONS.match(text, pos)
        if m:
            version, expected = int(m["now"]), int(m["expected"])
    tail = text[pos:]
    hint = "anomaly" if _HINT_ANOMALY in tail else "backtrace" if _HINT_BACKTRACE in tail else None
    call = _HINT_CALL.search(tail)
    kind = producer_kind(producer) if tensor_type is not None else "unknown"
    if dtype is not None and (dtype.startswith(("int", "uint")) or dtype == "bool"):
        kind = "integer"
    elif kind == "transposed_weight" and shape is not None and len(shape) != 2:
        kind = "view"
    return Decoded(
        tensor_type=tensor_type, dtype=dtype, device=device, shape=shape, output_index=index,
        producer=producer, kind=kind, version=version, expected_version=expected,
        gap=None if version is None else version - expected, hint=hint,
        causes=ranked_causes(LIKELY_CAUSES[kind], kind, traceback_signs(text)),
        producer_name=producer_name, hint_call=call["call"] if call else None)


def freed_graph(text: str) -> bool:
    """Whether `text` (torch's message, or a pasted traceback ending in one)
    holds torch's other backward error: a backward through a graph that an
    earlier backward freed ("Trying to backward through the graph a second time")."""
    return isinstance(text, str) and _FREED in text[:MAX_CHARS]


# --- The rest of a pasted traceback -----------------------------------------

# `File "train.py", line 88, in <module>` (its source line follows) and
# IPython's `Cell In[3], line 5` and `File ~/x.py:42, in f(a)` (their context
# follows, `----> 5` marking the line).
_FILE = re.compile(r'^\s*File "(?P<file>[^"]{1,500})", line (?P<line>\d{1,9})(?:, in (?P<function>.{1,200}))?$')
_CELL = re.compile(r"^\s*(?P<cell>Cell In ?\[\d{1,9}\]), line (?P<line>\d{1,9})")
_IPYTHON_FILE = re.compile(r"^\s*File (?P<file>[^\s\"][^\"]{0,500}?):(?P<line>\d{1,9})"
                           r"(?:, in (?P<function>.{1,200}))?$")
_ARROW = re.compile(r"^\s*-+>\s*\d{1,9}\s?(?P<code>.*)$")
_CELL_CONTEXT = 12   # lines after a cell's header that may hold its arrow
_LIBRARY_PARTS = ("site-packages", "dist-packages", "/lib/python", "\\lib\\python", "<frozen", "/torch/", "\\torch\\")


@dataclass(frozen=True)
class PastedLine:
    """A frame of a pasted traceback: file (or notebook cell), line, function, code ("" if not shown)."""

    file: str
    line: int
    function: str
    code: str


def pasted_lines(text: str) -> tuple[PastedLine, ...]:
    """Every frame of the Python tracebacks in `text`, outermost first. Never raises."""
    if not isinstance(text, str):
        return ()
    lines = text[:MAX_CHARS].splitlines()
    found = []
    for i, line in enumerate(lines):
        m = _FILE.match(line)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if _FILE.match(code) or code.startswith(("Traceback", "^", "~")) or ":" in code[:30] and "Error" in code:
                code = ""
            found.append(PastedLine(m["file"], int(m["line"]), (m["function"] or "").strip(), code))
            continue
        m = _CELL.match(line) or _IPYTHON_FILE.match(line)
        if m:
            arrows = (_ARROW.match(after) for after in lines[i + 1:i + 1 + _CELL_CONTEXT])
            code = next((a["code"].strip() for a in arrows if a), "")
            where = m["cell"] if "cell" in m.groupdict() else m["file"]
            found.append(PastedLine(where, int(m["line"]), (m.groupdict().get("function") or "").strip(), code))
    return tuple(found)


def own_line(text: str) -> PastedLine | None:
    """The innermost frame of a pasted traceback in the user's own code (not
    in an installed library such as torch), or None if there is none. Read up to
    the first line holding the error, if a frame of the user's is above it: a
    multiprocessing pool prints its worker's traceback first, then the caller's."""
    if not isinstance(text, str):
        return None
    text = text[:MAX_CHARS]
    first = _ERROR.search(text)
    for part in ((text[:text.rfind("\n", 0, first.start()) + 1],) if first else ()) + (text,):
        own = [f for f in pasted_lines(part) if not any(p in f.file for p in _LIBRARY_PARTS)]
        if own:
            return own[-1]
    return None


# --- Which cause the traceback points to -------------------------------------

# A GAN's losses, nets and optimisers as people name them (`G_loss`, `loss_D`, `errG`, `netD`,
# `opt_G`, `losses['g']`, `self.manual_backward(g_loss)`), or a file named after one (`main_gan.py`).
_GAN_NAMES = re.compile(
    r"(?i)(?<![a-z0-9])(?:(?:[gd]|gen|dis|disc)_?loss|loss_?(?:[gd]|gen|dis|disc)|err_?[gd]|net_?[gd]"
    r"|opt(?:imi[sz]er)?_?[gd]|generator|discriminator)(?![a-z0-9])|losses\[['\"][gd]['\"]\]")
_GAN_FILE = re.compile(r"(?i)gan(?![a-z])")
_RETAIN = re.compile(r"retain_graph\s{0,3}=\s{0,3}True")


def traceback_signs(text: str) -> frozenset[str]:
    """What the pasted traceback's own frames (not torch's or a library's) show about the cause:
    "gan" (a generator's or discriminator's loss, net or optimiser, or a GAN's file) and
    "retain_graph" (a backward that keeps its graph for another). Never raises."""
    signs = set()
    for frame in pasted_lines(text):
        if any(part in frame.file for part in _LIBRARY_PARTS):
            continue
        code = frame.code.split("#", 1)[0]
        name = re.split(r"[\\/]", frame.file)[-1]
        if _GAN_NAMES.search(code) or _GAN_NAMES.search(frame.function) or _GAN_FILE.search(name):
            signs.add("gan")
        if _RETAIN.search(code):
            signs.add("retain_graph")
    return frozenset(signs)


def ranked_causes(causes: tuple, kind: str, signs: frozenset[str]) -> tuple:
    """`causes` (a kind's, most likely first) reordered by the traceback's signs: when the saved
    tensor may be a weight, a GAN or a retained graph puts an optimizer step between forward and
    backward first (and a carried state next, for a retained graph outside a GAN), and the blog's
    re-initialisation last."""
    if kind not in _WEIGHT_KINDS or not signs & {"gan", "retain_graph"}:
        return causes
    first = ("fresh_forward_after_step",) if "gan" in signs else ("fresh_forward_after_step", "carried_state")
    rest = tuple(c for c in causes if c not in first and c != "detach_labels")
    return first + rest + (("detach_labels",) if "detach_labels" in causes else ())
