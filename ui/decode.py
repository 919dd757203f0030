"""Decode your own error: paste torch's in-place error message (or the whole
traceback), of any torch version, press Decode, and have each part explained,
with the line of your own code it came from. Nothing pasted is run, and it is
never rendered as markdown: only the facts decode() extracts (numbers, and
names of word characters) reach the page inside code spans, and the pasted
file and line are shown as plain text (st.code)."""

from __future__ import annotations

import streamlit as st

from fitlab.explain import Decoded, decode
from fitlab.explain.causes import CAUSES, FREED_GRAPH
from fitlab.explain.decode import MAX_CHARS, is_transpose, own_line
from fitlab.explain.neighbours.messages import FREED, LEAF, LEAF_VIEW, MULTI_VIEW, Neighbour, neighbour

KEY = "decode_message"

EXPLAIN_COMMAND = "python -m fitlab.explain your_script.py"
# The README's install (its "Find the line in your own script"), one line to copy: fitlab has
# no public address to name, so the line is the one run in the repository's folder.
INSTALL_COMMAND = "python -m pip install ."
INSTALL_NOTE = ("Install the command beside the torch you have: in the folder of fitlab's repository (the "
                "one holding its README.md and pyproject.toml), run this line; then "
                "`fitlab-explain your_script.py` runs your script:")

EMPTY = ("The box is empty. Paste torch's error: its `RuntimeError: one of the variables needed for "
         "gradient computation has been modified by an inplace operation …` line, or better the whole "
         "traceback, from `Traceback (most recent call last):` down to that line (its own lines rank the "
         "likely causes), then press Decode.")

TOO_LONG = (f"That text is longer than this box reads ({MAX_CHARS:,} characters), so only its "
            "beginning was searched. If the error is further down, paste the part around its "
            "`RuntimeError:` line.")

NOT_THIS_ERROR = (
    "That is not this error. This box explains torch's *\"one of the variables needed for gradient "
    "computation has been modified by an inplace operation\"*; paste that message (the whole "
    "`RuntimeError:` line) to have it decoded.")

# What each of the in-place error's neighbours is, before its likely causes (the registry's words).
_NEIGHBOURS = {
    FREED: "That is torch's *other* backward error, not this one. " + FREED_GRAPH,
    LEAF: ("That is a neighbour of this error: an in-place write to a **leaf that requires grad** (a parameter, "
           "or a tensor made with `requires_grad=True`), refused as it ran, with grad mode on."),
    LEAF_VIEW: ("That is a neighbour of this error: an in-place write into a **view of a leaf that requires "
                "grad** (a slice of a parameter), refused as it ran, with grad mode on."),
    MULTI_VIEW: ("That is a neighbour of this error: an in-place write into **one of several views** one call "
                 "returned (here `{producer}`: `unbind`, `split`, `chunk`, or a loop over a tensor's rows)."),
}
_FUNCTION_VIEW = ("That is a neighbour of this error: an in-place write into a **view a custom "
                  "autograd.Function returned** (here `{producer}`), or the output of a module a full backward "
                  "hook wraps (`BackwardHookFunction`).")


def neighbour_intro(n: Neighbour) -> str:
    """Markdown: which neighbouring error the paste holds. The producer quoted is a name of word
    characters (messages' pattern), in a code span."""
    return _NEIGHBOURS.get(n.kind, _FUNCTION_VIEW).format(producer=n.producer)


