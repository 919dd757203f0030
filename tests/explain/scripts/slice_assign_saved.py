"""A slice assignment into a tensor that is no view, after a matmul saved it: torch's message names
the tensor as an output of CopySlices (an earlier slice assignment made it)."""

import torch

g = torch.Generator().manual_seed(0)
x = torch.randn(4, 3, generator=g, requires_grad=True)
w = torch.randn(3, 3, generator=g, requires_grad=True)
h = x * 2
h[0] = 0
out = h @ w  # saved-here
h[1] = 1  # written-here
out.sum().backward()  # failed-here
