"""A custom autograd.Function saves its input; the caller then writes that input in place."""

import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


w = torch.randn(4, 3, requires_grad=True)
h = w * 3
y = Square.apply(h)  # saved-here
h.add_(1)  # written-here
y.sum().backward()  # failed-here
