"""A silent `.data` write before one backward, then the in-place error in a later one."""

import torch

w = torch.randn(3, requires_grad=True)
x = torch.randn(3)
y = (w * x).sum()
x.data.mul_(2)  # silent-here
y.backward()
z = torch.exp(w)  # saved-here
z.add_(1)  # written-here
z.sum().backward()  # failed-here
