"""A loop: the buffer is written every step before the forward (harmless), and once after it."""

import torch

w = torch.randn(4, requires_grad=True)
buf = torch.ones(4)
for step in range(3):
    buf.mul_(2)
    y = (w * buf).sum()  # saved-here
    if step == 1:
        buf.add_(1)  # written-here
    y.backward()  # failed-here
