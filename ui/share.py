"""Share links: the sidebar's state and the open tab live in the URL, and a
bad URL is answered with a warning and a working page, never a traceback.

Streamlit drops a bound URL value it cannot use (wrong type, out of range)
silently; to say so, the page remembers the URL it was opened with before any
widget reads it, and compares it with what the widgets ended up holding.
Text from the URL is a stranger's: the warning shows it as plain text (never
markdown), cut short, and a flood of parts summarised.
The address bar is then cleaned of what was ignored, so that it is again the
link to the run on screen.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from fitlab.config import SETTINGS

URL = "query-params"  # the widgets' bind= value: the setting lives in the URL
_OPENED_WITH = "url_opened_with"  # session key of the URL the session began with
# What a session keeps of the URL it was opened with: enough to report it.
_KEPT_KEYS, _KEPT_CHARS = 100, 1000
# Each tab bar's key, drawn by tabs_in_url: the URL's key of its open tab.
# The same keys for every session (the page's code names them).
_TAB_KEYS: set[str] = set()


@dataclass(frozen=True)
class Ignored:
    """One part of the URL the page could not honour.

    key     the URL's key
    values  its values in the URL (each cut to what the session keeps)
    kind    "unknown" (not a setting), "repeated", "invalid", or "tab"
            (not a label of the tabs the key opens)
    used    the value the page uses instead (None for an unknown key; the
            tab it opens for a tab)
    default whether `used` is the setting's default
    """

    key: str
    values: tuple[str, ...]
    kind: str
    used: object = None
    default: bool = False


IGNORED_HEADLINE = ("**Some of this link was ignored.** The page runs without it; "
                    "here is what it left out, and what it uses instead:")

_ONE_BOX = """<style>
.st-key-url_warning { background: rgba(255, 193, 7, 0.16); border-radius: 0.5rem; padding: 0 1rem 0.75rem 0; gap: 0; }
.st-key-url_warning [data-testid="stAlert"] > div { background: transparent; }
.st-key-url_warning [data-testid="stText"] { padding-left: 3.1rem; color: rgb(146, 108, 5); }
</style>"""
# How much of a stranger's URL the warning shows.
SHOWN_PARTS, SHOWN_CHARS = 8, 60


def ignored_lines(problems, unseen: int = 0, allowed=lambda key: None) -> list[str]:
    """Plain-text lines (for st.text, never markdown): each ignored part of
    a link (ui.share.Ignored), its text from the URL cut short with its
    control characters made visible, and what the page uses instead; past
    SHOWN_PARTS, one line that counts the rest (with `unseen` parts the page
    did not even keep). `allowed(key)` words a setting's allowed values
    ("1 to 256"), or None."""
    lines = [f"• {_url_part(p.key, p.values)}: {_ignored_because(p, allowed(p.key))}."
             for p in problems[:SHOWN_PARTS]]
    more = len(problems) - SHOWN_PARTS + unseen
    if more > 0:
        lines.append(f"• … and {more:,} more {'part' if more == 1 else 'parts'} of the link, "
                     "not settings of this page or not usable; ignored.")
    return lines


def _ignored_because(problem, allowed: str | None = None) -> str:
    if problem.kind == "unknown":
        return "not a setting of this page; ignored"
    if problem.kind == "tab":
        return f"not a tab of this page; opening {problem.used}"
    used = _setting_value(problem.used)
    instead = f"the default, {used}" if problem.default else used
    if problem.kind == "repeated":
        return f"given {len(problem.values)} times; using {instead}"
    if allowed is not None:
        return f"{allowed}; using {instead}"
    return f"not a value this setting can take; using {instead}"


def allowed_range(key: str) -> str | None:
    """The values a setting's widget takes, in words ("1 to 256"), or None
    for a key that is not a setting. A bound set by another setting
    (batch_size ≤ n_train) is the one the widget has now."""
    declared = SETTINGS.get(key)
    if declared is None:
        return None
    if declared.kind == "bool":
        return "true or false"
    if declared.kind == "choice":
        return " or ".join(declared.choices)
    now = {name: st.session_state.get(name, other.default) for name, other in SETTINGS.items()}
    low, high = declared.bounds_given(now)
    return f"{low:g} to {high:g}"


def _url_part(key: str, values: tuple[str, ...]) -> str:
    shown = _visible(key)
    if not values or values == ("",):
        return shown if not values else f"{shown}="
    first = f"{shown}={_visible(values[0])}"
    return first if len(values) == 1 else f"{first} (and {len(values) - 1} more)"


def _visible(text: str) -> str:
    """`text` on one line, control characters as escapes (a newline as \\n),
    cut to SHOWN_CHARS."""
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return escaped if len(escaped) <= SHOWN_CHARS else f"{escaped[:SHOWN_CHARS]}… (cut short)"


def _setting_value(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def remember_url() -> None:
    """Keep the query parameters the session was opened with; call before
    any widget is drawn (widgets consume and correct them). A key given more
    than once keeps only its last value in the address bar: the one a number
    input uses (a slider takes its default, and drops the key itself). Once
    its widget is drawn the page may not write a key."""
    if _OPENED_WITH in st.session_state:
        return
    opened = {}
    for key in st.query_params:
        values = st.query_params.get_all(key)
        if len(opened) < _KEPT_KEYS:
            opened[key[:_KEPT_CHARS]] = [v[:_KEPT_CHARS] for v in values[:_KEPT_KEYS]]
        if len(values) > 1:
            st.query_params[key] = values[-1]
    st.session_state[_OPENED_WITH] = opened
    st.session_state[_OPENED_WITH + "_keys"] = len(st.query_params)


def tabs_in_url(labels: Sequence[str], key: str):
    """st.tabs whose open tab lives in the URL under `key`, as a setting does:
    ?view=Sweep opens the Sweep tab, the first tab leaves the URL clean, a
    switch is an entry of the browser's history (ui/browser.py), and a label
    the tabs lack opens the first tab (warn_about_url says so). Each tab's
    .open says whether it is on screen."""
    _TAB_KEYS.add(key)
    return st.tabs(labels, key=key, on_change="rerun", bind=URL)


def url_problems(requested: Mapping[str, list[str]], settings: Mapping[str, object],
                 tabs: Collection[str] = ()) -> list[Ignored]:
    """Each query parameter the page could not honour.

    `requested` maps each key of the URL to its values; `settings` maps each
    widget key to the value the widget holds after reading the URL; `tabs`
    are the keys of tab bars (their value the open tab's label).
    """
    problems = []
    for key, values in requested.items():
        if key not in settings or key.startswith(_OPENED_WITH):
            problems.append(Ignored(key, tuple(values), "unknown"))
        elif len(values) != 1:
            problems.append(_instead(key, values, "repeated", settings[key]))
        elif not _means(values[0], settings[key]):
            problems.append(_instead(key, values, "tab" if key in tabs else "invalid", settings[key]))
    return problems


def warn_about_url(where=None) -> None:
    """Once per session, after every widget is drawn: a warning in `where`
    (a container of the main area, seen on a phone too; default: the page)
    listing the URL's parts the page ignored, as plain text; then the
    address bar drops the keys that are not settings."""
    requested = st.session_state.get(_OPENED_WITH)
    if not requested:
        return
    st.session_state[_OPENED_WITH] = {}  # warn on the first view only
    # The widgets bound to the URL: session state holds the page's own keys too (its run log, a job owner).
    bound = {key: value for key, value in st.session_state.to_dict().items() if key in SETTINGS or key in _TAB_KEYS}
    problems = url_problems(requested, bound, _TAB_KEYS)
    if not problems:
        return
    unseen = st.session_state.get(_OPENED_WITH + "_keys", len(requested)) - len(requested)
    with (where or st.container()).container(key="url_warning"):
        # One warning box around the headline and the list: the list is a
        # stranger's text, so it is st.text (no markdown, no HTML), which an
        # st.warning cannot hold; the container wears the warning's colours.
        st.html(_ONE_BOX)
        st.warning(IGNORED_HEADLINE, icon="⚠️")
        st.text("\n".join(ignored_lines(problems, unseen, allowed_range)))
    settings = st.session_state.to_dict()
    for key in list(st.query_params):
        if key not in settings or key.startswith(_OPENED_WITH):
            del st.query_params[key]


def _instead(key: str, values: list[str], kind: str, used: object) -> Ignored:
    return Ignored(key, tuple(values), kind, used, key in SETTINGS and used == SETTINGS[key].default)


def _means(text: str, value: object) -> bool:
    """Whether URL text `text` denotes the widget value `value`."""
    if isinstance(value, bool):
        return text.lower() == str(value).lower()
    if isinstance(value, (int, float)):
        try:
            number = float(text)
        except ValueError:
            return False
        return math.isfinite(number) and number == value
    return text == str(value)
