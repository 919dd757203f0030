"""The fix for one in-place error, chosen by what was written, by whom, and the user's line.

The recorder knows the written tensor's role (a parameter, an input or buffer, a tensor
autograd computed), the op, the torch code that ran it (torch.optim, nn.init, an in-place
module) and the user's line. The causes, their sentences and their codemods are causes.py's:
here the chosen cause's codemod runs on the user's file at the lines the report names (its
Sites), to show the lines it changes; --fix applies it again at the same sites. Where a cause's
own edit would rebind a name others see, the fix is the clone where the tensor was saved. Each
cause has a fixture script and a test that applies the advice and compares the gradients with a
program written without the write.
"""

from __future__ import annotations

import difflib
import inspect
import linecache
import os
from dataclasses import dataclass, replace

import libcst as cst

from fitlab.explain import stack as stacks
from fitlab.explain.aliases import view_rebinding
from fitlab.explain.causes import CAUSES, VIEW_CLONE, VIEW_WRITE, VISIBLE_WRITE
from fitlab.explain.codemods import Site, reads
from fitlab.explain.codemods.lines import VISIBLE
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
_MODULE_CALL = os.sep + os.path.join("nn", "modules", "module.py")
# Each cause's sentence, from the one list of causes.
ADVICE = {key: c.advice for key, c in CAUSES.items()}


@dataclass(frozen=True)
class Edit:
    """Replace line `line` of `file` (its text `old`) by the lines `new`: what a codemod changed,
    as the report shows it."""

    file: str
    line: int
    old: str
    new: tuple

    def to_dict(self) -> dict:
        """The JSON object of one entry of the fix's "edits"."""
        return {"file": self.file, "line": self.line, "old": self.old, "new": list(self.new)}


@dataclass(frozen=True)
class Fix:
    """The fix for the write that broke the saved tensor: a cause key, the sentence, the edited
    lines of the user's code where the cause's codemod applies, and where it applies (path ->
    codemods.Site: what --fix gives the codemod again), or, where it does not, why (one line)."""

    kind: str
    text: str
    edits: tuple = ()
    sites: tuple = ()
    why: str = ""

    def to_dict(self) -> dict:
        """The JSON object of the "fix" field."""
        return {"kind": self.kind, "text": self.text, "edits": [e.to_dict() for e in self.edits]}


def line_edits(path: str, old: str, new: str) -> list:
    """The Edits that turn `old` (a file's text) into `new`: each changed run of lines, an inserted
    one shown with the line it goes before."""
    a, b = old.splitlines(), new.splitlines()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:   # an insertion: before line i1 (or after the last)
            at = min(i1, len(a) - 1)
            out.append(Edit(path, at + 1, a[at], tuple(b[j1:j2]) + ((a[at],) if i1 < len(a) else ())))
        else:
            out.append(Edit(path, i1 + 1, "\n".join(a[i1:i2]), tuple(b[j1:j2])))
    return out


def _text(path: str) -> str:
    return "".join(linecache.getlines(path))


def apply(kind: str, sites: dict, text=_text) -> tuple:
    """(edits, sites, why) of the cause's codemod at each site (path -> Site), on each file's text
    (`text(path)`); sites: all those tried ((path, Site) pairs, for --fix, which knows more names);
    why: the reason of the first site where it did not apply."""
    codemod = CAUSES[kind].codemod
    if codemod is None:
        return (), (), ""
    edits, why = [], ""
    for path, site in sites.items():
        source = text(path)
        new, reason = codemod.apply(source, site, path) if source else (None, "no source for the file")
        if new is None:
            why = why or reason
        else:
            edits += line_edits(path, source, new)
    return tuple(edits), tuple(sites.items()), why


def _fix(kind: str, text: str, sites: dict) -> Fix:
    edits, kept, why = apply(kind, sites)
    return Fix(kind, text, edits, kept, why)


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


def _in_forward_hook(stack: tuple, modules: list) -> bool:
    """Whether the innermost user frame of a write's stack is a hook nn.Module's call ran (not the
    module's forward): torch calls hooks from `_call_impl` (from its `inner` in newer releases)."""
    for i, (code, _) in enumerate(stack):
        if stacks.is_user_file(code.co_filename):
            caller = stack[i + 1][0] if i + 1 < len(stack) else None
            forward = getattr(type(modules[0]).forward, "__code__", None) if modules else None
            return (caller is not None and caller.co_filename.endswith(_MODULE_CALL)
                    and caller.co_name in ("_call_impl", "inner") and code is not forward)
    return False


def _loads_state(stack: tuple) -> bool:
    return any(code.co_name == "load_state_dict" for code, _ in stack)


def _frames(stack: tuple) -> list:
    """(file, line) of each user frame of a captured stack, outermost first."""
    out = []
    for code, lasti in stack:
        line = stacks.line_of(code, lasti) if stacks.is_user_file(code.co_filename) else None
        if line is not None:
            out.append((code.co_filename, line))
    return out[::-1]


def _sites(write_stack: tuple, saved_stack: tuple, failed_stack: tuple) -> dict:
    """path -> Site of each user file holding the saved, written or failed frames (the innermost
    written frame's file first: the one a line edit applies to)."""
    frames = {"saved": _frames(saved_stack), "written": _frames(write_stack), "failed": _frames(failed_stack)}
    paths = dict.fromkeys([f for f, _ in frames["written"][::-1]] + [f for f, _ in frames["saved"] + frames["failed"]])
    return {p: Site(**{k: tuple(line for f, line in v if f == p) for k, v in frames.items()}) for p in paths}


