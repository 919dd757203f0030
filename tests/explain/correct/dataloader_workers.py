"""A DataLoader with two worker processes (forked from the recorded process on Linux)."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

g = torch.Generator().manual_seed(0)
data = TensorDataset(torch.randn(64, 5, generator=g), torch.randn(64, 1, generator=g))
loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=2, generator=g)
net = nn.Linear(5, 1)
with torch.no_grad():
    net.weight.copy_(torch.randn(1, 5, generator=g))
    net.bias.zero_()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _epoch in range(2):
    for xb, yb in loader:
        loss = ((net(xb) - yb) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss", loss.item().hex())
