"""The GAN of gan_step.py with a fused Adam for D: its step bumps no version counter, so python
runs to the end and G's backward silently uses D's new weights through the old graph."""

import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 15))
D = nn.Sequential(nn.Linear(15, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid())
opt_D = torch.optim.Adam(D.parameters(), lr=1e-4, fused=True)
opt_G = torch.optim.Adam(G.parameters(), lr=1e-4)

for step in range(3):
    real = torch.randn(64, 15)
    fake = G(torch.randn(64, 5))
    prob_real = D(real)
    prob_fake = D(fake)
    D_loss = -torch.mean(torch.log(prob_real) + torch.log(1.0 - prob_fake))
    G_loss = torch.mean(torch.log(1.0 - prob_fake))
    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)
    opt_D.step()  # silent-here
    opt_G.zero_grad()
    G_loss.backward()
    opt_G.step()
print(f"G_loss {G_loss.item():.6f}")
