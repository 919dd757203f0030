"""backward(retain_graph=True), optimizer.step() (foreach SGD), then backward on the same graph."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
x, y = torch.randn(16, 3), torch.randn(16, 1)
loss = ((model(x) - y) ** 2).mean()  # saved-here
loss.backward(retain_graph=True)
opt.step()  # written-here
loss.backward()  # failed-here
