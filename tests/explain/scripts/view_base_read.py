"""A write through a slice whose base is read after it: rebinding the slice's name would leave the
base unwritten for the line that reads it, so the copy goes where the base was saved."""

import torch

torch.manual_seed(0)
w = torch.randn(4, 6, requires_grad=True)
inp = torch.randn(5, 4)
h = torch.tanh(inp @ w)  # saved-here
head = h[:, :3]
head += torch.ones(3)  # written-here
loss = h.pow(2).sum() + head.sum()
loss.backward()  # failed-here
