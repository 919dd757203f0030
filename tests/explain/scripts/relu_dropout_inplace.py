"""Reduced from real reports: in-place dropout right after an in-place ReLU, written in the forward
with torch.nn.functional: the dropout overwrote the ReLU's output, which the ReLU saved."""

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        h = F.dropout(F.relu(self.fc(x), inplace=True), 0.5, training=True, inplace=True)  # written-here
        return self.out(h)


torch.manual_seed(0)
net = Net()
net(torch.randn(4, 8)).pow(2).mean().backward()  # failed-here
