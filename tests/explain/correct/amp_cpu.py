"""Mixed precision on CPU: torch.autocast("cpu", bfloat16) and a GradScaler."""

import torch
from torch import nn

torch.manual_seed(0)  # nn's initialisers draw from the global generator
g = torch.Generator().manual_seed(0)
net = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 1))
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(32, 8, generator=g), torch.randn(32, 1, generator=g)
for _ in range(4):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(net(x).float(), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
print("loss", loss.item().hex(), "scale", scaler.get_scale())
