"""Writes to views made under no_grad, as models initialise and clamp their weights:
nn.Embedding(padding_idx=...), `w[0].fill_(0)`, `w[:, 0].zero_()`, then training on them."""

import torch
from torch import nn

torch.manual_seed(0)  # nn's initialisers draw from the global generator
g = torch.Generator().manual_seed(0)
emb = nn.Embedding(10, 4, padding_idx=0)
w = nn.Parameter(torch.randn(4, 3, generator=g))
with torch.no_grad():
    w[0].fill_(0)
    w[:, 0].zero_()
    emb.weight[1].normal_(generator=g)
opt = torch.optim.SGD([*emb.parameters(), w], lr=0.1)
ids = torch.tensor([[0, 1, 2], [3, 0, 4]])
for _ in range(3):
    loss = (emb(ids) @ w).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        w[:, 0].zero_()
print("loss", loss.item().hex(), "padding row", emb.weight[0].abs().sum().item())
