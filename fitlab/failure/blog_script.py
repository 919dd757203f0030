"""The blog's own script, with its numbers from a Config.

The blog's post ends with its whole program; this is that program, formatted,
its comments translated, its plot replaced by a print of the same per-epoch
train loss. It seeds torch's global generator as the blog does
(`torch.manual_seed`): fitlab's one generator per run draws the same numbers
in the same order, so the script and `fitlab.train(config)` see the same
weights, inputs and labels, and fail (or train) alike.

Only validated Config numbers are put into the text, each as a Python
literal of its type: nothing else can reach it.
"""

from __future__ import annotations

from fitlab.config import Config

_HEAD = '''\
# The blog's script, with the numbers of your settings.
# Its plot (matplotlib) is replaced by a print of the same train loss per epoch.
import {imports}
import torch.nn as nn
from torch.utils import data

torch.manual_seed({seed})


def get_label(net, X):
    # {label_comment}
    return {label_expression}


def train(net, trainer, Loss, train_data, train_label, epochs, batch_size):
    # Bundle the rows with their labels, to go through them together.
    data_iter = data.DataLoader(list(zip(train_data, train_label)), batch_size=batch_size)
    for epoch in range(epochs):
        for X, y in data_iter:  # one batch at a time
            trainer.zero_grad()  # clear the gradients
            pre_y = net(X)  # forward pass
            loss = Loss(pre_y, y)  # the loss
            loss.backward()  # backward pass: the gradients
            trainer.step()  # update the weights
        # The average train loss of the epoch (the blog plots it).
        print(f"epoch {{epoch + 1}}: train loss {{torch.mean(Loss(net(train_data), train_label)).item()!r}}")


def test(net, Loss, test_data, test_label):
    loss_sum = torch.zeros_like(test_label)
    data_iter = data.DataLoader(list(zip(test_data, test_label)), batch_size=batch_size, shuffle=False)
    for X, y in data_iter:
        pre_y = net(X)  # forward pass
        loss = Loss(pre_y, y)  # the loss
        loss_sum += loss  # add up the losses
    return torch.sum(loss_sum) / len(loss_sum)  # "the average loss" (a sum of batch means, in fact)


def init_weight(m):
    if type(m) == nn.Linear:
        nn.init.kaiming_normal_(m.weight)  # Kaiming-normal weights
        nn.init.zeros_(m.bias)  # zero biases


lr = {lr}  # learning rate
epochs = {epochs}  # training epochs
batch_size = {batch_size}  # rows per batch
shared = nn.Linear({width}, {width})  # the shared layer{shared_note}
'''

_TAIL = '''\
# The true parameters (the labels come from them): what the student must fit.
for name, param in net.named_parameters():
    print(name, param)
# Random inputs.
X = torch.randn(({n_samples}, {in_features}))
# The true labels, from the net.
True_label = get_label(net, X)
# The net's random start made the labels; now re-initialise the same net in place.
net.apply(init_weight)
{untie}\
# The optimiser.
trainer = torch.optim.SGD(net.parameters(), lr=lr)
# The loss: mean squared error.
Loss = nn.MSELoss()
# Train on the first {n_train} rows.
train(net, trainer, Loss, X[:{n_train}], True_label[:{n_train}], epochs, batch_size=batch_size)
# The test loss, on the other rows.
print(f"test loss {{test(net, Loss, X[{n_train}:], True_label[{n_train}:])}}")
'''

_UNTIE = '''\
# Untie the shared layer: one independent copy per use, with the same start values.
net = nn.Sequential(*[copy.deepcopy(m) for m in net])
'''


def _net(config: Config) -> str:
    """The Sequential, one layer and its ReLU per line, the shared layer once per use."""
    w, indent = int(config.width), " " * len("net = nn.Sequential(")
    lines = [f"net = nn.Sequential(nn.Linear({int(config.in_features)}, {w}), nn.ReLU(),"
             "  # input to the first hidden layer, ReLU"]
    for use in range(int(config.shared_repeats)):
        again = " again" if use else ""
        lines.append(f"{indent}shared, nn.ReLU(),  # the shared layer{again}, ReLU")
    lines.append(f"{indent}nn.Linear({w}, 1))  # to the output, no activation (linear regression)")
    return "\n".join(lines) + "\n"


def blog_script(config: Config) -> str:
    """The blog's script for `config`: its seed, width, shared repeats, lr,
    batch size, epochs, rows, detach and tying."""
    if config.detach:
        label_comment = "The labels, detached from the net's graph (without .detach(), backward() fails)."
        label_expression = "net(X).detach().reshape((-1, 1))"
    else:
        label_comment = "The labels, still attached to the net's graph (the blog's fix: net(X).detach())."
        label_expression = "net(X).reshape((-1, 1))"
    shared_note = "" if config.shared_repeats else " (not used with 0 repeats; made, as the blog's draws start with it)"
    head = _HEAD.format(
        imports="copy\nimport torch" if not config.tied else "torch",
        seed=int(config.seed), label_comment=label_comment, label_expression=label_expression,
        lr=repr(float(config.lr)), epochs=int(config.epochs), batch_size=int(config.batch_size),
        width=int(config.width), shared_note=shared_note)
    tail = _TAIL.format(n_samples=int(config.n_samples), in_features=int(config.in_features),
                        n_train=int(config.n_train), untie="" if config.tied else _UNTIE)
    return head + _net(config) + tail
