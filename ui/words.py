"""The few sentences several places of the page share: its first words, each
setting's words (the sidebar draws its widgets with their labels, groups and
help, and messages name a setting by its label), the refusal of settings
over the work budget, and what a run's train loss did (fitlab.outcome's
facts, in numbers)."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from fitlab.config import SETTINGS, Config, one_two_five
from fitlab.serving.budget import OverBudget

if TYPE_CHECKING:   # the page's first words import this module before anything heavy
    from fitlab.outcome import Outcome

MAIN = "main"  # the sidebar's settings a first visit sees
ADVANCED = "Advanced"  # the sidebar's expander of the settings a first visit leaves alone


@dataclass(frozen=True)
class SettingWords:
    """How the page shows one setting (fitlab.config declares what it takes).

    label  its widget's label; for a setting not on the page, what it is
    group  MAIN, ADVANCED, or None: not on the page (only the library takes it)
    help   its widget's help, or None
    """

    label: str
    group: str | None
    help: str | None = None


def stops_in_words(stops) -> str:
    """A picker's stops as the page lists them: "1 to 16, 24, 32", or
    "1, 2, 5 × 10^k" for fitlab.config.one_two_five's."""
    decades = round(math.log10(stops[0])), round(math.log10(stops[-1])) - 1
    if len(stops) > 3 and tuple(stops) == one_two_five(*decades):
        return "1, 2, 5 × 10^k"
    run = _run_length(stops)
    first = [f"{stops[0]} to {stops[run - 1]}"] if run > 2 else [str(s) for s in stops[:run]]
    return ", ".join([*first, *(str(s) for s in stops[run:])])


def _run_length(stops) -> int:
    """How many of `stops` go up one at a time from the first."""
    run = 1
    while run < len(stops) and stops[run] == stops[0] + run:
        run += 1
    return run


_WIDTHS = SETTINGS["width"].stops
_WIDTH_RUN = _run_length(_WIDTHS)
# The page's words for each Config setting, one entry each, in the order the
# sidebar shows them: the library declares what a setting takes
# (fitlab.config), and the page says what it is called and where it sits.
SETTING_WORDS = {
    "width": SettingWords("Hidden width", MAIN,
                          f"Every width to {_WIDTHS[_WIDTH_RUN - 1]}, then {stops_in_words(_WIDTHS[_WIDTH_RUN:])}."),
    "shared_repeats": SettingWords("Shared layer repeats", MAIN,
                                   "How many times the one shared Linear(width, width) is applied."),
    "lr": SettingWords("Learning rate", MAIN, f"{stops_in_words(SETTINGS['lr'].stops)}; a link's or a sweep "
                                              "cell's value between them is kept as it is."),
    "batch_size": SettingWords("Batch size", MAIN),
    "detach": SettingWords("Detach the labels", MAIN, "The blog's fix. Untick to see the error it hit."),
    "epochs": SettingWords("Epochs", ADVANCED),
    "seed": SettingWords("Seed", ADVANCED, "Seeds the run's one random generator."),
    "n_train": SettingWords("Training rows", ADVANCED,
                            f"The first rows of {SETTINGS['n_samples'].default} train; the rest are the test set."),
    "tied": SettingWords("Tie the shared layer", ADVANCED, "Off: the student gets an independent copy of the "
                                                           "shared layer per use, all starting from the same values."),
    "engine": SettingWords("Engine", ADVANCED, "fast: the same math by hand in numpy. autograd: torch, the "
                                               "blog's way. Undetached labels always run autograd."),
    "n_samples": SettingWords("rows in all", None),
    "in_features": SettingWords("input features", None),
}
# The settings the sidebar shows (and the URL holds), in its order.
SIDEBAR_FIELDS = tuple(field for field, words in SETTING_WORDS.items() if words.group is not None)
# How the page names each setting (the library's messages name fields):
# where to find its widget, or, for a setting not on the page, what it is.
FIELD_LABELS = {field: f"{ADVANCED} › {words.label}" if words.group == ADVANCED else words.label
                for field, words in SETTING_WORDS.items()}

# The page's first words, as HTML: the lesson's link opens in the same tab
# (Streamlit's markdown opens every link in a new one) and keeps the settings.
# On a phone the sidebar starts closed, so the control they name is not in
# sight: say where it is. Only the page's own words and a Config's validated
# values go in.
def _teacher_student(config: Config | None) -> str:
    """The net in a sentence, its shared layer as `config` uses it."""
    repeats = None if config is None else config.shared_repeats
    net = ("A small net with one <b>shared layer</b>, used as many times as the sidebar says," if repeats is None
           else "A small net, here without its <b>shared layer</b> (0 repeats)," if repeats == 0
           else f"A small net with one <b>shared layer</b>, used {'once' if repeats == 1 else f'{repeats} times'},")
    return (f"{net} makes the labels (the <i>teacher</i>); the same net, re-initialised in place, "
            "learns them back (the <i>student</i>).")
