"""The tied-gradient ledger: the shared layer's weight gradient, use by use.

A layer used k times gets one gradient contribution per use; autograd adds
them into the one `.grad` (d2l: "gradients of tied layers add up"). Here each
use's contribution is computed from a hook on that use's output
(d loss / d output, times the use's input), so the sum can be checked
against the `.grad` backward() left.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch
from torch import nn

from fitlab.blog import setup
from fitlab.config import Config


@dataclass(frozen=True)
class TiedGradients:
    """One batch's gradients of the shared layer's weight.

    table           one row per weight entry (row, col): the gradient of each
                    use, their sum, and what backward() stored in `.grad` (of
                    the one shared layer, or of each copy when untied)
    tied            whether the student's uses share one layer
    max_difference  tied: max |sum of uses − .grad|; untied: max |use k − copy k's .grad|
    """

    table: pd.DataFrame
    tied: bool
    max_difference: float

    @property
    def uses(self) -> int:
        """How many times the shared layer is used."""
        return sum(c.startswith("use ") for c in self.table.columns)


def _use_gradients(student, batch_x: torch.Tensor, batch_y: torch.Tensor) -> list[torch.Tensor]:
    """Backward on one batch; returns each hidden use's weight gradient, in
    use order, from hooks on the uses' outputs."""
    per_use: dict[int, torch.Tensor] = {}
    calls = []

    def on_forward(module, inputs, output):
        use = len(calls)
        calls.append(use)
        layer_input = inputs[0].detach()
        # d loss/d W for this use = (d loss/d output)^T @ input of this use.
        output.register_hook(lambda grad: per_use.__setitem__(use, grad.T @ layer_input))

    handles = [h.register_forward_hook(on_forward) for h in dict.fromkeys(student.hidden)]
    try:
        nn.MSELoss()(student(batch_x), batch_y).backward()
    finally:
        for handle in handles:
            handle.remove()
    return [per_use[u] for u in sorted(per_use)]


def tied_gradient_ledger(config: Config) -> TiedGradients | None:
    """The ledger for the first batch of `config`'s run with detached labels,
    before any step; None when the shared layer is not used (repeats 0)."""
    if config.shared_repeats == 0:
        return None
    start = setup(replace(config, detach=True))
    student, inputs, labels = start.student, start.inputs, start.labels
    uses = _use_gradients(student, inputs[: config.batch_size], labels[: config.batch_size])
    rows, cols = uses[0].shape
    table = pd.DataFrame({"row": np.repeat(np.arange(rows), cols), "col": np.tile(np.arange(cols), rows)})
    for k, grad in enumerate(uses, start=1):
        table[f"use {k}"] = grad.reshape(-1).numpy().astype(float)
    total = torch.stack(uses).sum(0)
    table["sum of uses"] = total.reshape(-1).numpy().astype(float)
    if config.tied:
        stored = student.hidden[0].weight.grad
        table[".grad"] = stored.reshape(-1).numpy().astype(float)
        difference = float((total - stored).abs().max())
    else:
        for k, copy_layer in enumerate(student.hidden, start=1):
            table[f"copy {k} .grad"] = copy_layer.weight.grad.reshape(-1).numpy().astype(float)
        difference = max(float((g - h.weight.grad).abs().max()) for g, h in zip(uses, student.hidden))
    return TiedGradients(table, config.tied, difference)

