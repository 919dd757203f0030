"""A small UNet-like net with two `+= skip` writes, each into a tensor its ReLU saved: two
culprits in one graph."""

import torch
from torch import nn

torch.manual_seed(0)
conv1, conv2, conv3 = nn.Conv2d(1, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 1, 3, padding=1)
x = torch.randn(2, 1, 8, 8)
skip1, skip2 = torch.randn(2, 4, 8, 8), torch.randn(2, 4, 8, 8)
h1 = torch.relu(conv1(x))
h2 = torch.relu(conv2(h1))  # saved-here
h1 += skip1  # written-2-here
h2 += skip2  # written-here
conv3(h2).sum().backward()  # failed-here
