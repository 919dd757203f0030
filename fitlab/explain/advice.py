"""The fix for one in-place error, chosen by what was written, by whom, and the user's line.

The recorder knows the written tensor's role (a parameter, an input or buffer, a tensor
autograd computed), the op, the torch code that ran it (torch.optim, nn.init, an in-place
module) and the user's line. Each cause below has a fixture script and a test that applies
the advice and compares the gradients with a program written without the write; advice
that would change what the program computes is not given (e.g. moving a GAN's generator
backward before the discriminator's step adds its gradients to the discriminator).
"""

from __future__ import annotations

import inspect
import linecache
import os
from dataclasses import dataclass

from fitlab.explain import edits as ed
from fitlab.explain import stack as stacks
from fitlab.explain.graph import storage_key

# Random fills only re-initialise; fill_/zero_ could just as well be `h[:, 0] = 0`.
_REINIT_OPS = frozenset({"aten::normal_", "aten::uniform_", "aten::bernoulli_", "aten::exponential_",
                         "aten::cauchy_", "aten::log_normal_", "aten::geometric_", "aten::random_"})
_REFILL_OPS = _REINIT_OPS | {"aten::copy_", "aten::fill_", "aten::zero_"}
_ACTIVATION_OPS = frozenset({
    "aten::relu_", "aten::leaky_relu_", "aten::elu_", "aten::celu_", "aten::selu_", "aten::hardtanh_",
    "aten::threshold_", "aten::sigmoid_", "aten::tanh_", "aten::silu_", "aten::gelu_", "aten::mish_",
    "aten::hardsigmoid_", "aten::hardswish_", "aten::rrelu_with_noise_", "aten::relu6_"})
_INPLACE_MODULES = ("nn" + os.sep + "modules" + os.sep + "activation.py",
                    "nn" + os.sep + "modules" + os.sep + "dropout.py")
_FUNCTIONAL = "nn" + os.sep + "functional.py"

TEXTS = {
    "fresh_forward_after_step": (
        "{who} wrote the weights in place after this graph saved them, and a later backward() still "
        "went through that graph. Run the forward again after the step and take the loss from the new "
        "output. In a GAN: compute D's loss from `fake.detach()`, and G's loss from a new `D(fake)` after "
        "D's step. (Moving G's backward() before D's step also avoids the error, but then G's backward "
        "adds its gradients to D's weights before D steps: D's fake term cancels; zero D's gradients "
        "after it if you do.) Keep a hand-written update in place, under torch.no_grad(): "
        "`p = p - lr * p.grad` would make a new tensor that the model and optimizer do not hold."),
    "target_network_sync": (
        "This line copied weights into a network (load_state_dict) whose output this graph still needed: a target "
        "network's. Its output needs no gradient: compute it under `torch.no_grad()` (or `.detach()` it), "
        "so backward never reaches the target's weights and the sync can stay where it is. (A fresh forward "
        "after the sync also runs, but then the loss uses the new target's values.)"),
    "detach_labels": (
        "The graph that saved this tensor was built before the weights were re-initialised in place. "
        "Detach what was computed with the old weights (e.g. `labels = net(X).detach()`, or compute it "
        "under `torch.no_grad()`), so backward never reaches that graph."),
    "carried_state": (
        "This backward() reached the graph of an earlier batch through a tensor carried over from it "
        "(an RNN's hidden state), and the weights that graph saved were updated since. Detach the state "
        "at the batch boundary: `h = h.detach()` (an LSTM's pair: `h = tuple(s.detach() for s in h)`); "
        "then retain_graph=True is no longer needed."),
    "inplace_module": (
        "{module} overwrote its input in place, and the op before it saved that tensor for its gradient. "
        "Drop `inplace=True` where it is built{built}."),
    "inplace_function": (
        "An in-place function overwrote a tensor the op before it saved for its gradient. Call its "
        "out-of-place form (drop `inplace=True`, or `F.relu(x)` instead of `F.relu_(x)`)."),
    "module_buffer": (
        "`{buffer}` is a buffer of {owner}: a later forward wrote it in place ({op}) while the graph of an "
        "earlier forward still needed its old value. Rebind the buffer instead of writing into it "
        "(the edit below), or run one forward per backward; with DistributedDataParallel, "
        "`broadcast_buffers=False` stops the writes made before each forward."),
    "embedding_max_norm": (
        "nn.Embedding(max_norm=...) renormalises its weight in place on each call ({op}), after this "
        "line used the weight. As torch's docs for nn.Embedding say: clone the weight where it is used "
        "before the embedding call (`embedding.weight.clone() @ W.t()`)."),
    "refilled_input": (
        "This line refilled a tensor in place that an earlier forward had used as input, so its graph "
        "lost the values it saved. Draw a new tensor instead (`z = torch.randn_like(z)`); the graph made "
        "from the old values keeps them."),
    "augmented_assignment": (
        "This in-place arithmetic overwrote a tensor autograd saved for the backward pass. Use the "
        "out-of-place form, which makes a new tensor and leaves the saved one alone."),
    "index_assignment": (
        "This assignment into part of a tensor overwrote it after autograd saved it. Write into a copy "
        "(`x = x.clone()` first), or build the result with `torch.cat`/`torch.where`; for a tensor "
        "filled step by step (an RNN's outputs), collect the steps in a list and `torch.stack` them "
        "after the loop."),
    "clone_before_write": (
        "This line overwrote a tensor autograd saved for the backward pass. Write to a copy "
        "(`x = x.clone()` before the write) or use the out-of-place form of the op."),
}


