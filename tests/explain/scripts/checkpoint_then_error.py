"""A non-reentrant checkpoint (its saved tensors out of reach) in a graph written to after the
save, which then fails with the in-place error."""

import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
w = torch.randn(3, 3, requires_grad=True)
x = torch.randn(4, 3)
y = torch.exp(w)  # saved-here
z = checkpoint(lambda a: torch.tanh(a @ w), x, use_reentrant=False).sum()
y += 1  # written-here
(z + y.sum()).backward()  # failed-here
