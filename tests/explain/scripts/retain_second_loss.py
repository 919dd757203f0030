"""Reduced from real reports: a backward with retain_graph=True, the optimizer's step, then a second
loss on the same forward's output, in a training loop."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(16, 3), torch.randn(16, 1)
for step in range(3):
    out = model(x)  # saved-here
    loss = ((out - y) ** 2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=True)
    opt.step()  # written-here
    penalty = 0.1 * out.abs().mean()
    penalty.backward()  # failed-here
