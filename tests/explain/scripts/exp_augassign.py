"""`y += 1` on the output of exp, which exp's backward needs (pytorch#10346's pattern)."""

import torch

torch.manual_seed(0)
x = torch.randn(4, requires_grad=True)
y = torch.exp(x)  # saved-here
y += 1  # written-here
y.sum().backward()  # failed-here
