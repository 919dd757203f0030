"""A graph that saved an optimizer's own state, then a step that writes it: the one write the
recorder leaves out (an optimizer's writes to its state), so the report names no write."""

import torch

g = torch.Generator().manual_seed(0)
w = torch.nn.Parameter(torch.randn(3, generator=g))
opt = torch.optim.Adam([w], lr=0.1)
(w * 2).sum().backward()
opt.step()
v = torch.ones(3, requires_grad=True)
loss = (v * opt.state[w]["exp_avg"]).sum()  # saved-here
opt.zero_grad()
(w * 2).sum().backward()
opt.step()
loss.backward()  # failed-here
