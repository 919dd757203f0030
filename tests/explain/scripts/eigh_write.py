"""linalg.eigh returns a torch.return_types structseq; its node saved the eigenvectors, which
the next line scales in place."""

import torch

g = torch.Generator().manual_seed(0)
a = torch.randn(4, 4, generator=g)
a = (a + a.T).requires_grad_()
L, Q = torch.linalg.eigh(a)  # saved-here
Q *= 2  # written-here
(L.sum() + Q.sum()).backward()  # failed-here
