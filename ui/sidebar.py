"""The sidebar: widgets in, a validated Config (or a shown error) out.

One widget per setting the page shows (ui.words.SETTING_WORDS), made from
its declaration (fitlab.config.SETTINGS) by its kind: a checkbox for a
bool, a radio for a choice, a select slider for a number with stops, a
slider for a whole number, but a box when the range is too long to drag through (the seed's 2³²) or its end follows
another widget (batch_size ≤ n_train: a slider's end would move under the
thumb). A bound set by another setting holds the widget too: its value
follows a smaller bound. A select slider's stops take in the value in use
between them (stops_in_use).
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from fitlab import Config
from fitlab.config import SETTINGS, Setting
from fitlab.serving.affordable import CHEAPER_UPWARDS, tried_offers
from fitlab.serving.budget import BUDGET_SECONDS, OverBudget, check
from fitlab.serving.memo import Memo
from ui.share import URL, remember_url
from ui.words import ADVANCED, FIELD_LABELS, MAIN, SETTING_WORDS, SIDEBAR_FIELDS, over_budget_message

# Longer ranges of whole numbers get a box: a slider's pixel would skip values by the million.
SLIDER_MAX_SPAN = 10_000
# Each setting's stops, where it has them: the values the budget's offers may take.
STOPS = {name: declared.stops for name, declared in SETTINGS.items() if declared.stops}
# The groups in the order their widgets are drawn: Advanced first in code,
# shown below, because batch_size's bound follows n_train.
DRAWN_FIRST = (ADVANCED, MAIN)
_REFUSED = "settings_refused"  # this run's refused settings and why, for refusal_section
_TO_LOAD = "settings_to_load"  # settings a later part of the page chose, for the next run's widgets


def stops_in_use(declared: Setting) -> list:
    """The stops of `declared`'s select slider: its declared stops, and the
    value in use when it lies between them (a link's, a sweep cell's, or any
    valid value set from Python): it opens as it is, a stop while in use."""
    used = st.session_state.get(declared.name, _in_url(declared))
    try:
        declared.check(used)
    except ValueError:
        return list(declared.stops)
    shown = {_shown(stop) for stop in declared.stops}
    return list(declared.stops) if _shown(used) in shown else sorted([*declared.stops, used])


def _in_url(declared: Setting) -> object:
    """The URL's value of `declared` as its kind reads it, or None."""
    try:
        return (float if declared.kind == "float" else int)(st.query_params.get(declared.name, ""))
    except ValueError:
        return None


def _shown(value: float) -> str:
    """A stop as the slider shows it and the URL holds it: 0.01, 1e-06, 10, 0.0123456789."""
    return f"{value:.12g}"


def widget_for(declared: Setting, values: dict) -> Callable[..., object]:
    """The Streamlit widget that draws `declared` (the module's docstring
    says which and why), given the settings read so far in `values`."""
    if declared.kind == "bool":
        return st.checkbox
    if declared.kind == "choice":
        return st.radio
    if declared.stops:
        return st.select_slider
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

    if declared.at_most is not None:  # its value follows a smaller bound
        high = declared.bounds_given(values)[1]
        if st.session_state.get(declared.name, declared.default) > high:
            st.session_state[declared.name] = high
    common = dict(key=declared.name, bind=URL, help=words.help)
    widget = widget_for(declared, values)
    # Widgets take their default as value= (not via session state): a bound
    # widget drops a URL value equal to its default, so the two must agree.
    if widget is st.checkbox:
        return st.checkbox(words.label, value=declared.default, **common)
    if widget is st.radio:
        return st.radio(words.label, declared.choices, index=declared.choices.index(declared.default),
                        horizontal=True, **common)
    if widget is st.select_slider:
        return st.select_slider(words.label, stops_in_use(declared), value=declared.default,
                                format_func=_shown, **common)
    low, high = declared.bounds_given(values)
    value = min(max(declared.default, low), high)
    if widget is st.slider:
        return st.slider(words.label, low, high, value=value, **common)
    return st.number_input(words.label, min_value=low, max_value=high, value=value, step=1, **common)


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
