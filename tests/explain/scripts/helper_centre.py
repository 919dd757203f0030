"""A helper centres a batch its caller passed in (`batch -= mean`) and returns nothing: the
out-of-place rewrite `batch = batch - mean` would drop the centring for the caller (issue 43's
harmful edit), so the copy is made where the tensor was saved."""

import torch


def centre(batch, mean):
    batch -= mean  # written-here


torch.manual_seed(0)
w = torch.randn(4, 3, requires_grad=True)
x = torch.randn(8, 4)
h = torch.exp(x @ w)  # saved-here
centre(h, h.mean(0).detach())
(h ** 2).sum().backward()  # failed-here
