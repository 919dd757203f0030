"""`s = F.relu_(s)` on a sigmoid's output."""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(4, 3, requires_grad=True)
x = torch.randn(5, 4)
s = torch.sigmoid(x @ w)  # saved-here
s = F.relu_(s)  # written-here
s.sum().backward()  # failed-here
