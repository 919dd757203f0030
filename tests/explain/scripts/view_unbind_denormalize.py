"""haofanwang/Score-CAM#28: `denormalize` loops over an image's channels and writes each in place,
`channel.mul_(std).add_(mean)`; iterating a tensor that requires grad returns views of one unbind."""

import torch

g = torch.Generator().manual_seed(0)
means, stds = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
input_ = torch.randn(1, 3, 4, 4, generator=g, requires_grad=True)


def denormalize(tensor):
    denormalized = tensor.clone()
    for channel, mean, std in zip(denormalized[0], means, stds):  # made-here
        channel.mul_(std).add_(mean)  # written-here
    return denormalized


print(denormalize(input_).sum())
