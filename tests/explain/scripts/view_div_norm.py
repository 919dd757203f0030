"""`x /= x.norm(dim=-1, keepdim=True)` on a transposed activation (a hand-written row
normalisation): the norm saved the view it divides, and the division overwrites it."""

import torch


def embed(tokens, w):
    x = torch.relu(tokens @ w).transpose(0, 1)
    x /= x.norm(dim=-1, keepdim=True)  # saved-here
    return x


torch.manual_seed(0)
w = torch.randn(4, 6, requires_grad=True)
tokens = torch.randn(5, 4)
embed(tokens, w).pow(3).sum().backward()  # failed-here
