"""A helper halves its argument in place; the out-of-place edit rebinds the helper's own name, so
the caller's tensor is no longer halved: the error goes, and the gradients change."""

import torch


def halve(t):
    t.mul_(0.5)  # written-here


torch.manual_seed(0)
x = torch.randn(5, requires_grad=True)
h = torch.sigmoid(x)  # saved-here
halve(h)
h.sum().backward()  # failed-here
