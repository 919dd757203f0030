"""An RNN's states written step by step into a preallocated tensor that each step reads."""

import torch

torch.manual_seed(0)
T, B, H = 5, 3, 4
W = torch.randn(H, H, requires_grad=True)
x = torch.randn(T, B, H)
hs = torch.zeros(T + 1, B, H)
for t in range(T):
    hs[t + 1] = torch.tanh(x[t] + hs[t] @ W)  # written-here
hs.sum().backward()  # failed-here
