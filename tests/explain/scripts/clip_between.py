"""WGAN-style weight clipping (`p.clamp_`) between a forward and a later backward through it."""

import torch
from torch import nn

torch.manual_seed(0)
critic = nn.Linear(4, 1)
x = torch.randn(8, 4, requires_grad=True)
score = critic(x).mean()  # saved-here
with torch.no_grad():
    for p in critic.parameters():
        p.clamp_(-0.01, 0.01)  # written-here
score.backward()  # failed-here
