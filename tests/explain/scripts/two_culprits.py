"""Two saved tensors, each written in place after its save: one backward, two culprits."""

import torch

torch.manual_seed(0)
x = torch.randn(5, requires_grad=True)
a = torch.exp(x)  # saved-here
b = torch.sigmoid(x)  # second-saved-here
a += 1  # written-here
b.mul_(2)  # second-written-here
(a.sum() + b.sum()).backward()  # failed-here
