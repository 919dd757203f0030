"""davda54/sam#10 (jeongHwarr's comment): SAM's two steps add each task's loss into one `loss` that is
not reset between them; the second backward walks the first step's freed graph again."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
model = nn.Linear(4, 3)
image, target = torch.randn(8, 4, generator=g), torch.randn(8, 3, generator=g)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

output = model(image)
loss = 0
for t in range(3):
    loss_t = ((output[:, t] - target[:, t]) ** 2).mean()  # built-here
    loss += loss_t
opt.zero_grad()
loss.backward()  # freed-here
opt.step()
output = model(image)
for t in range(3):
    loss_t = ((output[:, t] - target[:, t]) ** 2).mean()
    loss += loss_t  # joined-here
loss.backward()  # failed-here
opt.step()