_PRODUCERS = {
    "transposed_weight": (
        "a **view written in place after it was saved** (the view itself or its base): torch "
        "2.13 names any such view `AsStrided`, torch 1.10 to 2.x `AsStridedBackward0`. Often a "
        "**layer's weight seen transposed** (`nn.Linear` multiplies by `weight.t()`; torch 1.6 "
        "named that one `TBackward`), but a saved slice such as `h[:, :3]` reads the same"),
    "activation_output": (
        "the output of an **activation or elementwise function** that saves its own output for its "
        "gradient (ReLU, sigmoid, tanh, exp, softmax…): something changed that output in place "
        "after it was computed"),
    "index_view": (
        "a **view made by indexing, slicing or reshaping** another tensor: a write to the view or "
        "to its base (e.g. `h[:, 0] = 0`) changed what was saved"),
    "view": (
        "a **view written in place after it was saved** (the view itself or its base): torch "
        "2.13 names any such view `AsStrided`, torch 1.10 to 2.x `AsStridedBackward0`. At this "
        "shape it is no layer's weight seen transposed (that is 2-D): a saved slice such as "
        "`b[1:3]`, or another view, whose base was written"),
    "other": "another operation's output, saved for its gradient",
}
# A producer that is the transposition itself (older torch named a saved `weight.t()` after its op).
_TRANSPOSE = (
    "the output of a **transposition** (`.t()`, `transpose` or `permute`), written in place after it "
    "was saved (the tensor or the one it transposes). Most often a **layer's weight**: `nn.Linear` "
    "computes `x @ weight.t()`, so an in-place write to the weight (an optimizer's step, an init) "
    "after the forward pass makes this message. Torch before 1.10 printed its nodes without the `0` "
    "(`TBackward`); 2.13 names such a view `AsStrided`")

_LEAF = ("The message names no operation that made it: it is a **leaf**, made by no tracked "
         "operation, such as a parameter or an input. Most likely a weight changed in place "
         "(an optimiser step, an init, `.copy_`) between the forward pass and its backward.")
# An integer tensor cannot require gradients, so it is no weight.
_INTEGER = ("An **integer tensor** cannot require gradients, so it is no weight: it is indices an "
            "op saved to route its gradient (an `nn.Embedding`'s input, the index of `gather` or "
            "`index_select`), written in place between the forward pass and its backward "
            "(`idx.add_(1)`, `idx.copy_(…)`, `idx[mask] = 0`).")



def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def decoded_parts(d: Decoded) -> list[tuple[str, str]]:
    """(part of the message, what it means), for each part the message has.
    Every fact quoted from the message is a number or a name of word
    characters (decode's patterns), put in code spans."""
    parts = []
    if d.tensor_type is not None:
        what = ("scalar (shape `[]`)" if d.shape == () else f"tensor of shape `{list(d.shape)}`"
                if d.shape is not None else "tensor")
        kind = f"{d.dtype} " if d.dtype else ""
        article = "an" if (kind or what)[0] in "aeiou" else "a"
        device = {"cpu": " on the CPU", "cuda": " on a CUDA GPU"}.get(d.device, f" on `{d.device}`" if d.device else "")
        hint = ""
        if d.shape is not None and len(d.shape) == 2 and d.kind == "transposed_weight":
            a, b = d.shape
            hint = (f" If it is a transposed weight, look for `nn.Linear({a}, {b})`, whose weight is "
                    f"`[{b}, {a}]`.")
        parts.append((f"[{d.tensor_type} …]",
                      f"The **saved tensor**: {article} {kind}{what}{device}. Autograd kept it "
                      f"for the backward pass.{hint}"))
    if d.kind == "integer":
        parts.append((f"output {d.output_index} of {d.producer_name}" if d.producer is not None
                      else "(no \"output of\" part)", _INTEGER))
    elif d.producer is not None:   # quoted as pasted: "AsStridedBackward0", "TBackward"
        made = _TRANSPOSE if is_transpose(d.producer) else _PRODUCERS[d.kind]
        parts.append((f"output {d.output_index} of {d.producer_name}", f"What made it: `{d.producer_name}`, {made}."))
    elif d.tensor_type is not None:
        parts.append(("(no \"output of\" part)", _LEAF))
    if d.version is not None:
        gap = d.gap
        how = (f"it was saved at version {d.expected_version} and has been written "
               f"{_plural(gap, 'time')} since (each in-place op on it adds one)")
        if gap is not None and gap <= 0:
            how = (f"it was saved at version {d.expected_version} and its counter now reads "
                   f"{d.version}: not a later write, but a version counter that changed otherwise")
        loop = (" A high version with a gap of 1 points to a tensor written over and over, "
                "like a weight updated by every `optimizer.step()`." if d.version > 3 and gap == 1 else "")
        parts.append((f"is at version {d.version}; expected version {d.expected_version}",
                      f"The **version gap**: {how}.{loop}"))
    if d.hint == "anomaly":
        parts.append(("Hint: enable anomaly detection …",
                      "Anomaly mode on *before* the forward pass shows the line where the tensor "
                      "was saved, not the line that wrote it."))
    elif d.hint == "backtrace":
        parts.append(("Hint: the backtrace further above …",
                      "Anomaly mode was on when backward ran. Only if it was on during the forward "
                      "pass too does the traceback above show the forward line that saved the "
                      "tensor (not the line that wrote it); turned on just for the backward, torch "
                      "prints this hint with no such traceback."))
    return parts


