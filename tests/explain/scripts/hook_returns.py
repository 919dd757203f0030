"""A forward hook clamps its module's output in place and returns None itself: the hook's edit does not
apply, and the `.clone()` on the saved line copies the net's output, not tanh's, so --fix meets the same
failure again (DID NOT HELP), not a next write."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
net = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))


def clamp(module, inputs, output):
    output.clamp_(max=0.5)  # written-here
    return None


net[1].register_forward_hook(clamp)
x = torch.nn.functional.softplus(net(torch.randn(3, 4, generator=g)))  # saved-here
x.sum().backward()  # failed-here
