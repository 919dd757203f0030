"""Every cause of the in-place error fitlab knows, once: how it shows in code, its fix, and the edit
`--fix` applies for it, with what that edit can prove. Read by everything that names a cause: the
CLI's and notebook's report (advice.py picks a cause, prints its `advice`, shows its `codemod`'s
edit), `--fix` (fix/ applies the codemod to a copy and judges the rerun by its `proof`), the decoder
of a pasted message (decode.py) and the lesson. No hint changes what a correct program computes
(test_causes.py).

`proof`: REFERENCE, the edit only rewrites an in-place op out of place or clones before a write, so
the rerun must match the original with every saved tensor kept as saved (fix/ packs a clone through
torch.autograd.graph.saved_tensors_hooks); RUNS, the edit changes what is computed (a detach, a
fresh forward after a step; `changes` says what), and the rerun must only run; RETAINED, the detach
of a forward shared by two losses, checked against the original with every graph kept: each
backward must give the reference's gradients on the weights it reaches, and the weights end equal.

To add a cause: append a `Cause(...)` to `_LIST`, teach advice.py's `choose_fix` when to pick it, add
a fixture in tests/explain/scripts and a codemod pair in tests/explain/codemods (NAME.in.py ->
NAME.out.py); docs/explain.md's table is generated from this list (tools/causes_table.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from fitlab.explain.codemods import Codemod
from fitlab.explain.codemods.flow import DetachFirstUse, DetachState, DetachValue, FreshForward, UnderNoGrad
from fitlab.explain.codemods.hooks import ReturnFromHook
from fitlab.explain.codemods.lines import CloneAtSave, CloneFirst, CloneWeight, DropInplace, OutOfPlace

REFERENCE, RUNS, RETAINED = "reference", "runs", "retained"
# --fix's verdicts (fix/): RUNS is both a cause's proof and the verdict it can earn at best.
PROVED, NEXT_WRITE, DID_NOT_HELP, NO_EDIT = "proved", "next write", "did not help", "no edit"

# Which writes torch counts, said once (the lesson, the ledger and README cite it).
BUMPS = ("every in-place op (`add_`, `x += …`, `x[i] = …`, `nn.init.*_`, a `foreach` or plain "
         "`optimizer.step()`) bumps the version counter of the tensor it writes; a write through "
         "`.data`, a fused optimizer step (`fused=True`) and a write to an inference tensor bump none")

# Torch's other backward error, which the decoder and the lesson's fix gallery meet.
FREED_GRAPH = (
    "A `backward()` frees the tensors its graph saved, to save memory; a second backward through a part of that "
    "graph that saved tensors finds them gone (\"Trying to backward through the graph a second time\"; a part that "
    "saved none, such as an addition or a sum, goes through again). Usually something built once is reused by "
    "every step: labels or targets made by a model and not detached, a hidden state carried from one batch to the "
    "next, a loss summed over steps. Fix: `.detach()` what crosses from one step to the next, or build it inside "
    "the loop. `retain_graph=True` silences it, but only makes sense if you really mean to differentiate the "
    "same graph twice.")


@dataclass(frozen=True)
class Cause:
    """One cause. key: the fix kind in reports; sign: how it shows in code, in general; fix: the
    fix in one sentence, in general; advice: the report's sentence ({placeholders} filled by
    advice.py from what was recorded); codemod: the edit --fix applies (a codemods.Codemod), None
    if no edit is mechanical; proof: REFERENCE, RUNS or RETAINED (see the module's docstring); changes:
    for RUNS and RETAINED, what the edit changes in what the program computes; no_edit: without a
    codemod, why no edit is mechanical, in one line (--fix and docs/explain.md say it)."""

    key: str
    sign: str
    fix: str
    advice: str
    codemod: Codemod | None
    proof: str | None
    changes: str = ""
    no_edit: str = ""


_LIST = (
    Cause(
        "augmented_assignment",
        "`x += …`, `x *= …` or another `_`-suffixed method on a tensor autograd saved.",
        "`x = x + …`, or `x = x.clone()` before the write.",
        "This in-place arithmetic overwrote a tensor autograd saved for the backward pass. Use the "
        "out-of-place form, which makes a new tensor and leaves the saved one alone.",
        OutOfPlace(), REFERENCE),
    Cause(
        "index_assignment",
        "`x[idx] = …` on a tensor autograd saved (or on a view of it).",
        "write to a clone, or build the result with `torch.where` / `torch.cat`.",
        "This assignment into part of a tensor overwrote it after autograd saved it. Write into a copy "
        "(`x = x.clone()` first), or build the result with `torch.cat`/`torch.where`; for a tensor "
        "filled step by step (an RNN's outputs), collect the steps in a list and `torch.stack` them "
        "after the loop.",
        CloneFirst(), REFERENCE),
    Cause(
        "inplace_module",
        "An in-place module (`nn.ReLU(inplace=True)`, `nn.Dropout(inplace=True)`) overwrote a tensor "
        "the previous operation saved.",
        "drop `inplace=True` where the module is built.",
        "{module} overwrote its input in place, and the op before it saved that tensor for its gradient. "
        "Drop `inplace=True` where it is built{built}.",
        DropInplace(), REFERENCE),
    Cause(
        "inplace_function",
        "An in-place function (`F.relu(x, inplace=True)`, `F.relu_(x)`, `x.sigmoid_()`) overwrote a "
        "tensor the previous operation saved.",
        "call its out-of-place form.",
        "An in-place function overwrote a tensor the op before it saved for its gradient. Call its "
        "out-of-place form (drop `inplace=True`, or `F.relu(x)` instead of `F.relu_(x)`).",
        OutOfPlace(), REFERENCE),
    Cause(
        "hook_output",
        "A forward hook writes its module's output in place (`output.clamp_(…)`), which an op in the module saved.",
        "return the new output from the hook: torch passes a forward hook's return value on as the module's output.",
        "This line, in a forward hook, wrote its module's output in place after an op in the module saved it. Return "
        "the new output instead (`output = output.clamp(…)`, then `return output`): torch passes a forward hook's "
        "return value on as the module's output (the edit below).",
        ReturnFromHook(), REFERENCE),
    Cause(
        "module_buffer",
        "A module writes its own buffer in place (`self.state.copy_(…)`) while the graph of an earlier "
        "forward still needs its old value.",
        "rebind the buffer instead of writing into it, or run one forward per backward.",
        "`{buffer}` is a buffer of {owner}: a later forward wrote it in place ({op}) while the graph of an "
        "earlier forward still needed its old value. Rebind the buffer instead of writing into it "
        "(the edit below), or run one forward per backward; with DistributedDataParallel, "
        "`broadcast_buffers=False` stops the writes made before each forward.",
        OutOfPlace(attributes=True), REFERENCE),
    Cause(
        "embedding_max_norm",
        "`nn.Embedding(max_norm=…)` renormalises its weight in place on each call, after the weight "
        "was used elsewhere.",
        "clone the weight where it is used before the embedding call.",
        "nn.Embedding(max_norm=...) renormalises its weight in place on each call ({op}), after this "
        "line used the weight. As torch's docs for nn.Embedding say: clone the weight where it is used "
        "before the embedding call (`embedding.weight.clone() @ W.t()`).",
        CloneWeight(), REFERENCE),
    Cause(
        "refilled_input",
        "An input refilled in place (`z.normal_()`, `x.copy_(batch)`) that an earlier forward used.",
        "draw or copy into a new tensor (`z = torch.randn_like(z)`).",
        "This line refilled a tensor in place that an earlier forward had used as input, so its graph "
        "lost the values it saved. Draw a new tensor instead (`z = torch.randn_like(z)`); the graph made "
        "from the old values keeps them.",
        OutOfPlace(), REFERENCE),
    Cause(
        "detach_labels",
        "The weights were re-initialised in place (`nn.init.*_`) after a forward pass whose graph is "
        "still differentiated: the blog's bug, labels made by the net and not detached.",
        "`.detach()` what the old weights made.",
        "The graph that saved this tensor was built before the weights were re-initialised in place. "
        "Detach what was computed with the old weights (e.g. `labels = net(X).detach()`, or compute it "
        "under `torch.no_grad()`), so backward never reaches that graph.",
        DetachValue(), RUNS,
        "the detached value carries no graph: no gradient reaches what made it (the old weights), "
        "which is what a re-initialisation means"),
    Cause(
        "fresh_forward_after_step",
        "`optimizer.step()` (or another write to the weights) ran between a forward pass and a backward "
        "through it, e.g. a GAN: the discriminator's step, then the generator's backward through the "
        "old graph.",
        "run the forward again after the step; in a GAN, G's loss from a new `D(fake)` after D's step.",
        "{who} wrote the weights in place after this graph saved them, and a later backward() still "
        "went through that graph. Run the forward again after the step and take the loss from the new "
        "output. In a GAN: compute D's loss from `fake.detach()`, and G's loss from a new `D(fake)` after "
        "D's step. (Moving G's backward() before D's step also avoids the error, but then G's backward "
        "adds its gradients to D's weights before D steps: D's fake term cancels; zero D's gradients "
        "after it if you do.) Keep a hand-written update in place, under torch.no_grad(): "
        "`p = p - lr * p.grad` would make a new tensor that the model and optimizer do not hold.",
        FreshForward(), RUNS,
        "the loss is computed again from the updated weights, so its gradients are those of the new "
        "weights, not of the old graph's"),
    Cause(
        "target_network_sync",
        "Weights copied into a network (`load_state_dict`, a target network's sync) whose output a graph "
        "still needed.",
        "compute the target's output under `torch.no_grad()` (or `.detach()` it).",
        "This line copied weights into a network (load_state_dict) whose output this graph still needed: a target "
        "network's. Its output needs no gradient: compute it under `torch.no_grad()` (or `.detach()` it), "
        "so backward never reaches the target's weights and the sync can stay where it is. (A fresh forward "
        "after the sync also runs, but then the loss uses the new target's values.)",
        DetachValue(), RUNS,
        "the target's output is a constant of the loss: no gradient reaches the target's weights, which "
        "the target network never trains on"),
    Cause(
        "carried_state",
        "A state carried from one batch to the next (an RNN's hidden state, with `retain_graph=True`), or "
        "a value made once and reused by every step (PPO's old log-probabilities), reaches the graph of an "
        "earlier batch, whose weights were updated since.",
        "detach the state at the batch boundary (`h = h.detach()`), or the reused value where it is made.",
        "This backward() reached the graph of an earlier batch through a tensor carried over from it "
        "(an RNN's hidden state, or a value made once and reused, such as PPO's old log-probabilities), and "
        "the weights that graph saved were updated since. Detach the state at the batch boundary: "
        "`h = h.detach()` (an LSTM's pair: `h = tuple(s.detach() for s in h)`), or the reused value where it "
        "is made (`old_logp = ....detach()`); then retain_graph=True is no longer needed.",
        DetachState(), RUNS,
        "each step's backward stops at the carried state or the reused value (truncated backpropagation; "
        "old log-probabilities are constants of PPO's loss), instead of reaching earlier steps' graphs"),
    Cause(
        "clone_before_write",
        "Another in-place write (through a view, or by a library) to a tensor autograd saved.",
        "write to a copy, or use the out-of-place form of the op.",
        "This line overwrote a tensor autograd saved for the backward pass. Write to a copy "
        "(`x = x.clone()` before the write) or use the out-of-place form of the op.",
        CloneAtSave(), REFERENCE),
)

# Causes of autograd's neighbouring errors (fitlab.explain.neighbours): a backward through a freed graph, an
# in-place write to a leaf that requires grad (or a view of one), or to a view autograd cannot rebase.
# `.data` is never the fix: a write through it is one no version counter sees (BUMPS).
_RETAIN = ("retain_graph=True on the first backward() is for a second walk you really mean: it keeps every "
           "tensor the graph saved in memory until a backward without it")
_NOT_DATA = ("Not `.data`: autograd does not see a write through it, so a graph that saved the old values "
             "would silently use the new ones.")
_NEIGHBOURS = (
    Cause(
        "freed_shared_forward",
        "One forward's output used by two losses, each differentiated: a GAN's `fake = G(z)` in D's loss "
        "without `.detach()`, then in G's; the first backward() freed the graph the second needs.",
        "detach it in the loss that needs no gradient through it (`D(fake.detach())`); if both losses "
        "need its graph, add them and call backward() once.",
        "{built} built the graph that two backward() calls walked: {first} freed the tensors it saved, and "
        "this backward needed them again. If one of the two losses needs no gradient through it (a GAN's "
        "discriminator loss on the generator's output), detach it in that loss, `D(fake.detach())`, so that "
        "only the other backward walks it. If both losses need it, add them and call backward() once. "
        + _RETAIN + ".",
        DetachFirstUse(), RETAINED,
        "that loss's backward stops at the detached tensor: no gradient of it reaches what made the "
        "tensor (in a GAN, the generator, which the discriminator's step does not train)"),
    Cause(
        "freed_carried_state",
        "A state carried from one batch to the next (an RNN's hidden state) and not detached: the next "
        "batch's backward reaches the graph of the previous batch, which that batch's backward freed.",
        "detach the state at the batch boundary (`h = h.detach()`).",
        "This backward() reached the graph of an earlier batch through a tensor carried over from it "
        "({built}, which runs again for each batch), and that batch's backward ({first}) had freed it. "
        "Detach the state at the batch boundary: `h = h.detach()` (an LSTM's pair: "
        "`h = tuple(s.detach() for s in h)`). " + _RETAIN + ": here every earlier batch's graph, each "
        "backward walking all of them, slower at every batch.",
        DetachState(), RUNS,
        "each batch's backward stops at the carried state (truncated backpropagation through time), "
        "instead of reaching earlier batches' graphs"),
    Cause(
        "freed_computed_once",
        "A tensor computed once, before the loop (labels a model made, a shared feature), used by every "
        "step's loss: the first step's backward freed its graph.",
        "compute it inside the loop; if it needs no gradient, `.detach()` it (or compute it under "
        "`torch.no_grad()`).",
        "{built} ran once, before the loop, and every step's loss uses what it made: the first step's "
        "backward ({first}) freed the graph it built. Compute it inside the loop, so each step has a "
        "graph of its own; if it needs no gradient (labels, targets, a fixed input), `.detach()` it or "
        "compute it under `torch.no_grad()`. " + _RETAIN + ", and every step would add that graph's "
        "gradients again.",
        DetachValue(), RUNS,
        "the value made once is detached where it is made: no step's gradient reaches what made it (right "
        "for labels, targets, a fixed input; a value that needs a gradient is computed inside the loop "
        "instead)"),
    Cause(
        "freed_accumulated_loss",
        "A loss accumulated across iterations (`total_loss += loss`) and differentiated at each one: every "
        "backward walks the earlier iterations' graphs again.",
        "call backward() on each iteration's own loss; keep the total as a number (`loss.item()`).",
        "The tensor differentiated here holds the losses of earlier iterations, added up ({built}): an "
        "earlier backward ({first}) walked and freed their graphs. Call backward() on this iteration's "
        "loss alone, and keep the running total for logging as a number (`total_loss += loss.item()`) or "
        "a detached tensor (`loss.detach()`).",
        None, None,
        no_edit="this error arises only when a backward differentiates the accumulated total itself (a total "
        "kept for logging alone is never walked again), and whether you meant a backward of each iteration's "
        "loss or one of the whole sum after the loop, no edit can tell"),
    Cause(
        "leaf_update",
        "A hand-written update of a parameter (`w -= lr * w.grad`, `p.add_(-lr * p.grad)`) run with grad "
        "mode on.",
        "put it under `with torch.no_grad():`, or let an optimizer's `step()` do it.",
        "This line writes {leaf} in place, a leaf that requires grad, with grad mode on: a hand-written "
        "update of a parameter. Put it under `with torch.no_grad():` (or let an optimizer, such as "
        "`torch.optim.SGD`, do it with `step()`). " + _NOT_DATA,
        UnderNoGrad(), RUNS,
        "the update is not recorded by autograd: no gradient flows through it, as with an optimizer's step"),
    Cause(
        "leaf_accumulate",
        "A value that carries a graph added in place into a leaf that requires grad (`total += loss`).",
        "take the out-of-place form (`total = total + loss`).",
        "This line adds, in place, a value that carries a graph ({value}) into {leaf}, a leaf that requires "
        "grad: autograd cannot record a leaf being overwritten. Take the out-of-place form, which makes a "
        "new tensor in the graph (`x = x + …`). " + _NOT_DATA,
        OutOfPlace(), REFERENCE),
    Cause(
        "leaf_view_write",
        "A write into a part of a parameter (`w[0] = 0`, `w[:, i] -= …`, an initialisation of some weights) "
        "with grad mode on.",
        "do it under `with torch.no_grad():`.",
        "This line writes into a part of {leaf}, a leaf that requires grad, with grad mode on. An edit of "
        "some weights (an initialisation, a surgery on a layer) goes under `with torch.no_grad():`. If the "
        "written values must stay in the graph, build a new tensor instead (`torch.where`, `torch.cat`). "
        + _NOT_DATA,
        UnderNoGrad(), RUNS,
        "the write is not recorded by autograd: the edited weights are a new starting point, not a "
        "function of what was written into them"),
    Cause(
        "multi_view_write",
        "An in-place write into one of several views a function returned (`chunk`, `split`, `unbind`, a "
        "loop over a tensor's rows).",
        "take the out-of-place form (`c = c * s`), or `.clone()` the views first.",
        "This line writes in place into {view}, one of the views {maker} returned{made}: autograd forbids "
        "an in-place write into one of several views of one call. Take the out-of-place form and keep "
        "the result (`c = c.mul(s)`; rebuild a tensor from its parts with `torch.stack` or `torch.cat`), or "
        "`.clone()` the views where they are made.",
        None, REFERENCE,
        no_edit="the out-of-place form leaves the views unwritten, so what reads them after the write decides "
        "between it and a `.clone()` where they are made, which no edit can tell"),
    Cause(
        "function_view_write",
        "An in-place write into a view a custom autograd.Function returned (or its input returned as-is).",
        "`.clone()` the output where the Function is called, or write out of place.",
        "This line writes in place into the output of {maker}{made}: a view returned by a custom "
        "autograd.Function, whose own backward an in-place write would override. `.clone()` the output "
        "where it is made, or write out of place (`y = y + …`).",
        CloneAtSave(), REFERENCE),
    Cause(
        "hook_view_write",
        "A module with a full backward hook (`register_full_backward_hook`), whose output the next in-place "
        "op writes (`nn.ReLU(inplace=True)` after it): the hook wraps that output in a view.",
        "drop the in-place write after the hooked module, or take the gradient with a tensor hook "
        "(`output.register_hook(...)` from a forward hook) instead.",
        "The full backward hook registered{registered} wraps the hooked module's output in a view (a "
        "Function's, which an in-place write would bypass), and {writer} wrote into it in place. Drop that "
        "in-place write (build the module without `inplace=True`), or take the gradient with a tensor hook "
        "instead of the full backward hook: a forward hook that calls `output.register_hook(...)` wraps "
        "nothing.",
        None, REFERENCE,
        no_edit="both fixes change what you wrote elsewhere than the line that failed (the module's build, or "
        "the kind of hook and what it receives), a choice for you"),
)

CAUSES: dict[str, Cause] = {c.key: c for c in _LIST + _NEIGHBOURS}
# The neighbouring errors' causes. Their REFERENCE edits have no reference in --fix (fix/verdict.py):
# the original program never gets past the line that failed.
NEIGHBOURS = frozenset(c.key for c in _NEIGHBOURS)
UNREFERENCED = ("your program dies at the line that failed whether its saved tensors are kept or not, so it never "
                "computed the gradients past it: there is nothing to compare them with")

# clone_before_write's advice for a write through a view whose name cannot be rebound (advice.py fills {why}):
# a copy of the view would leave its base unwritten as much as rebinding it, so the copy goes to the save.
VIEW_WRITE = ("This line wrote, through a view, a tensor autograd saved for the backward pass. Here {why}. "
              "Copy the tensor where it is saved instead (`.clone()` on the saved line's tensor), so the "
              "saved values stay and every later read sees the write as before{then}.")
VIEW_CLONE = ": the edit below"
# The advice where a cause's own edit would rebind a name others can see (an argument, an attribute,
# a container's tensor; advice.py fills {why} from the codemod's refusal): the copy goes to the save.
VISIBLE_WRITE = ("This line overwrote in place a tensor autograd saved for the backward pass. Here {why}. Copy "
                 "the tensor where it is saved instead (`.clone()` on the saved line), so the saved values stay "
                 "and every later read sees the write as before{then}.")


def cause(key: str) -> Cause:
    """The cause of a fix kind (KeyError for an unknown one)."""
    return CAUSES[key]
