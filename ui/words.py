"""The few sentences several places of the page share: its first words, the
sidebar's labels (the sidebar draws its widgets with them, and messages name
a setting by them), the refusal of settings over the work budget, and what a
run's train loss did (fitlab.outcome's facts, in numbers)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fitlab.budget import OverBudget

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

# The page's first words. On a phone the sidebar starts closed, so the
# control they name is not in sight: say where it is, and link the lesson.
INTRO = (
    "A small net with one **shared layer** makes the labels (the *teacher*); the same net, "
    "re-initialised in place, learns them back (the *student*). To meet PyTorch's in-place "
    f"autograd error, and see why, untick **{FIELD_LABELS['detach']}** in the sidebar "
    "(on a phone, **>>** at the top left opens it), or open [the lesson](?detach=false).")


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
