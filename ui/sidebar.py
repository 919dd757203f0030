"""The sidebar: widgets in, a validated Config (or a shown error) out.

One widget per setting the page shows (ui.words.SETTING_WORDS), made from
its declaration (fitlab.config.SETTINGS) by its kind: a checkbox for a
bool, a radio for a choice, a select slider for a number with stops, a
number box for a float, a slider for a whole number, but a box when the
range is too long to drag through (the seed's 2³²) or its end follows
another widget (batch_size ≤ n_train: a slider's end would move under the
thumb). A bound set by another setting holds the widget too: its value
follows a smaller bound. One setting has a hook of its own, the learning
rate's box, whose + and − step through 1, 2, 5 × 10^k.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import streamlit as st

from fitlab import Config
from fitlab.config import SETTINGS, Setting
from fitlab.serving.affordable import CHEAPER_UPWARDS, tried_offers
from fitlab.serving.budget import BUDGET_SECONDS, OverBudget, check
from fitlab.serving.memo import Memo
from ui.lr_clicks import one_step_per_click
from ui.share import URL, remember_url
from ui.words import ADVANCED, FIELD_LABELS, MAIN, SETTING_WORDS, SIDEBAR_FIELDS, over_budget_message

# Longer ranges of whole numbers get a box: a slider's pixel would skip values by the million.
SLIDER_MAX_SPAN = 10_000
# Each setting's stops, where it has them: the values the budget's offers may take.
STOPS = {name: declared.stops for name, declared in SETTINGS.items() if declared.stops}
# The groups in the order their widgets are drawn: Advanced first in code,
# shown below, because batch_size's bound follows n_train.
DRAWN_FIRST = (ADVANCED, MAIN)
_LR_SHOWN = "lr_shown"  # the learning rate the last run showed, to tell a step from typing
_REFUSED = "settings_refused"  # this run's refused settings and why, for refusal_section
_TO_LOAD = "settings_to_load"  # settings a later part of the page chose, for the next run's widgets


def lr_after_step(before: float, after: float) -> float:
    """The learning rate for the box's new value `after`: a click on + or −
    (which adds or takes away half of `before`, the box's step) moves to the
    next value of 1, 2, 5 × 10^k above or below `before`; a typed value stays."""
    step = before / 2
    if math.isclose(after, before + step, rel_tol=1e-9):
        return min(_grid_value(before, up=True), SETTINGS["lr"].bounds[1])
    if math.isclose(after, before - step, rel_tol=1e-9):
        return max(_grid_value(before, up=False), SETTINGS["lr"].bounds[0])
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
        lr = float(st.query_params.get("lr", SETTINGS["lr"].default))
    except ValueError:
        return SETTINGS["lr"].default
    low, high = SETTINGS["lr"].bounds
    return lr if math.isfinite(lr) and low <= lr <= high else SETTINGS["lr"].default


def _lr_stepped() -> None:
    """The learning-rate box's on_change: make + and − multiplicative."""
    before = st.session_state.get(_LR_SHOWN)
    if before is not None:
        st.session_state["lr"] = float(f"{lr_after_step(before, st.session_state['lr']):.12g}")


def _lr_box(draw: Callable[..., object]) -> object:
    """The learning rate's hook: its box steps by half of the value it is
    about to show, and remembers that value to tell a step from typing."""
    shown = st.session_state["lr"] if "lr" in st.session_state else _lr_in_url()
    lr = draw(step=shown / 2, on_change=_lr_stepped)
    one_step_per_click()
    st.session_state[_LR_SHOWN] = lr
    return lr


# The settings whose widget does more than its kind's: each hook gets the
# widget's draw(**more options) and returns its value.
HOOKS = {"lr": _lr_box}


def widget_for(declared: Setting, values: dict) -> Callable[..., object]:
    """The Streamlit widget that draws `declared` (the module's docstring
    says which and why), given the settings read so far in `values`."""
    if declared.kind == "bool":
        return st.checkbox
    if declared.kind == "choice":
        return st.radio
    if declared.stops:
        return st.select_slider
    if declared.kind == "float":
        return st.number_input
    low, high = declared.bounds_given(values)
    follows_a_widget = declared.at_most is not None and declared.at_most[0] in SIDEBAR_FIELDS
    return st.number_input if high - low > SLIDER_MAX_SPAN or follows_a_widget else st.slider


def slid_settings() -> frozenset[str]:
    """The settings drawn as a slider: a thumb that the arrow keys or a drag
    move through the values on the way to the one chosen."""
    defaults = {name: declared.default for name, declared in SETTINGS.items()}
    return frozenset(field for field in SIDEBAR_FIELDS
                     if widget_for(SETTINGS[field], defaults) in (st.slider, st.select_slider))


def draw_setting(declared: Setting, values: dict) -> object:
    """Draw `declared`'s widget, bound to the URL, where the caller is, and
    return its value; `values` holds the settings read so far (and the
    defaults of the others), which its bound may follow."""
    words = SETTING_WORDS[declared.name]

    def draw(**more) -> object:
        common = dict(key=declared.name, bind=URL, help=words.help, **more)
        widget = widget_for(declared, values)
        # Widgets take their default as value= (not via session state): a bound
        # widget drops a URL value equal to its default, so the two must agree.
        if widget is st.checkbox:
            return st.checkbox(words.label, value=declared.default, **common)
        if widget is st.radio:
            return st.radio(words.label, declared.choices, index=declared.choices.index(declared.default),
                            horizontal=True, **common)
        if widget is st.select_slider:
            return st.select_slider(words.label, declared.stops, value=declared.default, **common)
        low, high = declared.bounds_given(values)
        value = min(max(declared.default, low), high)
        if widget is st.slider:
            return st.slider(words.label, low, high, value=value, **common)
        step = {"format": "%g"} if declared.kind == "float" else {"step": 1}
        return st.number_input(words.label, min_value=low, max_value=high, value=value, **step, **common)

    if declared.at_most is not None:  # its value follows a smaller bound
        high = declared.bounds_given(values)[1]
        if st.session_state.get(declared.name, declared.default) > high:
            st.session_state[declared.name] = high
    return HOOKS[declared.name](draw) if declared.name in HOOKS else draw()


def read_config() -> Config | None:
    """Draw the sidebar and build a Config from it, within the work budget
    (fitlab.serving.budget); on a ValueError show it as st.error and return
    None. Every widget is bound to the URL, so a link reproduces the run."""
    remember_url()
    for field, value in st.session_state.pop(_TO_LOAD, {}).items():
        st.session_state[field] = value
    sidebar = st.sidebar
    sidebar.header("The fit")
    places = {MAIN: sidebar.container(), ADVANCED: sidebar.expander(ADVANCED)}
    values = {name: declared.default for name, declared in SETTINGS.items()}
    for group in DRAWN_FIRST:
        with places[group]:
            for field in SIDEBAR_FIELDS:
                if SETTING_WORDS[field].group == group:
                    values[field] = draw_setting(SETTINGS[field], values)
    st.session_state[_REFUSED] = None
    try:
        config = Config(**values)
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
    offers = _tried_offers(config)
    if not offers:
        st.caption("None of the nearest settings trains within the budget here: lower "
                   f"{FIELD_LABELS['epochs']} or {FIELD_LABELS['width']} further.")
        return
    st.markdown("**The nearest settings that fit**, one setting changed, each tried here: it trains "
                "within the budget.")
    with st.container(key="budget_offers", horizontal=True):
        for offer in offers:
            field, value = next((f, getattr(offer, f)) for f in CHEAPER_UPWARDS
                                if getattr(offer, f) != getattr(config, f))
            st.button(f"{FIELD_LABELS[field]} {getattr(config, field)} → {value}", key=f"offer_{field}",
                      on_click=_take_offer, args=(field, value))


def load_settings(values: dict) -> None:
    """Give the sidebar's widgets these values (by Config field) on the next
    run of the page: a part of the page drawn after the widgets chose them.
    The caller reruns the page."""
    st.session_state[_TO_LOAD] = values


_TRIED = Memo(max_entries=64)  # server-wide: a refused config's offers


def _tried_offers(config: Config) -> list[Config]:
    """fitlab.serving.affordable.tried_offers for `config`, tried once per server (a
    heavy job, its runs kept in the run cache, so an offer taken shows at once)."""
    from ui.state import heavy, run_cache  # they import torch: after the page's frame

    found = _TRIED.get(config)
    if found is not None:
        return found
    cache = run_cache()
    with st.spinner("Trying the nearest settings, to offer only those that train within the budget…"):
        offers = heavy("trying the nearest settings", tried_offers, config, choices=STOPS,
                       keep=lambda run: cache.get(run.config, lambda _: run), estimate=2 * BUDGET_SECONDS)
    _TRIED.put(config, offers)
    return offers


def _take_offer(field: str, value: int) -> None:
    """A button's on_click: the sidebar's widget takes the offered value (and the URL with it)."""
    st.session_state[field] = value
