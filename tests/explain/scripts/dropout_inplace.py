"""nn.Dropout(inplace=True) right after a sigmoid, inside an nn.Sequential: the user's line for
saved, written and failed is the one that calls the net."""

import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(
    nn.Linear(8, 16),
    nn.Sigmoid(),
    nn.Dropout(0.5, inplace=True),
    nn.Linear(16, 1),
)
x = torch.randn(32, 8)
net(x).pow(2).mean().backward()  # failed-here
