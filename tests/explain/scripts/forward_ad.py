"""Forward- and backward-mode AD together (pytorch#162350): torch's own forward-mode formula
for softmax writes, in place, a tensor its backward graph saved; the user wrote nothing."""

import torch
import torch.autograd.forward_ad as fwAD

g = torch.Generator().manual_seed(0)
acts = torch.randn(3, 6, 16, generator=g, requires_grad=True)
with fwAD.dual_level():
    dual_input = fwAD.make_dual(acts, torch.randn(3, 6, 16, generator=g))
    x = dual_input.softmax(dim=-1)  # written-here
    x = x + fwAD.unpack_dual(x).tangent
    primal, dual = fwAD.unpack_dual(x)
    primal.sum().backward()  # failed-here
