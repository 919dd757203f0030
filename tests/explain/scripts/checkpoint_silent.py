"""Under a saved-tensor hook torch checks no versions: an in-place write to a saved tensor is
silent (backward uses the new values)."""

import torch

torch.manual_seed(0)
x = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
    y = torch.exp(x)
y.mul_(2)  # silent-here
y.sum().backward()
