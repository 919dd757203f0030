"""Reduced from PPO reports: the old log-probabilities are computed once with the graph attached
and reused by every epoch's ratio (retain_graph=True silencing the second backward); the first
epoch's step changed the weights their graph saved."""

import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
obs, act, adv = torch.randn(16, 4), torch.randint(0, 2, (16,)), torch.randn(16)
old_logp = torch.log_softmax(policy(obs), -1).gather(1, act[:, None]).squeeze(1)  # saved-here
for epoch in range(3):
    logp = torch.log_softmax(policy(obs), -1).gather(1, act[:, None]).squeeze(1)
    ratio = torch.exp(logp - old_logp)
    loss = -(torch.clamp(ratio, 0.8, 1.2) * adv).mean()
    opt.zero_grad()
    loss.backward(retain_graph=True)  # failed-here
    opt.step()  # written-here
