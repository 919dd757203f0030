"""A GAN (plain SGD) whose discriminator steps between its own backward and the generator's."""

import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 8))
D = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
opt_D = torch.optim.SGD(D.parameters(), lr=0.05)
opt_G = torch.optim.SGD(G.parameters(), lr=0.05)
data = torch.randn(3, 32, 8)
noise = torch.randn(3, 32, 5)

for real, z in zip(data, noise):
    fake = G(z)
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
