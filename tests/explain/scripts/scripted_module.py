"""A TorchScript module saves its sigmoid's output inside the JIT, where no Python runs; the
script then scales that output in place."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.sigmoid(self.lin(x))


net = torch.jit.script(Net())
out = net(torch.randn(2, 4))
out.mul_(2)  # written-here
out.sum().backward()  # failed-here
