"""A noise tensor refilled in place (`z.normal_()`) while a graph still needs its old values."""

import torch
from torch import nn

torch.manual_seed(0)
G = nn.Linear(4, 3)
z = torch.empty(5, 4)
z.normal_()
a = G(z)  # saved-here
z.normal_()  # written-here
b = G(z)
loss = (a - b).pow(2).mean() + a.mean()
loss.backward()  # failed-here
