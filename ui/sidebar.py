"""The sidebar: widgets in, a validated Config (or a shown error) out."""

from __future__ import annotations

import streamlit as st

from fitlab import BOUNDS, Config
from fitlab.budget import OverBudget, check
from fitlab.config import ENGINES
from ui.share import URL, remember_url
from ui.text import over_budget_message

DEFAULTS = Config()


def read_config() -> Config | None:
    """Draw the sidebar and build a Config from it, within the work budget
    (fitlab.budget); on a ValueError show it as st.error and return None. Every widget is bound to the URL, so a link
    reproduces the run."""
    remember_url()
    sidebar = st.sidebar
    sidebar.header("The fit")
    basics = sidebar.container()
    advanced = sidebar.expander("Advanced")

    # Widgets take their default as value= (not via session state): a bound
    # widget drops a URL value equal to its default, so the two must agree.
    # Advanced first in code, shown below: batch_size's bound depends on n_train.
    with advanced:
        epochs = st.slider("Epochs", *BOUNDS["epochs"], value=DEFAULTS.epochs, key="epochs", bind=URL)
        seed = st.number_input("Seed", min_value=BOUNDS["seed"][0], max_value=BOUNDS["seed"][1],
                               value=DEFAULTS.seed, step=1, key="seed", bind=URL,
                               help="Seeds the run's one random generator.")
        n_train = st.slider("Training rows", 1, DEFAULTS.n_samples - 1, value=DEFAULTS.n_train,
                            key="n_train", bind=URL,
                            help=f"The first rows of {DEFAULTS.n_samples} train; the rest are the test set.")
        tied = st.checkbox("Tie the shared layer", value=DEFAULTS.tied, key="tied", bind=URL,
                           help="Off: the student gets an independent copy of the shared "
                                "layer per use, all starting from the same values.")
        engine = st.radio("Engine", ENGINES, index=ENGINES.index(DEFAULTS.engine), key="engine",
                          bind=URL, horizontal=True,
                          help="fast: the same math by hand in numpy. autograd: torch, the "
                               "blog's way. Undetached labels always run autograd.")
    if st.session_state.get("batch_size", DEFAULTS.batch_size) > n_train:
        st.session_state["batch_size"] = n_train
    with basics:
        width = st.slider("Hidden width", *BOUNDS["width"], value=DEFAULTS.width, key="width", bind=URL)
        repeats = st.slider("Shared layer repeats", *BOUNDS["shared_repeats"],
                            value=DEFAULTS.shared_repeats, key="shared_repeats", bind=URL,
                            help="How many times the one shared Linear(width, width) is applied.")
        lr = st.number_input("Learning rate", min_value=BOUNDS["lr"][0], max_value=BOUNDS["lr"][1],
                             value=DEFAULTS.lr, step=0.005, format="%g", key="lr", bind=URL)
        batch_size = st.number_input("Batch size", min_value=1, max_value=n_train,
                                     value=min(DEFAULTS.batch_size, n_train), step=1,
                                     key="batch_size", bind=URL)
        detach = st.checkbox("Detach the labels", value=DEFAULTS.detach, key="detach", bind=URL,
                             help="The blog's fix. Untick to see the error it hit.")
    try:
        config = Config(width=width, shared_repeats=repeats, lr=lr, batch_size=batch_size,
                        detach=detach, tied=tied, epochs=epochs, seed=seed, n_train=n_train,
                        engine=engine)
        check(config)
        return config
    except OverBudget as refused:
        st.error(over_budget_message(refused))
        return None
    except ValueError as exc:
        st.error(f"These settings cannot run: {exc}")
        return None
