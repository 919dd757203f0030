"""Reduced from ResNet-style reports: a block adds its convolution's output to its input in place
(`x += self.conv(x)`): the convolution saved x, and x is the forward's argument."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(2, 2, 3, padding=1)

    def forward(self, x):
        x += self.conv(x)  # saved-here written-here
        return x


torch.manual_seed(0)
stem = nn.Conv1d(1, 2, 3, padding=1)
net = Block()
inp = torch.randn(2, 1, 8)
h = stem(inp)
net(h).pow(2).sum().backward()  # failed-here
