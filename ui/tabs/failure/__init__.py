"""The lesson (detach off), in its running order: the first screen
(error_panel: torch's own message, what went wrong, the fix), then
failure_diagnosis: the blog's script run for real, and the failure explained
like a debugger would. Every number shown comes from a real replay."""

from __future__ import annotations

import streamlit as st

from fitlab import Config
from fitlab.failure.explained import ExplainedBlog
from ui.tabs.failure.gallery import gallery_section, script_gallery_note
from ui.tabs.failure.lesson import cached_autopsy, error_panel
from ui.tabs.failure.script import blog_script_section
from ui.tabs.failure.views import (
    cached_vivid_example,
    graph_section,
    script_anomaly_section,
    script_graph_note,
    script_ledger_note,
    version_ledger_section,
    vivid_section,
)

__all__ = ["error_panel", "failure_diagnosis"]


def failure_diagnosis(config: Config) -> None:
    """The blog's script, explained; then sections 1–5: version ledger, the
    labels' graph, the anomaly trace, the fix gallery, the blog's vivid
    example, each citing the script's lines."""
    explained = blog_script_section(config)
    st.header("Inside the failure")
    st.caption("Five views of the same failure, each replayed from your settings.")
    replay = cached_autopsy(config)
    version_ledger_section(replay)
    _script_note(script_ledger_note, explained)
    graph_section(replay)
    _script_note(script_graph_note, explained)
    script_anomaly_section(explained)
    gallery_section(config)
    _script_note(script_gallery_note, explained)
    vivid_section(cached_vivid_example(config))


def _script_note(words, explained: ExplainedBlog | None) -> None:
    text = words(explained) if explained is not None else None
    if text:
        st.caption(text)
