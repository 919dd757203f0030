"""A stateful module that writes its buffer in place (`state.copy_`) after using it."""

import torch
from torch import nn


class Stateful(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("state", torch.zeros(2, 4))

    def forward(self, x):
        out = torch.tanh(self.lin(x) + self.state @ self.lin.weight)  # saved-here
        self.state.copy_(out.detach())  # written-here
        return out


torch.manual_seed(0)
m = Stateful()
xs = torch.randn(2, 2, 4)
loss = m(xs[0]).sum() + m(xs[1]).sum()
loss.backward()  # failed-here
