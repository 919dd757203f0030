"""Decode your own error: paste torch's in-place error message, of any torch
version, and have each part explained. Nothing pasted is run, and it is never
rendered as markdown: only the facts decode() extracts (numbers, and names of
word characters) reach the page, inside code spans."""

from __future__ import annotations

import streamlit as st

from fitlab.explain import decode
from fitlab.explain.decode import MAX_CHARS
from ui.text import EXPLAIN_COMMAND, NOT_THIS_ERROR, decoded_parts, find_the_line, likely_causes

KEY = "decode_message"


def decode_section() -> None:
    """An expander with a text box; under it, the pasted message decoded."""
    with st.expander("Decode your own error message"):
        message = st.text_area(
            "Paste a \"modified by an inplace operation\" error (any torch version's wording)",
            key=KEY, max_chars=MAX_CHARS, height=110,
            placeholder="RuntimeError: one of the variables needed for gradient computation has been "
                        "modified by an inplace operation: [torch.FloatTensor [5, 1]], …")
        if not message.strip():
            return
        decoded = decode(message)
        if decoded is None:
            st.info(NOT_THIS_ERROR)
            return
        st.markdown("\n".join(f"- `{part}`: {meaning}" for part, meaning in decoded_parts(decoded)))
        st.markdown("**Likely causes**, most likely first:\n\n" +
                    "\n".join(f"{i}. {cause}" for i, cause in enumerate(likely_causes(decoded), start=1)))
        st.markdown(find_the_line())
        st.code(EXPLAIN_COMMAND, language="bash")
