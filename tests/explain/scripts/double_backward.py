"""A gradient penalty (autograd.grad with create_graph=True), then a write to a tensor the nodes
made during that backward saved."""

import torch

torch.manual_seed(0)
w = torch.randn(4, 4, requires_grad=True)
x = torch.randn(8, 4, requires_grad=True)
h = torch.tanh(x @ w)
(g,) = torch.autograd.grad(h.sum(), x, create_graph=True)  # saved-here
penalty = g.pow(2).sum()
h.mul_(2)  # written-here
penalty.backward()  # failed-here
