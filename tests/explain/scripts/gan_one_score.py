"""The GAN form most reported (pytorch#39141): one `score = D(G(z))` for both losses, D's
backward(retain_graph=True), D's step, then G's backward through the same score."""

import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 8))
D = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
opt_D = torch.optim.SGD(D.parameters(), lr=0.05)
opt_G = torch.optim.SGD(G.parameters(), lr=0.05)
bce = nn.BCELoss()
real = torch.randn(32, 8)
z = torch.randn(32, 5)
for step in range(2):
    fake = G(z)
    score = D(fake)  # saved-here
    D_loss = bce(D(real), torch.ones(32, 1)) + bce(score, torch.zeros(32, 1))
    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)
    opt_D.step()  # written-here
    G_loss = bce(score, torch.ones(32, 1))
    opt_G.zero_grad()
    G_loss.backward()  # failed-here
    opt_G.step()
