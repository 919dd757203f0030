"""torch.autograd.grad over a sigmoid whose output was scaled in place."""

import torch

x = torch.randn(5, requires_grad=True)
s = torch.sigmoid(x)  # saved-here
s.mul_(2)  # written-here
(g,) = torch.autograd.grad(s.sum(), x)  # failed-here
