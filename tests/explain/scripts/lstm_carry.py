"""Reduced from real reports of an LSTM language model trained with `retain_graph=True`: the hidden
state (a pair) is carried from one batch to the next, and the optimizer's step changed the weights
the earlier batch's graph saved."""

import torch
from torch import nn

torch.manual_seed(0)
lstm = nn.LSTM(3, 4, batch_first=True)
opt = torch.optim.SGD(lstm.parameters(), lr=0.1)
hidden = (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4))
for step in range(3):
    x = torch.randn(2, 5, 3)
    out, hidden = lstm(x, hidden)  # saved-here
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=True)  # failed-here
    opt.step()
