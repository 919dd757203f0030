"""fitlab: watch a teacher–student fit with a tied layer train, and see why
PyTorch's in-place error happens. Widgets in, pictures out."""

import streamlit as st

from ui.compare import compare_section, remember, student_section
from ui.diagnosis import failure_diagnosis, tied_gradient_section
from ui.results import error_panel, loss_section, parameter_tables, run_with_progress
from ui.sidebar import read_config

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
    remember(run)
    if run.error is not None:
        error_panel(run)
        failure_diagnosis(config)
    else:
        loss_section(run)
        student_section(run)
    parameter_tables(run)
    if run.error is None:
        tied_gradient_section(run)
compare_section()
