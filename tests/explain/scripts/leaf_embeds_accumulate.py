"""modelscope/ms-swift#4613: a text-only batch adds `image_embeds.mean() * 0.` into `inputs_embeds` in
place, and on that device the embedding's output is a leaf that requires grad."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
visual = nn.Linear(6, 8)
pixel_values = torch.randn(2, 6, generator=g)
inputs_embeds = torch.randn(3, 8, generator=g).requires_grad_()  # a leaf, as the NPU's embedding returned it
image_embeds = visual(pixel_values)
inputs_embeds += image_embeds.mean() * 0.  # written-here
inputs_embeds.sum().backward()
