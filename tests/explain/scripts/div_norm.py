"""`h /= norm` on a tanh's output (a hand-written normalisation)."""

import torch

torch.manual_seed(0)
w = torch.randn(6, requires_grad=True)
a = torch.randn(6)
h = torch.tanh(w * a)  # saved-here
norm = h.detach().norm()
h /= norm  # written-here
h.pow(2).sum().backward()  # failed-here
