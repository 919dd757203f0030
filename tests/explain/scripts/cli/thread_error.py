"""The in-place error raised in a worker thread; the main thread finishes."""

import threading

import torch


def work():
    x = torch.randn(4, requires_grad=True)
    y = torch.exp(x)  # saved-here
    y += 1  # written-here
    y.sum().backward()  # failed-here


t = threading.Thread(target=work)
t.start()
t.join()
print("main done")
