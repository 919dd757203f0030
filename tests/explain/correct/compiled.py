"""torch.compile (backend "aot_eager": Dynamo and AOTAutograd, no C++ compiler) on a train step."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.randn(p.shape, generator=g))
cnet = torch.compile(net, backend="aot_eager")
opt = torch.optim.SGD(net.parameters(), lr=0.05)
x, y = torch.randn(32, 8, generator=g), torch.randn(32, 1, generator=g)
for _ in range(3):
    loss = ((cnet(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item().hex())
