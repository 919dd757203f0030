"""Activation checkpointing (torch.utils.checkpoint), reentrant and not, with an in-place ReLU."""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

torch.manual_seed(0)  # nn's initialisers draw from the global generator
g = torch.Generator().manual_seed(0)
block = nn.Sequential(nn.Linear(8, 8), nn.ReLU(inplace=True), nn.Linear(8, 8))
head = nn.Linear(8, 1)
opt = torch.optim.SGD([*block.parameters(), *head.parameters()], lr=0.05)
x = torch.randn(16, 8, generator=g)
for reentrant in (False, True):
    for _ in range(3):
        h = checkpoint(block, x.requires_grad_(reentrant), use_reentrant=reentrant)
        h = checkpoint_sequential(block, 2, h, use_reentrant=reentrant)
        loss = head(h).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"reentrant={reentrant} loss", loss.item().hex())
