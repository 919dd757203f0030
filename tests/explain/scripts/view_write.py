"""A write through a view made before the forward pass: it writes the saved base."""

import torch

torch.manual_seed(0)

a = torch.randn(4, 3)
flat = a.view(-1)
w = torch.randn(3, 2, requires_grad=True)
out = a @ w  # saved-here
flat.mul_(0.5)  # written-here
out.sum().backward()  # failed-here
