"""The sidebar: widgets in, a validated Config (or a shown error) out."""

from __future__ import annotations

import math

import streamlit as st

from fitlab import BOUNDS, Config
from fitlab.config import ENGINES
from fitlab.serving.affordable import CHEAPER_UPWARDS, nearest_affordable
from fitlab.serving.budget import OverBudget, check
from ui.share import URL, remember_url
from ui.words import ADVANCED, FIELD_LABELS, WIDGET_LABELS, over_budget_message

DEFAULTS = Config()
# The width slider's stops: every width up to 16, where a unit more or less
# changes the fit, then roughly ×1.5 apart up to the bound.
WIDTHS = (*range(1, 17), 24, 32, 48, 64, 96, 128, 192, 256)
_LR_SHOWN = "lr_shown"  # the learning rate the last run showed, to tell a step from typing
_REFUSED = "settings_refused"  # this run's refused settings and why, for refusal_section


def lr_after_step(before: float, after: float) -> float:
    """The learning rate for the box's new value `after`: a click on + or −
    (which adds or takes away half of `before`, the box's step) moves to the
    next value of 1, 2, 5 × 10^k above or below `before`; a typed value stays."""
    step = before / 2
    if math.isclose(after, before + step, rel_tol=1e-9):
        return min(_grid_value(before, up=True), BOUNDS["lr"][1])
    if math.isclose(after, before - step, rel_tol=1e-9):
        return max(_grid_value(before, up=False), BOUNDS["lr"][0])
    return after


def _grid_value(value: float, up: bool) -> float:
    """The nearest value of 1, 2, 5 × 10^k strictly above (or below) `value`."""
    decade = math.floor(math.log10(value))
    grid = [m * 10.0 ** e for e in (decade - 1, decade, decade + 1) for m in (1, 2, 5)]
    # Compared at 12 significant digits, so that 0.01 counts as on the grid.
    if up:
        return next(g for g in grid if float(f"{g:.12g}") > float(f"{value:.12g}"))
    return next(g for g in reversed(grid) if float(f"{g:.12g}") < float(f"{value:.12g}"))


def _lr_in_url() -> float:
    """The learning rate a link opens with (the default if it has none, or
    one the box will refuse): the box's first step is half of it."""
    try:
        lr = float(st.query_params.get("lr", DEFAULTS.lr))
    except ValueError:
        return DEFAULTS.lr
    low, high = BOUNDS["lr"]
    return lr if math.isfinite(lr) and low <= lr <= high else DEFAULTS.lr


def _lr_stepped() -> None:
    """The learning-rate box's on_change: make + and − multiplicative."""
    before = st.session_state.get(_LR_SHOWN)
    if before is not None:
        st.session_state["lr"] = float(f"{lr_after_step(before, st.session_state['lr']):.12g}")


