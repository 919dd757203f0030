"""Captured stacks (fitlab.explain.stack): inside an optimizer step every write shares one capture
of the frames above the step, and gets exactly the stack a capture of its own would give."""

import contextlib
import io
import sys

import pytest
import torch
from torch import nn

from fitlab.explain import Recorder, format_report, run_script
from fitlab.explain import stack as stacks
from fitlab.explain.graph import storage_key

from .test_explain import SCRIPTS, assert_at


def _stacks(program) -> list:
    """Each recorded write's (op, stack up to the program's frame), in the order written."""
    with Recorder() as rec:
        program()
    writes = sorted((w for hist in rec.history.values() for w in hist), key=lambda w: w.seq)
    out = []
    for w in writes:
        frames = [(c.co_filename, c.co_name, lasti) for c, lasti in w.stack]
        ends = [i for i, (_, name, _) in enumerate(frames) if name == program.__name__]
        assert ends, frames  # every write's stack reaches the program
        out.append((w.op, tuple(frames[:ends[0] + 1])))
    return out


def _own_capture(skip: int = 1) -> tuple:
    """A capture that walks every frame itself, as before steps shared theirs."""
    f, out = sys._getframe(skip), []
    while f is not None and len(out) < stacks.MAX_DEPTH and id(f.f_code) not in stacks._BOUNDARIES:
        out.append((f.f_code, f.f_lasti))
        f = f.f_back
    return tuple(out)


def _unshared(monkeypatch, program) -> list:
    """The same, each write walking every frame itself."""
    with monkeypatch.context() as m:
        m.setattr(stacks, "capture", _own_capture)
        return _stacks(program)


def _net(g):
    return nn.Sequential(nn.Linear(3, 4, bias=False), nn.Tanh(), nn.Linear(4, 1))


def adamw_steps():
    g = torch.Generator().manual_seed(0)
    net = _net(g)
    opt = torch.optim.AdamW(net.parameters(), lr=0.1)
    x = torch.randn(5, 3, generator=g)
    for _ in range(2):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()


def closure_steps():
    """Lightning's shape: the forward, a write of the user's and backward run inside step(closure)."""
    g = torch.Generator().manual_seed(0)
    net, target = _net(g), _net(g)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(5, 3, generator=g)

    def closure():
        opt.zero_grad()
        with torch.no_grad():
            target.load_state_dict(net.state_dict())  # copy_ from the user's line, inside the step
        loss = net(x).pow(2).mean()
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    lbfgs = torch.optim.LBFGS(net.parameters(), max_iter=3)
    lbfgs.step(closure)  # calls the closure again and again inside one step


def a_step_that_raised():
    """A step that raised never reaches its post-hook; the steps after it still capture right."""
    g = torch.Generator().manual_seed(0)
    net = _net(g)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(5, 3, generator=g)

    def failing():
        net(x).sum().backward()
        raise KeyError("from the closure")

    with pytest.raises(KeyError):
        opt.step(failing)
    for _ in range(2):
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()


@pytest.mark.parametrize("program", [adamw_steps, closure_steps, a_step_that_raised])
def test_a_steps_writes_get_the_stack_a_capture_of_their_own_gives(monkeypatch, program):
    shared = _stacks(program)
    assert shared == _unshared(monkeypatch, program)
    in_steps = [s for op, s in shared if any(name == "wrapper" and "optim" in f for f, name, _ in s)]
    assert len(in_steps) >= 6  # the comparison covered writes made inside steps


def test_a_step_shares_one_capture_and_forgets_it_when_it_returns(monkeypatch):
    calls = []
    real = stacks.capture_from
    monkeypatch.setattr(stacks, "capture_from", lambda f: calls.append(f.f_code.co_name) or real(f))
    g = torch.Generator().manual_seed(0)
    net = _net(g)
    opt = torch.optim.AdamW(net.parameters(), lr=0.1)
    net(torch.randn(5, 3, generator=g)).sum().backward()
    with Recorder():
        opt.step()
        assert stacks._STEPS.frames == ()
    # One capture from the frame above the step; each write's own walk stops at the step's frame.
    assert calls.count("test_a_step_shares_one_capture_and_forgets_it_when_it_returns") == 1


def test_a_steps_writes_to_its_own_state_are_not_recorded_its_parameters_and_a_closures_are():
    g = torch.Generator().manual_seed(0)
    net = _net(g)
    opt = torch.optim.AdamW(net.parameters(), lr=0.1)
    x, seen = torch.randn(5, 3, generator=g), torch.zeros(3)

    def closure():
        opt.zero_grad()
        with torch.no_grad():
            seen.copy_(x[0])  # the user's own write inside the step, grad mode off like the step's
        loss = net(x).pow(2).mean()
        loss.backward()
        return loss

    with Recorder() as rec:
        for _ in range(2):
            opt.step(closure)
    recorded = {storage_key(t) for t in [*net.parameters(), seen]}
    assert recorded <= set(rec.history)
    state = [t for per_param in opt.state.values() for t in per_param.values() if isinstance(t, torch.Tensor)]
    assert len(state) == 3 * len(recorded - {storage_key(seen)})  # step, exp_avg, exp_avg_sq
    assert not {storage_key(t) for t in state} & set(rec.history)


def test_a_saved_optimizer_state_written_by_a_step_is_not_named_and_the_report_says_so():
    with contextlib.redirect_stdout(io.StringIO()):
        report = run_script(str(SCRIPTS / "optimizer_state_saved.py"), [])
    assert report.status == "inplace_error" and report.exit_code == 1
    assert_at(report.saved_at[-1].to_dict(), "optimizer_state_saved.py", "saved-here")
    assert_at(report.failed_at[-1].to_dict(), "optimizer_state_saved.py", "failed-here")
    assert report.writes == () and report.fix is None  # no line named rather than a wrong one
    assert "(1 write(s) since the save not recorded)" in format_report(report)

