"""`e.exp_()` on a sigmoid's output, which sigmoid's backward needs."""

import torch

torch.manual_seed(0)
x = torch.randn(5, requires_grad=True)
e = torch.sigmoid(x)  # saved-here
e.exp_()  # written-here
e.sum().backward()  # failed-here
