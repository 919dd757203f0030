"""The blog's net: Linear → ReLU → (shared Linear → ReLU) × repeats → Linear.

Every random draw comes from the run's one torch.Generator, in the order the
blog's script makes them with the global RNG, so a seed gives the blog's
numbers without touching global state.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from fitlab.config import Config
from fitlab.weights import Layers


def seeded_linear(in_features: int, out_features: int, generator: torch.Generator) -> nn.Linear:
    """An nn.Linear initialised exactly as nn.Linear's own constructor does,
    but drawing from `generator`.

    The parameters start empty (version 0) and get one in-place initialisation
    each, so they end at version 1 as nn.Linear's do: the version numbers in
    torch's in-place error then read as they do in the blog.
    """
    # Made on the meta device (no draws), then given real empty parameters:
    # `.to_empty()` would do the same but imports sympy the first time it
    # runs, which a fresh server's first page would wait for.
    layer = nn.Linear(in_features, out_features, device="meta")
    layer.weight = nn.Parameter(torch.empty(out_features, in_features))
    layer.bias = nn.Parameter(torch.empty(out_features))
    # Mirrors nn.Linear.reset_parameters (torch 2.13), with the generator.
    nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
    bound = 1 / math.sqrt(in_features)
    nn.init.uniform_(layer.bias, -bound, bound, generator=generator)
    return layer


class TiedNet(nn.Sequential):
    """The blog's net: first → ReLU → (hidden → ReLU)… → last.

    In the tied net every hidden entry is the same module object, so its
    weight is shared across uses and its gradients add up. An untied net
    holds an independent copy per use.
    """

    def __init__(self, first: nn.Linear, hidden: list[nn.Linear], last: nn.Linear):
        super().__init__(first, nn.ReLU(), *[m for h in hidden for m in (h, nn.ReLU())], last)

    @property
    def first(self) -> nn.Linear:
        """The input layer, Linear(in_features, width)."""
        return self[0]

    @property
    def last(self) -> nn.Linear:
        """The output layer, Linear(width, 1)."""
        return self[-1]

    @property
    def hidden(self) -> list[nn.Linear]:
        """The hidden Linear of each use, in order (one object when tied)."""
        return list(self)[2:-1:2]

    @property
    def tied(self) -> bool:
        """Whether all hidden uses are one shared module."""
        return len({id(h) for h in self.hidden}) <= 1

    def named_layers(self) -> list[tuple[str, nn.Linear]]:
        """(name, layer) for each distinct Linear, in module order, named in
        the user's words: "shared" (its use count is fitlab.weights.use_counts'),
        or "shared copy k" for each copy of an untied net."""
        hidden = self.hidden
        if self.tied:
            named = [("shared", hidden[0])] if hidden else []
        else:
            named = [(f"shared copy {i + 1}", h) for i, h in enumerate(hidden)]
        return [("first", self.first), *named, ("last", self.last)]

    def layer_arrays(self) -> Layers:
        """named_layers() as (name, weight, bias) numpy copies: plain values
        the engine-agnostic student-vs-teacher measures take."""
        return [(name, layer.weight.detach().numpy().copy(), layer.bias.detach().numpy().copy())
                for name, layer in self.named_layers()]


def build_teacher(config: Config, generator: torch.Generator) -> TiedNet:
    """The net whose outputs are the labels, drawn as the blog draws it: the
    shared layer first (even when unused, so other layers do not change with
    repeats), then the first layer, then the last."""
    shared = seeded_linear(config.width, config.width, generator)
    first = seeded_linear(config.in_features, config.width, generator)
    last = seeded_linear(config.width, 1, generator)
    return TiedNet(first, [shared] * config.shared_repeats, last)


def reinitialise_as_student(net: TiedNet, generator: torch.Generator) -> None:
    """The blog's `net.apply(init_weight)`: in place, each distinct Linear in
    module order gets Kaiming-normal weights and zero biases.

    In place on purpose: this is what changes the weights the teacher's graph
    saved, and so what makes the undetached labels fail in backward().
    """
    for _, layer in net.named_layers():
        nn.init.kaiming_normal_(layer.weight, generator=generator)
        nn.init.zeros_(layer.bias)


def untie(net: TiedNet) -> TiedNet:
    """A new net with the same values whose shared layer is replaced by
    independent copies, one per use."""
    hidden = [copy.deepcopy(h) for h in net.hidden]
    return TiedNet(copy.deepcopy(net.first), hidden, copy.deepcopy(net.last))
