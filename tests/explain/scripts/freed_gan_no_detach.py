"""pytorch/examples#116: a DCGAN whose discriminator's loss takes the generator's output without
`.detach()`; the generator's backward finds the graph D's backward freed."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 6))
D = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1), nn.Sigmoid())
opt_D = torch.optim.Adam(D.parameters(), lr=2e-4)
opt_G = torch.optim.Adam(G.parameters(), lr=2e-4)
bce = nn.BCELoss()
real = torch.randn(16, 6, generator=g)
ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)

for step in range(2):
    fake = G(torch.randn(16, 4, generator=g))  # built-here
    opt_D.zero_grad()
    errD = bce(D(real), ones) + bce(D(fake), zeros)
    errD.backward()  # freed-here
    opt_D.step()
    opt_G.zero_grad()
    errG = bce(D(fake), ones)  # joined-here
    errG.backward()  # failed-here
    opt_G.step()
