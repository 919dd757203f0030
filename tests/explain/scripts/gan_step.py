"""A GAN whose discriminator steps between its own backward and the generator's (pytorch#39141)."""

import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 15))
D = nn.Sequential(nn.Linear(15, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid())
opt_D = torch.optim.Adam(D.parameters(), lr=1e-4)
opt_G = torch.optim.Adam(G.parameters(), lr=1e-4)

for step in range(3):
    real = torch.randn(64, 15)
    fake = G(torch.randn(64, 5))
    prob_real = D(real)
    prob_fake = D(fake)  # saved-here
    D_loss = -torch.mean(torch.log(prob_real) + torch.log(1.0 - prob_fake))
    G_loss = torch.mean(torch.log(1.0 - prob_fake))
    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)
    opt_D.step()  # written-here
    opt_G.zero_grad()
    G_loss.backward()  # failed-here
    opt_G.step()
