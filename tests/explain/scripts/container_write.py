"""`state["h"] += 1` on a tensor held in a dict: the index edit clones the dict's name, which a
dict cannot do, so the edit does not help."""

import torch

torch.manual_seed(0)
x = torch.randn(4, requires_grad=True)
state = {"h": torch.exp(x)}  # saved-here
state["h"] += 1  # written-here
state["h"].sum().backward()  # failed-here
