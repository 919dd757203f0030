"""The blog's failure replayed step by step, with the evidence kept: the
version ledger, the labels' graph, and torch's own error.

It follows train() for a config with the labels attached (detach=False):
same draws, same in-place re-initialisation, same first batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch
from torch import nn

from fitlab.blog import setup
from fitlab.config import Config
from fitlab.data import attached_labels
from fitlab.failure.graph import LabelGraph, label_graph, saved_versions
from fitlab.failure.versions import named_parameters, parameter_versions, version_ledger


@dataclass(frozen=True)
class Autopsy:
    """What the replay found.

    ledger         version_ledger: each parameter's version at the three moments
    graph          the labels' graph as it stood when backward() failed
    error          torch's message from that backward(), or None if it passed
    torch_version  the torch that replayed it (its wording of the error varies)
    """

    ledger: pd.DataFrame
    graph: LabelGraph
    error: str | None
    torch_version: str

    @property
    def saved_parameters(self) -> tuple[str, ...]:
        """The parameters the labels' graph saved, in the ledger's order: the
        weight of every layer after the first (as `weight.t()`)."""
        saved = {s.parameter for s in self.graph.saved}
        return tuple(p for p in self.ledger.parameter if p in saved)

    @property
    def unsaved_parameters(self) -> tuple[str, ...]:
        """The parameters the labels' graph did not save, in the ledger's
        order: the biases and the first layer's weight."""
        saved = set(self.saved_parameters)
        return tuple(p for p in self.ledger.parameter if p not in saved)


def first_backward(student: nn.Module, inputs: torch.Tensor, labels: torch.Tensor,
                   batch_size: int) -> str | None:
    """The first training step's backward, as train() takes it: the message
    of the RuntimeError it raises, or None."""
    loss = nn.MSELoss()(student(inputs[:batch_size]), labels[:batch_size])
    try:
        loss.backward()
    except RuntimeError as exc:
        return str(exc)
    return None


def autopsy(config: Config) -> Autopsy:
    """Replay `config` with the labels attached, recording the parameters'
    versions after the teacher's forward pass, after the re-initialisation and
    at the first backward(), and the labels' graph at that backward."""
    seen = {}

    def at_labels(teacher, labels) -> None:
        seen["named"] = named = named_parameters(teacher.named_layers())
        seen["versions"], seen["saved"] = parameter_versions(named), saved_versions(labels)

    start = setup(config, attached_labels, after_labels=at_labels)
    named = seen["named"]
    after_reinit = parameter_versions(named)
    error = first_backward(start.student, start.inputs, start.labels, config.batch_size)
    at_backward = parameter_versions(named)
    graph = label_graph(start.labels, named, seen["saved"])
    return Autopsy(version_ledger(named, [seen["versions"], after_reinit, at_backward], graph), graph, error,
                   torch.__version__)
