"""The floor of a page run: a Streamlit page that imports torch and draws one
Altair chart of a loss history (tools/bench_page.py's baseline)."""

import altair as alt
import pandas as pd
import streamlit as st
import torch

st.title("floor")
losses = torch.linspace(1, 0.01, 301).tolist()
st.altair_chart(alt.Chart(pd.DataFrame({"epoch": range(301), "loss": losses})).mark_line()
                .encode(x="epoch", y=alt.Y("loss", scale=alt.Scale(type="log"))), width="stretch")
