"""pytorch/pytorch#73604: a custom autograd.Function returning a view of its input (`input[:]`), whose
output is then written in place."""

import torch


class Alias(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        return input[:]

    @staticmethod
    def backward(ctx, grad):
        return grad


base = torch.tensor([1.0, 2.0], requires_grad=True)
z = base * 1
x = Alias.apply(z)  # made-here
x.mul_(-1)  # written-here
x.sum().backward()
print(base.grad)
