"""The lesson's first screen (detach off), for a person who just hit this
error in their own code: the story as a picture that steps (the saved
tensor, its version moving, backward stopping), torch's own message and the
fix, above the fold; then the words: the general rule, what it was here, how
this torch's wording differs from the blog's, and what went wrong in detail."""

from __future__ import annotations

import streamlit as st

from fitlab import Config
from fitlab.blog import BLOG_ERROR_MESSAGE
from fitlab.explain import decode
from fitlab.explain.causes import BUMPS
from fitlab.failure.autopsy import Autopsy, autopsy
from fitlab.failure.graph import named_in_error
from fitlab.failure.story import story_rows
from fitlab.figures.lesson import story_chart
from fitlab.run import Run
from fitlab.serving.budget import replay_seconds
from ui.state import heavy
from ui.words import FIELD_LABELS

FIX_CODE = """\
labels = net(X).detach().reshape((-1, 1))   # cut the labels off the teacher's graph
# or never build that graph at all:
with torch.no_grad():
    labels = net(X).reshape((-1, 1))"""
# Why the labels' graph saved no bias and not the first layer's weight (the
# version ledger says it too).
NEVER_SAVED = ("a bias is not needed to differentiate a product, and the first layer's weight only "
               "for a gradient of X, which needs none")


# The rule, true of every cause of this error (a notebook's, a framework's,
# the blog's), in two sentences; which writes count is behind an expander.
RULE = (
    "**The rule.** To compute gradients later, autograd keeps some of the tensors a forward pass "
    "used, *saved for backward* (a layer's input, its weight transposed), and notes each one's version "
    "counter, which an in-place write bumps. When `backward()` reaches a saved tensor whose version moved, it raises "
    "this error instead of computing a gradient from changed values.")
WHICH_WRITES = f"Which writes count: {BUMPS}."


def error_panel(run: Run) -> None:
    """The lesson's first screen: the story as a picture, torch's message,
    the fix; then the rule, what it was here, and the details."""
    err = run.error
    replay = cached_autopsy(run.config)
    with st.container(key="lesson"):
        with st.container(key="lesson_picture"):
            culprit = named_in_error(replay.graph, replay.error or "")
            st.altair_chart(story_chart(story_rows(replay.graph, culprit)), width="stretch")
        st.error(f"**`loss.backward()` raised {err.type}** at epoch {err.epoch}, batch {err.batch}. "
                 f"Torch's own message:\n\n`{err.message}`")
        with st.container(key="lesson_fix"):
            st.markdown(f"**The fix**: cut the labels off the teacher's graph (tick "
                        f"*{FIELD_LABELS['detach']}* in the sidebar to run it):")
            st.code(FIX_CODE, language="python")
        with st.container(key="lesson_rule"):
            st.markdown(RULE)
            with st.expander("Which writes count, and which do not"):
                st.markdown(WHICH_WRITES)
        with st.container(key="lesson_here"):
            st.markdown(what_happened_here(run, replay))
        with st.container(key="lesson_details"):
            wording = wording_note(err.message, replay.torch_version)
            if wording is not None:
                st.caption(wording)
            st.markdown(error_explanation(run, replay))


def what_happened_here(run: Run, replay: Autopsy) -> str:
    """Markdown: the rule applied to this run, in three steps, with the
    shape and versions torch's message gives and the parameter the replay
    found saved under that shape."""
    facts = decode(run.error.message)
    culprit = named_in_error(replay.graph, replay.error or "")
    shape = f" `{list(facts.shape)}`" if facts is not None and facts.shape is not None else ""
    name = f" (`{culprit.parameter}.t()`)" if culprit is not None and culprit.parameter else ""
    known = facts is not None and facts.version is not None and facts.expected_version is not None
    saved_at = f" at version {facts.expected_version}" if known else ""
    now = f": version {facts.version}" if known else ""
    return (f"**Here.** The labels were made by the teacher and not detached, so they keep its graph, "
            f"which saved the{shape} tensor torch names{name}{saved_at}. To make the student, the "
            f"script re-initialised **that same net in place**, which wrote it{now}. The student's first "
            "`loss.backward()` walks on from the loss into the labels' graph, and meets it.")


@st.cache_data(max_entries=32, show_spinner="Replaying the failure…")
def cached_autopsy(config: Config) -> Autopsy:
    """autopsy(config), once per config."""
    return heavy("the replay", autopsy, config, estimate=replay_seconds(config))


def wording_note(message: str, torch_version: str) -> str | None:
    """Markdown: how this torch's wording of the error differs from the
    blog's (BLOG_ERROR_MESSAGE), or None if it reads the same."""
    ours, theirs = decode(message), decode(BLOG_ERROR_MESSAGE)
    if ours is None:
        return None
    pairs = ((theirs.producer_name, ours.producer_name), (theirs.hint_call, ours.hint_call))
    differences = [f"`{b}` where the blog's reads `{a}`" for a, b in pairs if a and b and a != b]
    if not differences:
        return None
    return (f"**Comparing with the blog's message?** Torch {torch_version} words it a little "
            f"differently from the older torch the blog ran: {' and '.join(differences)}. "
            "Same error, same cause.")


def error_explanation(run: Run, replay: Autopsy) -> str:
    """Markdown: what really went wrong in a failed run, quoting torch's
    message for the shape and the two version numbers, and the replay
    (fitlab.failure.autopsy) for what was saved and how the saved view's
    history changed."""
    facts = decode(run.error.message)
    shape = facts.shape if facts is not None else None
    tensor = f"The `{list(shape)}` tensor torch names" if shape is not None else "The tensor torch names"
    if facts is not None and facts.version is not None and facts.expected_version is not None:
        moved = (f"It was saved at version {facts.expected_version} and is now at version "
                 f"{facts.version}.")
    else:
        moved = "Its version counter moved on after it was saved."
    culprit = named_in_error(replay.graph, replay.error or "")
    history = ""
    if culprit is not None and culprit.saved_grad_fn != culprit.grad_fn:
        history = (f" When it was saved, that view's own history (`grad_fn`) was "
                   f"`{culprit.saved_grad_fn}`; after the in-place write to its base it is "
                   f"`{culprit.grad_fn}`: autograd regenerates a view's history once its base is "
                   "written in place, so the word in the message is itself a trace of the write.")
    return f"""\
**What actually went wrong, in detail**

1. The labels were computed by the teacher and **not detached**, so every label
   still carries the teacher's autograd graph. To differentiate later, that
   graph *saved* each layer's input and, for every layer after the first, its
   weight transposed (`weight.t()`, a view): {code_names(replay.saved_parameters)}.
   Not saved: {code_names(replay.unsaved_parameters)} ({NEVER_SAVED}).
   {tensor} is the last layer's saved `weight.t()`.{history}
2. The script then re-initialised **the same net in place** to make the
   student. Each of its in-place writes (`kaiming_normal_`, `zeros_`) bumped a
   parameter's version counter. {moved}
3. The loss compares the student's output with the labels, so `loss.backward()`
   walks on into the labels' graph, finds a saved tensor whose version moved,
   and refuses to compute a gradient from stale values.

**Not the culprit: `reshape`.** The blog blames it, but `reshape` writes
nothing; drop it and the error stays. The culprit is the attached labels plus
the in-place re-initialisation.
"""


def code_names(names) -> str:
    """Names as code spans, comma-separated; "none" for none."""
    return ", ".join(f"`{n}`" for n in names) or "none"
