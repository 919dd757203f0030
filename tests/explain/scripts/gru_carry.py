"""A GRU's hidden state carried across batches with retain_graph=True, an optimizer step between."""

import torch
from torch import nn

torch.manual_seed(0)
rnn = nn.GRU(3, 4)
head = nn.Linear(4, 1)
opt = torch.optim.SGD([*rnn.parameters(), *head.parameters()], lr=0.1)
h = torch.zeros(1, 2, 4)
data = torch.randn(3, 5, 2, 3)
for batch in data:
    out, h = rnn(batch, h)  # saved-here
    loss = head(out).pow(2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=True)  # failed-here
    opt.step()  # written-here
