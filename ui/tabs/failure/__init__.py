"""The lesson (detach off), in its running order: the first screen
(error_panel: torch's own message, what went wrong, the fix), then
failure_diagnosis: the blog's script run for real, and the failure explained
like a debugger would; the fix gallery (fix_gallery) in a tab of its own,
trained when it is opened. Every number shown comes from a real replay.

The gallery trains its variants for real, most of them to the end, which
was most of the lesson's time (docs/measurements/browser.md): the script and the views do
not wait for it."""

from __future__ import annotations

import streamlit as st

from fitlab import Config
from fitlab.failure.explained import ExplainedBlog
from fitlab.serving.isolation import WorkerDied
from ui.tabs.failure.gallery import gallery_section, script_gallery_note
from ui.tabs.failure.lesson import cached_autopsy, error_panel
from ui.tabs.failure.script import blog_script_section, cached_explained
from ui.tabs.failure.views import (
    cached_vivid_example,
    graph_section,
    hooks_section,
    script_anomaly_section,
    script_graph_note,
    script_ledger_note,
    version_ledger_section,
    vivid_section,
)

__all__ = ["error_panel", "failure_diagnosis", "fix_gallery"]


def failure_diagnosis(config: Config) -> None:
    """The blog's script, explained; then sections 1–4: version ledger, the
    labels' graph, the anomaly trace, the blog's vivid example, each citing
    the script's lines."""
    explained = blog_script_section(config)
    st.header("Inside the failure")
    st.caption("Four views of the same failure, each replayed from your settings; the "
               "*Fix gallery* tab runs every candidate fix.")
    replay = cached_autopsy(config)
    version_ledger_section(replay)
    _script_note(script_ledger_note, explained)
    graph_section(replay)
    hooks_section(config)
    _script_note(script_graph_note, explained)
    script_anomaly_section(explained)
    vivid_section(cached_vivid_example(config))


def fix_gallery(config: Config) -> None:
    """The fix gallery, trained for these settings, citing the lines of the
    blog's script it changes."""
    gallery_section(config)
    try:
        explained = cached_explained(config)   # the lesson's, cached once its tab has shown it
    except (TimeoutError, WorkerDied):  # its tab says so; the gallery stands without the note
        explained = None
    _script_note(script_gallery_note, explained)


def _script_note(words, explained: ExplainedBlog | None) -> None:
    text = words(explained) if explained is not None else None
    if text:
        st.caption(text)
