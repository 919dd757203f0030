"""DistributedDataParallel in one CPU process (gloo): torch's C++ threads write tensors (the
parameters' broadcast, the gradient buckets), with no Python frame of their own."""

import os
import tempfile

import torch
import torch.distributed as dist
from torch import nn

folder = tempfile.mkdtemp()
# A file rendezvous: no port to pick or collide on.
dist.init_process_group("gloo", init_method="file://" + os.path.join(folder, "store"), rank=0, world_size=1)
g = torch.Generator().manual_seed(0)
net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.randn(p.shape, generator=g))
model = nn.parallel.DistributedDataParallel(net)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(32, 6, generator=g), torch.randn(32, 1, generator=g)
for _ in range(5):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
print("loss", loss.item().hex())
