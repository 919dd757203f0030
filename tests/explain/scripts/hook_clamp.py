"""A forward hook clamps its module's output in place, which the module's tanh saved (as
pytorch/pytorch#74024's docs fix says, a hook returns the new output instead)."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
net = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))


def clamp(module, inputs, output):
    output.clamp_(max=0.5)  # written-here


net[1].register_forward_hook(clamp)
x = torch.nn.functional.softplus(net(torch.randn(3, 4, generator=g)))  # saved-here
x.sum().backward()  # failed-here
