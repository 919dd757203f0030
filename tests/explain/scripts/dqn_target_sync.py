"""A DQN whose target network is synced (load_state_dict) inside the training step, which runs
inside optimizer.step(closure) as Lightning runs a training_step."""

import torch
from torch import nn

torch.manual_seed(0)
online = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
target = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
target.load_state_dict(online.state_dict())
opt = torch.optim.SGD(online.parameters(), lr=0.1)
s, s2 = torch.randn(32, 4), torch.randn(32, 4)
a, r = torch.randint(0, 2, (32, 1)), torch.randn(32)


def training_step(step):
    opt.zero_grad()
    next_q = target(s2).max(dim=1).values  # saved-here
    if step % 2 == 1:
        target.load_state_dict(online.state_dict())  # written-here
    q = online(s).gather(1, a).squeeze(1)
    loss = ((q - (r + 0.9 * next_q)) ** 2).mean()
    loss.backward()  # failed-here
    return loss


for step in range(4):
    opt.step(lambda: training_step(step))
