"""Streamlit pieces of the page: each reads widgets or renders a part of a run."""