# Shown on narrow screens only (ui/phone.py): a wide one has the sidebar in sight.
_WHERE_ON_A_PHONE = '<span class="fitlab-narrow"> (on a phone, <b>&gt;&gt;</b> at the top left opens it)</span>'


def lesson_query(config: Config | None) -> str:
    """The query string of the lesson at `config`'s settings: each setting
    that differs from its default, as the sidebar's URL binding writes it,
    and detach off."""
    values = {} if config is None else {
        field: value for field, value in config.as_dict().items()
        if field in SIDEBAR_FIELDS and field != "detach" and value != SETTINGS[field].default}
    values["detach"] = False
    return urlencode({k: str(v).lower() if isinstance(v, bool) else f"{v:g}" if isinstance(v, float) else v
                      for k, v in values.items()})


def intro_html(config: Config | None, detach_ticked: bool = True) -> str:
    """The page's first words: in the lesson, how to leave it; otherwise how
    to reach it, and a link to it at the current settings. `config` is None
    when the settings cannot run; `detach_ticked` is then the sidebar's box."""
    detach = html.escape(FIELD_LABELS["detach"])
    if config is None and not detach_ticked:
        return (f"<p>{_teacher_student(config)} With <b>{detach}</b> unticked these settings would show the "
                "lesson, PyTorch's in-place autograd error and why, but they cannot run here: "
                "below, why.</p>")
    if config is not None and not config.detach:
        return (f"<p>{_teacher_student(config)} Below is the lesson: PyTorch's in-place autograd error, "
                f"made by these settings, and why. Tick <b>{detach}</b> in the sidebar"
                f"{_WHERE_ON_A_PHONE} to see the fixed run train.</p>")
    return (f"<p>{_teacher_student(config)} To meet PyTorch's in-place autograd error, and see why, untick "
            f"<b>{detach}</b> in the sidebar{_WHERE_ON_A_PHONE}, or open "
            f'<a href="?{html.escape(lesson_query(config))}" target="_self">the lesson</a>.</p>')


def over_budget_message(refused: OverBudget) -> str:
    """Markdown: why settings over the work budget do not run, in the
    sidebar's own words."""
    named = ", ".join(f"**{FIELD_LABELS.get(field, field)}** {value}"
                      for field, value in refused.fields.items())
    lower = (f"**{FIELD_LABELS['epochs']}**, **{FIELD_LABELS['width']}** or "
             f"**{FIELD_LABELS['shared_repeats']}**")
    if refused.cells == 1:
        return (f"These settings are too much work for this page: about {refused.seconds:.0f} s "
                f"of training, over the {refused.budget:g} s one run may take here ({named}). "
                f"The work grows as epochs × batches × width²: lower {lower}, or raise "
                f"**{FIELD_LABELS['batch_size']}**.")
    return (f"This sweep is too much work for this page: {refused.cells} cells, about "
            f"{refused.seconds:.0f} s of training, over the {refused.budget:g} s a sweep may "
            f"take here (its widest cell: {named}). Sweep fewer values, or lower {lower}.")


def fold(ratio: float, fell: bool) -> str:
    """A ratio of losses (≥ 1: start/end if it `fell`, end/start if it rose)
    as the notes say it: "by 2%" under 2, "2.5-fold" and "1,124-fold" under
    a million, "by more than 13 orders of magnitude" past it (a fold of 14
    digits reads as nonsense to a class, and its digits are the rounding of
    a loss near float32's floor)."""
    if ratio < 2:
        return f"by {100 * (1 - 1 / ratio if fell else ratio - 1):.2g}%"
    if ratio >= 1e6:
        return f"by more than {math.floor(math.log10(ratio))} orders of magnitude"
    return f"{ratio:,.0f}-fold" if ratio >= 10 else f"{ratio:.2g}-fold"


def loss_change(facts: Outcome) -> str:
    """What the train loss did from epoch 0 to the end, in numbers."""
    start, end = f"{facts.start_loss:.4g}", f"{facts.end_loss:.4g}"
    if facts.loss_fell and facts.end_loss == 0:
        return f"fell to exactly 0 (from {start})"
    if facts.loss_fell:
        return f"fell {fold(facts.loss_ratio, True)} (from {start} to {end})"
    if not math.isfinite(facts.end_loss):
        return f"blew up (from {start} to {end})"
    if facts.loss_rose:
        return f"rose {fold(facts.loss_ratio, False)} (from {start} to {end})"
    return f"did not change ({start})"


def starting(config: Config) -> str:
    """What the page says at once while a run starts (a fresh server's first
    page waits a few seconds for torch before it can)."""
    return "Running the blog's script…" if not config.detach else "Training the student…"


def waiting_in_line(what: str, ahead: int, slots: int) -> str:
    """Plain text: a job waiting for a free slot (all `slots` are held), `ahead` jobs before it in line."""
    others = slots + ahead
    return (f"Waiting to start {what}: the server runs {slots} at once, and "
            f"{others} other {'job is' if others == 1 else 'jobs are'} before yours "
            f"({slots} running, {ahead} waiting ahead of you).")