def _line_reads(line: str) -> set:
    try:
        return reads(cst.parse_statement(line.strip()))
    except Exception:  # noqa: BLE001 - a line that is part of a longer statement names nothing here
        return set()


def _shared_name(written: list, saved: str) -> str | None:
    """The one name the saved line and a line of the write's frames both read (`scale(h)` and
    `y = layer(hidden=h)`: h), or None."""
    both = set().union(*map(_line_reads, written)) & _line_reads(saved)
    both -= {"torch", "F", "nn", "self"}
    return both.pop() if len(both) == 1 else None


def _only(sites: dict, path) -> dict:
    return {path: sites[path]} if path in sites else {}


def choose_fix(write, saved_stack: tuple, failed_stack: tuple, carried: bool, key) -> Fix:
    """The fix for the first write that made the saved tensor stale."""
    op, where = write.op, _user_line(write.stack)
    stack = _inner(write.stack)
    sites = _sites(write.stack, saved_stack, failed_stack)
    saved = _user_line(saved_stack)
    at_write = _only(sites, where[0]) if where else {}
    at_save = _only(sites, saved[0]) if saved else {}
    if at_save and where:   # the name the write (or a caller of it) and the save both read
        written = [linecache.getline(f, line) for f, line in _frames(write.stack)]
        at_save = {p: replace(site, name=_shared_name(written, saved[2])) for p, site in at_save.items()}
    if op == "aten::embedding_renorm_":
        return _fix("embedding_max_norm", ADVICE["embedding_max_norm"].format(op=op), at_save)
    if carried:
        return _fix("carried_state", ADVICE["carried_state"], at_save)
    if write.target == "parameter":
        failed = _user_line(failed_stack)
        at_fail = _only(sites, failed[0]) if failed else {}
        if op in _REINIT_OPS or stacks.runs_torch_file(stack, os.path.join("nn", "init.py")):
            return _fix("detach_labels", ADVICE["detach_labels"], at_fail)
        if op == "aten::copy_" and _loads_state(stack):
            return _fix("target_network_sync", ADVICE["target_network_sync"], at_fail)
        who = "optimizer.step()" if stacks.runs_torch_file(stack, "optim" + os.sep) else "This line"
        return _fix("fresh_forward_after_step", ADVICE["fresh_forward_after_step"].format(who=who), at_fail)
    modules = _modules(write)
    if any(stacks.runs_torch_file(stack, rel) for rel in _INPLACE_MODULES) and modules:
        files = _sources(modules, write.stack, saved_stack, failed_stack)
        edits, kept, why = apply("inplace_module", {p: Site(module=type(modules[0]).__name__) for p in sorted(files)})
        built = "" if not edits else " (" + ", ".join(f"{os.path.basename(e.file)}:{e.line}" for e in edits) + ")"
        return Fix("inplace_module", ADVICE["inplace_module"].format(module=_module_name(modules), built=built),
                   edits, kept, why)
    if _in_forward_hook(write.stack, modules):
        hook = _fix("hook_output", ADVICE["hook_output"], at_write)
        if hook.edits:
            return hook
    if stacks.runs_torch_file(stack, _FUNCTIONAL) or (where and "inplace" in where[2]) or (
            op in _ACTIVATION_OPS and write.target == "activation"):   # F.relu_(s), s.sigmoid_()
        return _fallback(_fix("inplace_function", ADVICE["inplace_function"], at_write), at_save)
    if write.target == "leaf":
        buffer = _buffer_of(write, key)
        if buffer is not None:
            return _fix("module_buffer", ADVICE["module_buffer"].format(buffer=buffer[0], owner=buffer[1], op=op),
                        at_write)
        if op in _REFILL_OPS:
            return _fallback(_fix("refilled_input", ADVICE["refilled_input"], at_write), at_save)
    index = _fix("index_assignment", ADVICE["index_assignment"], at_write)
    if index.edits:
        return index
    arithmetic = _fix("augmented_assignment", ADVICE["augmented_assignment"], at_write)
    if write.target == "view" and arithmetic.edits:
        # Rebinding a view's name leaves the tensor it views unwritten: only where nothing reads that later.
        why, base = view_rebinding(where[0], where[1], arithmetic.edits[-1].new[-1], linecache.getlines(where[0]))
        if why:
            # The copy is made where the tensor was saved, so every later read sees the write as before.
            same = saved is not None and _user_code(saved_stack) is _user_code(write.stack) and saved[1] < where[1]
            clone = _fix("clone_before_write", "", {saved[0]: replace(sites[saved[0]], name=base)}) \
                if same and base else Fix("clone_before_write", "")
            return replace(clone, text=VIEW_WRITE.format(why=why, then=VIEW_CLONE if clone.edits else ""))
    if arithmetic.edits:
        return arithmetic
    if VISIBLE in index.why or VISIBLE in arithmetic.why:   # a rebinding others would see
        return _fallback(index if VISIBLE in index.why else arithmetic, at_save)
    return _fix("clone_before_write", ADVICE["clone_before_write"], at_save)


def _fallback(fix: Fix, at_save: dict) -> Fix:
    """`fix`, or where its edit would rebind a name others see (an argument, an attribute, a
    container's tensor), the clone at the saved line: every write stays, the saved value too."""
    if fix.edits or VISIBLE not in fix.why:
        return fix
    clone = _fix("clone_before_write", "", at_save)
    return replace(clone, text=VISIBLE_WRITE.format(why=fix.why, then=VIEW_CLONE if clone.edits else ""))
