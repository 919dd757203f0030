"""A hand-written update `w -= lr * w.grad` between a forward made once and the backwards of
losses recomputed from its output in a loop."""

import torch

g = torch.Generator().manual_seed(0)
x, y = torch.randn(16, 3, generator=g), torch.randn(16, 1, generator=g)
w1 = torch.randn(3, 4, generator=g, requires_grad=True)
w2 = torch.randn(4, 1, generator=g, requires_grad=True)
lr = 0.05
pred = torch.tanh(x @ w1) @ w2  # saved-here
for step in range(3):
    loss = ((pred - y) ** 2).mean()
    loss.backward(retain_graph=True)  # failed-here
    with torch.no_grad():
        w1 -= lr * w1.grad
        w2 -= lr * w2.grad  # written-here
        w1.grad = None
        w2.grad = None