@dataclass(frozen=True)
class Fix:
    """The fix for the write that broke the saved tensor: a cause key, the sentence, and the
    edited lines of the user's code where the edit is mechanical."""

    kind: str
    text: str
    edits: tuple = ()

    def to_dict(self) -> dict:
        """The JSON object of the "fix" field."""
        return {"kind": self.kind, "text": self.text, "edits": [e.to_dict() for e in self.edits]}


def _user_line(stack: tuple):
    """(file, line, raw source) of the innermost user frame of a captured stack, or None."""
    for code, lasti in stack:
        line = stacks.line_of(code, lasti) if stacks.is_user_file(code.co_filename) else None
        if line is not None:
            return code.co_filename, line, linecache.getline(code.co_filename, line)
    return None


def _edit(maker, where) -> tuple:
    if where is None:
        return ()
    edit = maker(*where)
    return () if edit is None else (edit,)


def _modules(write) -> list:
    return [m for m in (ref() for ref in write.modules) if m is not None]


def _module_name(modules: list) -> str:
    """`act` (ReLU) in Net: the innermost module by its path in the outermost one."""
    inner, outer = modules[0], modules[-1]
    if inner is outer:
        return type(inner).__name__
    path = next((n for n, m in outer.named_modules() if m is inner), None)
    return f"`{path}` ({type(inner).__name__}) in {type(outer).__name__}"


def _sources(modules: list, *stack_lists) -> dict:
    """path -> lines of the user's files: those on the stacks and those defining the modules."""
    paths = {code.co_filename for stack in stack_lists for code, _ in stack
             if stacks.is_user_file(code.co_filename)}
    for m in modules:
        try:
            path = inspect.getsourcefile(type(m))
        except TypeError:
            continue
        if path and stacks.is_user_file(path):
            paths.add(path)
    return {p: linecache.getlines(p) for p in paths if not p.startswith("<") or linecache.getlines(p)}


def _buffer_of(write, key) -> tuple | None:
    """(name, owner class) when the written storage is a buffer of a module whose forward ran."""
    for m in _modules(write):
        for name, b in m.named_buffers():
            if storage_key(b) == key:
                return name, type(m).__name__
    return None


def _inner(stack: tuple) -> tuple:
    """The frames below the innermost user frame: the code the user's line ran to make the write.
    What wrote is decided by these, not by a call around the line (a training step that
    Lightning runs inside optimizer.step(closure) is not the optimizer's write)."""
    for i, (code, _) in enumerate(stack):
        if stacks.is_user_file(code.co_filename):
            return stack[:i]
    return stack


def _loads_state(stack: tuple) -> bool:
    return any(code.co_name == "load_state_dict" for code, _ in stack)


def choose_fix(write, saved_stack: tuple, failed_stack: tuple, carried: bool, key) -> Fix:
    """The fix for the first write that made the saved tensor stale."""
    op, where = write.op, _user_line(write.stack)
    stack = _inner(write.stack)
    if op == "aten::embedding_renorm_":
        return Fix("embedding_max_norm", TEXTS["embedding_max_norm"].format(op=op),
                   _edit(ed.clone_weight, _user_line(saved_stack)))
    if carried:
        return Fix("carried_state", TEXTS["carried_state"])
    if write.target == "parameter":
        if op in _REINIT_OPS or stacks.runs_torch_file(stack, os.path.join("nn", "init.py")):
            return Fix("detach_labels", TEXTS["detach_labels"])
        if op == "aten::copy_" and _loads_state(stack):
            return Fix("target_network_sync", TEXTS["target_network_sync"])
        who = "optimizer.step()" if stacks.runs_torch_file(stack, "optim" + os.sep) else "This line"
        return Fix("fresh_forward_after_step", TEXTS["fresh_forward_after_step"].format(who=who))
    modules = _modules(write)
    if any(stacks.runs_torch_file(stack, rel) for rel in _INPLACE_MODULES) and modules:
        edits = ed.built_with_inplace(_sources(modules, write.stack, saved_stack, failed_stack),
                                      type(modules[0]).__name__)
        built = "" if not edits else " (" + ", ".join(
            f"{os.path.basename(e.file)}:{e.line}" for e in edits) + ")"
        return Fix("inplace_module", TEXTS["inplace_module"].format(module=_module_name(modules), built=built),
                   tuple(edits))
    if stacks.runs_torch_file(stack, _FUNCTIONAL) or (where and "inplace" in where[2]):
        return Fix("inplace_function", TEXTS["inplace_function"], _edit(ed.without_inplace, where))
    if op in _ACTIVATION_OPS and write.target == "activation":  # F.relu_(s), s.sigmoid_()
        return Fix("inplace_function", TEXTS["inplace_function"], _edit(ed.out_of_place, where))
    if write.target == "leaf":
        buffer = _buffer_of(write, key)
        if buffer is not None:
            return Fix("module_buffer", TEXTS["module_buffer"].format(buffer=buffer[0], owner=buffer[1], op=op),
                       _edit(ed.out_of_place, where))
        if op in _REFILL_OPS:
            return Fix("refilled_input", TEXTS["refilled_input"], _edit(ed.out_of_place, where))
    index = _edit(ed.clone_first, where)
    if index:
        return Fix("index_assignment", TEXTS["index_assignment"], index)
    # Rebinding a view's name would leave the tensor it views unwritten.
    arithmetic = _edit(ed.out_of_place, where) if write.target != "view" else ()
    if arithmetic:
        return Fix("augmented_assignment", TEXTS["augmented_assignment"], arithmetic)
    return Fix("clone_before_write", TEXTS["clone_before_write"])
