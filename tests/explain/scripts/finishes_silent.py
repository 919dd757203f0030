"""Finishes without error, but a `.data` write changed a saved weight: the gradient is wrong."""

import torch
from torch import nn

torch.manual_seed(0)
l1, l2 = nn.Linear(3, 4), nn.Linear(4, 1)
out = l2(torch.relu(l1(torch.randn(8, 3))))
l2.weight.data.mul_(0.5)  # silent-here
out.sum().backward()
print("grad norm", l1.weight.grad.norm().item())
