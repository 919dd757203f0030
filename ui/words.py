"""The few sentences several places of the page share: its first words, the
sidebar's labels (the sidebar draws its widgets with them, and messages name
a setting by them), the refusal of settings over the work budget, and what a
run's train loss did (fitlab.outcome's facts, in numbers)."""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from fitlab.config import Config
from fitlab.serving.budget import OverBudget

DEFAULTS = Config()

if TYPE_CHECKING:   # the page's first words import this module before anything heavy
    from fitlab.outcome import Outcome

ADVANCED = "Advanced"  # the sidebar's expander of the settings a first visit leaves alone
# The sidebar's label of each widget, by its Config field.
WIDGET_LABELS = {
    "width": "Hidden width", "shared_repeats": "Shared layer repeats", "lr": "Learning rate",
    "batch_size": "Batch size", "detach": "Detach the labels", "epochs": "Epochs", "seed": "Seed",
    "n_train": "Training rows", "tied": "Tie the shared layer", "engine": "Engine",
}
ADVANCED_FIELDS = ("epochs", "seed", "n_train", "tied", "engine")
# How the page names each Config field (the library's messages name fields):
# where to find its widget, or, for a fixed field, what it is.
FIELD_LABELS = {
    **{field: f"{ADVANCED} › {label}" if field in ADVANCED_FIELDS else label
       for field, label in WIDGET_LABELS.items()},
    "n_samples": "rows in all", "in_features": "input features",
}

# The page's first words, as HTML: the lesson's link opens in the same tab
# (Streamlit's markdown opens every link in a new one) and keeps the settings.
# On a phone the sidebar starts closed, so the control they name is not in
# sight: say where it is. Only the page's own words and a Config's validated
# values go in.
_TEACHER_STUDENT = (
    "A small net with one <b>shared layer</b> makes the labels (the <i>teacher</i>); the same net, "
    "re-initialised in place, learns them back (the <i>student</i>).")
_WHERE_ON_A_PHONE = "(on a phone, <b>&gt;&gt;</b> at the top left opens it)"


def lesson_query(config: Config | None) -> str:
    """The query string of the lesson at `config`'s settings: each setting
    that differs from its default, as the sidebar's URL binding writes it,
    and detach off."""
    values = {} if config is None else {
        field: value for field, value in config.as_dict().items()
        if field in WIDGET_LABELS and field != "detach" and value != getattr(DEFAULTS, field)}
    values["detach"] = False
    return urlencode({k: str(v).lower() if isinstance(v, bool) else f"{v:g}" if isinstance(v, float) else v
                      for k, v in values.items()})


def intro_html(config: Config | None) -> str:
    """The page's first words: in the lesson, how to leave it; otherwise how
    to reach it, and a link to it at the current settings."""
    detach = html.escape(FIELD_LABELS["detach"])
    if config is not None and not config.detach:
        return (f"<p>{_TEACHER_STUDENT} Below is the lesson: PyTorch's in-place autograd error, "
                f"made by these settings, and why. Tick <b>{detach}</b> in the sidebar "
                f"{_WHERE_ON_A_PHONE} to see the fixed run train.</p>")
    return (f"<p>{_TEACHER_STUDENT} To meet PyTorch's in-place autograd error, and see why, untick "
            f"<b>{detach}</b> in the sidebar {_WHERE_ON_A_PHONE}, or open "
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


def fold(ratio: float) -> str:
    """A ratio of losses as the notes say it: "1,124-fold", "2.5-fold"."""
    return f"{ratio:,.0f}-fold" if ratio >= 10 else f"{ratio:.2g}-fold"


def loss_change(facts: Outcome) -> str:
    """What the train loss did from epoch 0 to the end, in numbers."""
    start, end = f"{facts.start_loss:.4g}", f"{facts.end_loss:.4g}"
    if facts.loss_fell:
        return f"fell {fold(facts.loss_ratio)} (from {start} to {end})"
    if not math.isfinite(facts.end_loss):
        return f"blew up (from {start} to {end})"
    if facts.loss_rose:
        return f"rose {fold(facts.loss_ratio)} (from {start} to {end})"
    return f"did not change ({start})"
