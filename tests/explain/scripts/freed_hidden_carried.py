"""MorvanZhou/PyTorch-Tutorial#57: an RNN regressor whose hidden state is carried to the next batch
without `h_state = h_state.data` (a detach); the second batch's backward reaches the first batch's
freed graph."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
rnn = nn.RNN(input_size=1, hidden_size=8, batch_first=True)
out = nn.Linear(8, 1)
opt = torch.optim.Adam([*rnn.parameters(), *out.parameters()], lr=0.02)
h_state = None

for step in range(3):
    x = torch.randn(1, 10, 1, generator=g)
    y = torch.cos(x)
    r_out, h_state = rnn(x, h_state)  # built-here
    prediction = out(r_out)
    loss = nn.functional.mse_loss(prediction, y)
    opt.zero_grad()
    loss.backward()  # failed-here
    opt.step()
