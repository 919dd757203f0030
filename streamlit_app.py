"""fitlab: watch a teacher–student fit with a tied layer train, and see why
PyTorch's in-place error happens. Widgets in, pictures out."""

import streamlit as st

from ui.results import error_panel, loss_section, parameter_tables, run_with_progress
from ui.sidebar import read_config
from ui.sweep import sweep_section

st.set_page_config(page_title="fitlab", page_icon="📉", layout="wide")
st.title("fitlab")
st.markdown(
    "A small net with one **shared layer** makes the labels (the *teacher*); the same "
    "net, re-initialised in place, learns them back (the *student*). Untick "
    "**Detach the labels** to meet PyTorch's most searched autograd error, and see why."
)

config = read_config()
if config is not None:
    run = run_with_progress(config)
    if run.error is not None:
        error_panel(run)
    else:
        loss_section(run)
    parameter_tables(run)
    sweep_section(config)
