"""A correct training loop through torch.utils.checkpoint, reentrant or not (argv[1]), and
a saved-tensor hook of the user's."""

import sys

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

reentrant = len(sys.argv) > 1 and sys.argv[1] == "reentrant"
torch.manual_seed(0)
block = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6))
head = nn.Linear(6, 1)
opt = torch.optim.SGD([*block.parameters(), *head.parameters()], lr=0.1)
x = torch.randn(16, 6, requires_grad=True)
for step in range(3):
    opt.zero_grad()
    h = checkpoint(block, x, use_reentrant=reentrant)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        loss = head(torch.exp(h)).pow(2).mean()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
