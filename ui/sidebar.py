"""The sidebar: widgets in, a validated Config (or a shown error) out."""

from __future__ import annotations

import streamlit as st

from fitlab import BOUNDS, Config
from fitlab.config import ENGINES

DEFAULTS = Config()


def _default(key: str):
    st.session_state.setdefault(key, getattr(DEFAULTS, key))


def read_config() -> Config | None:
    """Draw the sidebar and build a Config from it; on a ValueError show it
    as st.error and return None."""
    for key in ("width", "shared_repeats", "lr", "batch_size", "detach", "tied",
                "epochs", "seed", "n_train", "engine"):
        _default(key)
    sidebar = st.sidebar
    sidebar.header("The fit")
    basics = sidebar.container()
    advanced = sidebar.expander("Advanced")

    # Advanced first in code, shown below: batch_size's bound depends on n_train.
    with advanced:
        epochs = st.slider("Epochs", *BOUNDS["epochs"], key="epochs")
        seed = st.number_input("Seed", min_value=BOUNDS["seed"][0], max_value=BOUNDS["seed"][1],
                               step=1, key="seed", help="Seeds the run's one random generator.")
        n_train = st.slider("Training rows", 1, DEFAULTS.n_samples - 1, key="n_train",
                            help=f"The first rows of {DEFAULTS.n_samples} train; the rest are the test set.")
        tied = st.checkbox("Tie the shared layer", key="tied",
                           help="Off: the student gets an independent copy of the shared "
                                "layer per use, all starting from the same values.")
        engine = st.radio("Engine", ENGINES, key="engine", horizontal=True,
                          help="fast: the same math by hand in numpy. autograd: torch, the "
                               "blog's way. Undetached labels always run autograd.")
    st.session_state["batch_size"] = min(st.session_state["batch_size"], n_train)
    with basics:
        width = st.slider("Hidden width", *BOUNDS["width"], key="width")
        repeats = st.slider("Shared layer repeats", *BOUNDS["shared_repeats"], key="shared_repeats",
                            help="How many times the one shared Linear(width, width) is applied.")
        lr = st.number_input("Learning rate", min_value=BOUNDS["lr"][0], max_value=BOUNDS["lr"][1],
                             step=0.005, format="%g", key="lr")
        batch_size = st.number_input("Batch size", min_value=1, max_value=n_train, step=1,
                                     key="batch_size")
        detach = st.checkbox("Detach the labels", key="detach",
                             help="The blog's fix. Untick to see the error it hit.")
    try:
        return Config(width=width, shared_repeats=repeats, lr=lr, batch_size=batch_size,
                      detach=detach, tied=tied, epochs=epochs, seed=seed, n_train=n_train,
                      engine=engine)
    except ValueError as exc:
        st.error(f"These settings cannot run: {exc}")
        return None
