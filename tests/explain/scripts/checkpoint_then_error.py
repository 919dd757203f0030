"""A non-reentrant checkpoint (its saved tensors out of reach), then the in-place error."""

import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
w = torch.randn(3, 3, requires_grad=True)
x = torch.randn(4, 3)
checkpoint(lambda a: torch.tanh(a @ w), x, use_reentrant=False).sum().backward()
y = torch.exp(w)  # saved-here
y += 1  # written-here
y.sum().backward()  # failed-here
