"""The shared layer's gradients tab (detach on): each use's contribution,
their sum and .grad; tied against untied on request."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from fitlab import Config
from fitlab.figures.charts import tying_chart
from fitlab.figures.tables import ledger_summary, tying_summary
from fitlab.run import Run
from fitlab.shared_layer.gradients import TiedGradients, tied_gradient_ledger
from ui.state import run_with_progress
from ui.words import FIELD_LABELS


@st.cache_data(max_entries=32, show_spinner="Taking one batch apart…")
def cached_tied_gradients(config: Config) -> TiedGradients | None:
    """tied_gradient_ledger(config), once per config."""
    return tied_gradient_ledger(config)


def agreement(max_difference: float) -> str:
    """How closely two sets of gradients agree, as the end of a sentence."""
    if max_difference == 0:
        return "are **exactly equal**, entry for entry"
    return f"differ by at most **{max_difference:.3g}**"


def tied_gradient_section(run: Run, shown: bool = True) -> None:
    """The shared layer's gradient per use, their sum and .grad; and the
    tied/untied comparison on request. With `shown` False (a tab not on
    screen) nothing is drawn; the toggles keep their values (persist_state)."""
    if not shown:
        return
    config = run.config
    st.header("The shared layer's gradients")
    st.subheader("Tied-gradient ledger")
    ledger = cached_tied_gradients(config)
    if ledger is None:
        st.info("With 0 repeats there is no shared layer to take apart.")
    else:
        _ledger_view(ledger)
    if st.toggle(f"Compare with the {'untied' if config.tied else 'tied'} student",
                 key="gradients_compare_tying", persist_state="page",
                 help=f"Trains the same settings with the other tying ({FIELD_LABELS['tied']})."):
        other = run_with_progress(replace(config, tied=not config.tied))
        runs = sorted([run, other], key=lambda r: not r.config.tied)
        st.table(tying_summary(runs))
        st.altair_chart(tying_chart(runs), width="stretch")


def ledger_note(ledger: TiedGradients) -> str:
    """Markdown over the tied-gradient ledger: what it compares, in the
    words its number of uses allows (one use has nothing to add up)."""
    if ledger.tied and ledger.uses == 1:
        return ("For the first batch of this run, before any step: the shared layer's weight gradient "
                "from its **one use** (a hook on its output) and the `.grad` backward() stored. With one "
                f"use there is nothing to add up: the two {agreement(ledger.max_difference)}. Use it more "
                "than once and its `.grad` becomes the sum of every use's gradient.")
    if ledger.tied:
        return (f"For the first batch of this run, before any step: the shared layer's weight "
                f"gradient from each of its **{ledger.uses} uses** (hooks on each use's output), "
                "their sum, and the `.grad` backward() stored. Gradients of a tied layer **add up**: "
                f"the sum and `.grad` {agreement(ledger.max_difference)}.")
    if ledger.uses == 1:
        return ("This student is untied, with **one copy** of the shared layer: its `.grad` holds its one "
                f"use's gradient (a hook on its output): the two {agreement(ledger.max_difference)}.")
    return (f"This student is untied: each of its **{ledger.uses} copies** gets only its own "
            f"use's gradient (hooks on each use's output) in its `.grad`: the two "
            f"{agreement(ledger.max_difference)}. Tied, the one layer's `.grad` would be their sum.")


def _ledger_view(ledger: TiedGradients) -> None:
    st.markdown(ledger_note(ledger))
    st.table(ledger_summary(ledger))
    if st.toggle("Show every weight entry", key="gradients_entries", persist_state="page"):
        st.dataframe(ledger.table, hide_index=True, width="stretch")
