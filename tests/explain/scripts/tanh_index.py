"""`h[:, 0] = 0` after tanh (pytorch#9391's pattern). Optional argument: the device."""

import sys

import torch

device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
torch.manual_seed(0)
x = torch.randn(6, 4, device=device)
w = torch.randn(4, 3, device=device, requires_grad=True)
h = torch.tanh(x @ w)  # saved-here
h[:, 0] = 0  # written-here
loss = h.sum()
loss.backward()  # failed-here
