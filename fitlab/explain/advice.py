"""The fix for one in-place error, chosen by what was written, by whom, and the user's line.

The recorder knows the written tensor's role (a parameter, an input or buffer, a tensor
autograd computed), the op, the torch code that ran it (torch.optim, nn.init, an in-place
module) and the user's line. The causes, their sentences and their edits are causes.py's;
each has a fixture script and a test that applies the advice and compares the gradients with
a program written without the write.
"""

from __future__ import annotations

import inspect
import linecache
import os
from dataclasses import dataclass

from fitlab.explain import edits as ed
from fitlab.explain import stack as stacks
from fitlab.explain.causes import CAUSES, VIEW_CLONE, VIEW_WRITE
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
# Each cause's sentence, from the one list of causes.
ADVICE = {key: c.advice for key, c in CAUSES.items()}


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


def _user_code(stack: tuple):
    """The code object of the innermost user frame of a captured stack, or None."""
    return next((code for code, _ in stack if stacks.is_user_file(code.co_filename)), None)


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
        return Fix("embedding_max_norm", ADVICE["embedding_max_norm"].format(op=op),
                   _edit(ed.clone_weight, _user_line(saved_stack)))
    if carried:
        return Fix("carried_state", ADVICE["carried_state"])
    if write.target == "parameter":
        if op in _REINIT_OPS or stacks.runs_torch_file(stack, os.path.join("nn", "init.py")):
            return Fix("detach_labels", ADVICE["detach_labels"])
        if op == "aten::copy_" and _loads_state(stack):
            return Fix("target_network_sync", ADVICE["target_network_sync"])
        who = "optimizer.step()" if stacks.runs_torch_file(stack, "optim" + os.sep) else "This line"
        return Fix("fresh_forward_after_step", ADVICE["fresh_forward_after_step"].format(who=who))
    modules = _modules(write)
    if any(stacks.runs_torch_file(stack, rel) for rel in _INPLACE_MODULES) and modules:
        edits = ed.built_with_inplace(_sources(modules, write.stack, saved_stack, failed_stack),
                                      type(modules[0]).__name__)
        built = "" if not edits else " (" + ", ".join(
            f"{os.path.basename(e.file)}:{e.line}" for e in edits) + ")"
        return Fix("inplace_module", ADVICE["inplace_module"].format(module=_module_name(modules), built=built),
                   tuple(edits))
    if stacks.runs_torch_file(stack, _FUNCTIONAL) or (where and "inplace" in where[2]):
        return Fix("inplace_function", ADVICE["inplace_function"], _edit(ed.without_inplace, where))
    if op in _ACTIVATION_OPS and write.target == "activation":  # F.relu_(s), s.sigmoid_()
        return Fix("inplace_function", ADVICE["inplace_function"], _edit(ed.out_of_place, where))
    if write.target == "leaf":
        buffer = _buffer_of(write, key)
        if buffer is not None:
            return Fix("module_buffer", ADVICE["module_buffer"].format(buffer=buffer[0], owner=buffer[1], op=op),
                       _edit(ed.out_of_place, where))
        if op in _REFILL_OPS:
            return Fix("refilled_input", ADVICE["refilled_input"], _edit(ed.out_of_place, where))
    index = _edit(ed.clone_first, where)
    if index:
        return Fix("index_assignment", ADVICE["index_assignment"], index)
    if write.target == "view" and where is not None:
        # Rebinding a view's name leaves the tensor it views unwritten: only where nothing reads that later.
        edit, why, base = ed.view_rebinding(*where, linecache.getlines(where[0]))
        if edit is not None:
            return Fix("augmented_assignment", ADVICE["augmented_assignment"], (edit,))
        if why:
            # The copy is made where the tensor was saved, so every later read sees the write as before.
            saved = _user_line(saved_stack)
            same = saved is not None and _user_code(saved_stack) is _user_code(write.stack) and saved[1] < where[1]
            clone = _edit(lambda *w: ed.clone_saved(*w, base), saved) if same and base else ()
            return Fix("clone_before_write", VIEW_WRITE.format(why=why, then=VIEW_CLONE if clone else ""), clone)
    arithmetic = _edit(ed.out_of_place, where)
    if arithmetic:
        return Fix("augmented_assignment", ADVICE["augmented_assignment"], arithmetic)
    return Fix("clone_before_write", ADVICE["clone_before_write"])