def likely_causes(d: Decoded | Neighbour) -> list[str]:
    """The likely causes for the message's pattern and the pasted traceback's own lines, most likely
    first (decode ranks them): each cause's sign and fix,
    from fitlab.explain's one list of causes."""
    return [f"{CAUSES[key].sign} Fix: {CAUSES[key].fix}" for key in d.causes]


def find_the_line() -> str:
    """Markdown: the command that finds the writing line in the reader's own script."""
    return ("To find the line in your own script, run it under fitlab's recorder (nothing you "
            "paste here is run):")


def decode_section() -> None:
    """An expander with a form: a text box and a Decode button; under it,
    the pasted message decoded, and the line of the reader's code it names."""
    with st.expander("Decode your own error message"):
        with st.form("decode_form", border=False):
            st.text_area(
                "Paste a \"modified by an inplace operation\" error, or its whole traceback "
                "(any torch version's wording)",
                # One character more than is read: a longer paste, cut by the
                # browser, is told apart from one that fits.
                key=KEY, max_chars=MAX_CHARS + 1, height=110,
                placeholder="RuntimeError: one of the variables needed for gradient computation has been "
                            "modified by an inplace operation: [torch.FloatTensor [5, 1]], …")
            pressed = st.form_submit_button("Decode", type="primary")
        message = st.session_state.get(KEY) or ""
        if not message.strip():
            if pressed:
                st.info(EMPTY)
            return
        with st.container(key="decoded"):
            decoded_answer(message)


def decoded_answer(message: str) -> None:
    """What the pasted text says, part by part; its own line first. A paste
    longer than MAX_CHARS is read from its beginning, and told so."""
    too_long = len(message) > MAX_CHARS
    if too_long:
        st.warning(TOO_LONG)
    own = own_line(message)
    if own is not None:
        st.markdown("**Your line**, the innermost of your own code in the traceback:")
        st.code(f"{own.file}:{own.line}  {own.code}".rstrip(), language="text", wrap_lines=True)
    decoded = decode(message)
    near = neighbour(message) if decoded is None else None
    if decoded is None and near is None:
        if not too_long:
            st.info(NOT_THIS_ERROR)
        return
    if near is not None:
        st.info(neighbour_intro(near))
    else:
        st.markdown("\n".join(f"- `{part}`: {meaning}" for part, meaning in decoded_parts(decoded)))
    st.markdown("**Likely causes**, most likely first:\n\n" +
                "\n".join(f"{i}. {cause}" for i, cause in enumerate(likely_causes(decoded or near), start=1)))
    st.markdown(find_the_line())
    st.code(EXPLAIN_COMMAND, language="bash")
    st.caption(INSTALL_NOTE)
    st.code(INSTALL_COMMAND, language="bash")
