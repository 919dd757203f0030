"""Reduced from real reports: attention maps kept in a list for a regulariser; a name for the first
map accumulates the second in place (`total += maps[1]`), which overwrote the softmax output that
softmax saved. The maps are read again later, so rebinding `total` would change what they hold."""

import torch

torch.manual_seed(0)
q = torch.randn(2, 4, 8, requires_grad=True)
v = torch.randn(2, 4, 8)
maps = []
for layer in range(2):
    a = torch.softmax(q @ q.transpose(1, 2) / (layer + 1), -1)  # saved-here
    maps.append(a)
    out = a @ v
total = maps[0]
total += maps[1]  # written-here
loss = out.sum() + total.pow(2).sum() + torch.stack(maps).pow(2).mean()
loss.backward()  # failed-here