def read_config() -> Config | None:
    """Draw the sidebar and build a Config from it, within the work budget
    (fitlab.serving.budget); on a ValueError show it as st.error and return
    None. Every widget is bound to the URL, so a link reproduces the run."""
    remember_url()
    sidebar = st.sidebar
    sidebar.header("The fit")
    basics = sidebar.container()
    advanced = sidebar.expander(ADVANCED)

    # Widgets take their default as value= (not via session state): a bound
    # widget drops a URL value equal to its default, so the two must agree.
    # Advanced first in code, shown below: batch_size's bound depends on n_train.
    with advanced:
        epochs = st.slider(WIDGET_LABELS["epochs"], *BOUNDS["epochs"], value=DEFAULTS.epochs, key="epochs", bind=URL)
        seed = st.number_input(WIDGET_LABELS["seed"], min_value=BOUNDS["seed"][0], max_value=BOUNDS["seed"][1],
                               value=DEFAULTS.seed, step=1, key="seed", bind=URL,
                               help="Seeds the run's one random generator.")
        n_train = st.slider(WIDGET_LABELS["n_train"], 1, DEFAULTS.n_samples - 1, value=DEFAULTS.n_train,
                            key="n_train", bind=URL,
                            help=f"The first rows of {DEFAULTS.n_samples} train; the rest are the test set.")
        tied = st.checkbox(WIDGET_LABELS["tied"], value=DEFAULTS.tied, key="tied", bind=URL,
                           help="Off: the student gets an independent copy of the shared "
                                "layer per use, all starting from the same values.")
        engine = st.radio(WIDGET_LABELS["engine"], ENGINES, index=ENGINES.index(DEFAULTS.engine), key="engine",
                          bind=URL, horizontal=True,
                          help="fast: the same math by hand in numpy. autograd: torch, the "
                               "blog's way. Undetached labels always run autograd.")
    if st.session_state.get("batch_size", DEFAULTS.batch_size) > n_train:
        st.session_state["batch_size"] = n_train
    with basics:
        width = st.select_slider(WIDGET_LABELS["width"], WIDTHS, value=DEFAULTS.width, key="width", bind=URL,
                                 help="Every width to 16, then 24, 32, 48, 64, 96, 128, 192, 256.")
        repeats = st.slider(WIDGET_LABELS["shared_repeats"], *BOUNDS["shared_repeats"],
                            value=DEFAULTS.shared_repeats, key="shared_repeats", bind=URL,
                            help="How many times the one shared Linear(width, width) is applied.")
        # The step is half of the value the box is about to show.
        shown_lr = st.session_state["lr"] if "lr" in st.session_state else _lr_in_url()
        lr = st.number_input(WIDGET_LABELS["lr"], min_value=BOUNDS["lr"][0], max_value=BOUNDS["lr"][1],
                             value=DEFAULTS.lr, step=shown_lr / 2, format="%g", key="lr", bind=URL,
                             on_change=_lr_stepped,
                             help="+ and − step through 1, 2, 5 × 10^k; type any value.")
        st.session_state[_LR_SHOWN] = lr
        batch_size = st.number_input(WIDGET_LABELS["batch_size"], min_value=1, max_value=n_train,
                                     value=min(DEFAULTS.batch_size, n_train), step=1,
                                     key="batch_size", bind=URL)
        detach = st.checkbox(WIDGET_LABELS["detach"], value=DEFAULTS.detach, key="detach", bind=URL,
                             help="The blog's fix. Untick to see the error it hit.")
    st.session_state[_REFUSED] = None
    try:
        config = Config(width=width, shared_repeats=repeats, lr=lr, batch_size=batch_size,
                        detach=detach, tied=tied, epochs=epochs, seed=seed, n_train=n_train,
                        engine=engine)
        check(config)
        return config
    except OverBudget as refused:
        st.session_state[_REFUSED] = (config, refused)
        return None
    except ValueError as exc:
        st.session_state[_REFUSED] = (None, exc)
        return None


def refusal_section() -> None:
    """Why this run's settings do not run (read_config returned None): the
    refusal, and for settings over the work budget the nearest settings
    that fit, each one click away."""
    config, why = st.session_state.get(_REFUSED) or (None, None)
    if why is None:
        return
    if not isinstance(why, OverBudget):
        st.error("These settings cannot run:")
        st.text(str(why))  # it quotes the values: text, never markdown
        return
    st.error(over_budget_message(why))
    offers = nearest_affordable(config, choices={"width": WIDTHS})[:3]
    if not offers:
        return
    st.markdown("**The nearest settings that fit**, one setting changed:")
    with st.container(key="budget_offers", horizontal=True):
        for offer in offers:
            field, value = next((f, getattr(offer, f)) for f in CHEAPER_UPWARDS
                                if getattr(offer, f) != getattr(config, f))
            st.button(f"{FIELD_LABELS[field]} {getattr(config, field)} → {value}", key=f"offer_{field}",
                      on_click=_take_offer, args=(field, value))


def _take_offer(field: str, value: int) -> None:
    """A button's on_click: the sidebar's widget takes the offered value (and the URL with it)."""
    st.session_state[field] = value
