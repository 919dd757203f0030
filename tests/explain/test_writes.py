"""The write kernels (fitlab.explain.writes): torch's versions unchanged, each write seen once,
on every thread, buffers written on the side too, and torch's own kernels back after recording."""

import threading

import pytest
import torch
from torch import nn

from fitlab.explain import Recorder, compat, writes
from fitlab.explain.graph import storage_key

# The ways to see writes this torch has: the kernels where compat found their APIs, and always
# the public dispatch mode (the fallback), forced here by turning the kernels off.
PATHS = ["kernels", "dispatch mode"] if compat.KERNELS else ["dispatch mode"]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """Each test below runs on every path this torch can take to see writes."""
    if request.param == "dispatch mode":
        monkeypatch.setattr(compat, "KERNELS", False)
    return request.param


def _versions() -> list:
    """Version counters after the kinds of write a training script makes."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(4, 4, generator=g, requires_grad=True)
    h = torch.tanh(w * 2)
    out = []
    h.add_(1)
    out.append(h._version)
    c = torch.empty(4, 4)
    torch.add(w.detach(), 1, out=c)
    out.append(c._version)
    h[:, 0] = 0
    h[torch.tensor([1, 2])] = 5.0
    out.append(h._version)
    ts = [torch.zeros(3), torch.zeros(2)]
    torch._foreach_add_(ts, 1.0)
    torch._foreach_mul_(ts, [torch.tensor(2.0), torch.tensor(3.0)])
    out += [t._version for t in ts]
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
    for _ in range(2):
        model(torch.randn(8, 4, generator=g)).sum().backward()
        opt.step()
    out += [p._version for p in model.parameters()]
    out += [b._version for b in model[1].buffers()]
    nn.init.kaiming_normal_(model[0].weight)
    emb = nn.Embedding(5, 3, max_norm=0.1)
    emb(torch.tensor([0, 1]))
    out += [model[0].weight._version, emb.weight._version]
    return out


def test_versions_are_torchs_own_while_recording(path):
    assert not writes.registered()
    alone = _versions()
    rec = Recorder()
    with rec:
        recorded = _versions()
    assert recorded == alone
    assert rec.history  # the writes were seen, not merely passed on


def test_each_write_is_recorded_once_not_with_the_ops_it_runs_inside(path):
    c = torch.empty(3, 3)
    x = torch.zeros(5, 3)
    with Recorder() as rec:
        torch.mm(torch.ones(3, 3), torch.ones(3, 3), out=c)  # resizes c inside: not a second write
        x[torch.tensor([0, 2])] = 1.0  # index_put_ runs _index_put_impl_ inside
        torch.randn(3, 3).mean()  # writes nothing the program asked for
    assert [w.op for w in rec.history[storage_key(c)]] == ["aten::mm"]
    assert [w.op for w in rec.history[storage_key(x)]] == ["aten::index_put_"]


def test_a_buffer_updated_on_the_side_is_recorded_as_such_and_keeps_its_version(path):
    # The batch norm that export and compile decompose to marks its running stats written
    # (eager's native_batch_norm does not mark them, so no recorder can see them there).
    mean, var = torch.zeros(3), torch.ones(3)
    with Recorder() as rec:
        torch.ops.aten._native_batch_norm_legit(torch.randn(4, 3), None, None, mean, var, True, 0.1, 1e-5)
    [write] = rec.history[storage_key(mean)]
    assert write.op == "aten::_native_batch_norm_legit" and not write.inplace
    assert mean._version == 0 and var._version == 0  # as torch leaves them: backward never checks them
    assert not torch.equal(mean, torch.zeros(3))


@pytest.mark.skipif(not compat.KERNELS, reason="the dispatch mode sees the recorded threads only")
def test_writes_on_a_thread_started_before_recording_are_recorded():
    go, x = threading.Event(), torch.zeros(3)
    worker = threading.Thread(target=lambda: (go.wait(10), x.add_(1)))
    worker.start()
    with Recorder() as rec:
        go.set()
        worker.join(10)
    assert [w.op for w in rec.history[storage_key(x)]] == ["aten::add_"]


@pytest.mark.skipif(not compat.KERNELS, reason="no kernels on this torch")
def test_torchs_kernels_come_back_when_the_last_recorder_ends():
    def ours() -> bool:
        # torch's own kernel set aside for a Python one (2.1 names no file for the latter).
        return "ADInplaceOrView (inactive)" in torch._C._dispatch_dump("aten::add_.Tensor")

    outer = Recorder()
    with outer:
        with Recorder():
            assert ours()
        assert ours()  # the outer recorder still records
    assert not writes.registered() and not ours()
    with writes.keep():
        with Recorder():
            pass
        assert ours()  # kept across recordings
    assert not ours()
    x = torch.zeros(2)
    x.add_(1)
    assert x._version == 1
