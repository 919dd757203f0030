"""`out += identity` after a ReLU whose backward needs its output (a ResNet block's add)."""

import torch
from torch import nn

torch.manual_seed(0)
conv = nn.Linear(6, 6)
x = torch.randn(4, 6, requires_grad=True)
identity = x * 2
out = torch.relu(conv(x))  # saved-here
out += identity  # written-here
out.sum().backward()  # failed-here
