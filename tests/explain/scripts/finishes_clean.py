"""A correct training loop (labels detached; buffers written only before each forward)."""

import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 1))
X = torch.randn(64, 4)
labels = net(X).detach()
net.apply(lambda m: nn.init.normal_(m.weight) if isinstance(m, nn.Linear) else None)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
for step in range(20):
    opt.zero_grad()
    loss = nn.functional.mse_loss(net(X), labels) + nn.functional.mse_loss(net(X * 0.5), labels)
    loss.backward()
    opt.step()
print("final loss", round(loss.item(), 4))
