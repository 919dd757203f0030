"""Reduced from real reports of a helper that normalises part of a tensor in place (`x /= x.norm(...)`
on a slice passed in): the view is the helper's argument, so its name is not rebound; the norm saved
the view on the same line that wrote it, and the copy is made there."""

import torch


def normalise(x):
    x /= x.norm(dim=-1, keepdim=True)  # saved-here written-here


torch.manual_seed(0)
w = torch.randn(4, 6, requires_grad=True)
inp = torch.randn(5, 4)
h = torch.tanh(inp @ w)
normalise(h[:, :3])
h.pow(2).sum().backward()  # failed-here
