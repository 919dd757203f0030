"""A forward hook clamps a module's output in place, which the next layer's tanh saved: the
`.clone()` the advice appends to the saved line copies the net's output, not tanh's, so --fix
finds the same failure again (DID NOT HELP), not a next write."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
net = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))


def clamp(module, inputs, output):
    output.clamp_(max=0.5)  # written-here


net[1].register_forward_hook(clamp)
x = torch.nn.functional.softplus(net(torch.randn(3, 4, generator=g)))  # saved-here
x.sum().backward()  # failed-here
