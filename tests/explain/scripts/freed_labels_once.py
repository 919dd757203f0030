"""zhangyu2234/Deep-learning-by-hand (its README's "Problems" note): the labels `Y = X @ true_W +
true_b`, computed once before the loop from weights that require grad, are sliced by every batch;
the second batch's backward finds Y's graph freed."""

import torch

g = torch.Generator().manual_seed(0)
X = torch.randn(40, 2, generator=g)
true_W = torch.randn(2, 1, generator=g, requires_grad=True)
true_b = torch.randn(1, generator=g, requires_grad=True)
Y = torch.mm(X, true_W) + true_b  # built-here
W = torch.zeros(2, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)

for start in range(0, 40, 10):
    x, y = X[start:start + 10], Y[start:start + 10]  # joined-here
    l = ((torch.relu(x @ W + b) - y) ** 2).mean()
    l.backward()  # failed-here
    with torch.no_grad():
        for p in (W, b):
            p -= 0.01 * p.grad
            p.grad = None
