"""torch.compile (backend "aot_eager": Dynamo and AOTAutograd, no C++ compiler) on a train step,
and on an Adam step (Dynamo traces the step's hooks, the recorder's among them)."""

import logging

import torch
from torch import nn

# Dynamo says it ignores the step's profiler range, in a line stamped with the time and pid.
torch._logging.set_logs(dynamo=logging.ERROR)

g = torch.Generator().manual_seed(0)
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
adam_net = nn.Linear(8, 1)
with torch.no_grad():
    for p in [*net.parameters(), *adam_net.parameters()]:
        p.copy_(torch.randn(p.shape, generator=g))
cnet = torch.compile(net, backend="aot_eager")
opt = torch.optim.SGD(net.parameters(), lr=0.05)
adam = torch.optim.Adam(adam_net.parameters(), lr=0.05)
adam_step = torch.compile(adam.step, backend="aot_eager")
x, y = torch.randn(32, 8, generator=g), torch.randn(32, 1, generator=g)
for _ in range(3):
    loss = ((cnet(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    adam_loss = ((adam_net(x) - y) ** 2).mean()
    adam.zero_grad()
    adam_loss.backward()
    adam_step()
print("loss", loss.item().hex(), "adam", adam_loss.item().hex(), adam_net.weight.sum().item().hex())
