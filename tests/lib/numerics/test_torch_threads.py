"""Every torch job of fitlab runs on fitlab's torch thread count in the thread
that runs it: Streamlit gives each session's script a thread of its own, whose
count is torch's default until a job sets it (fitlab.numerics.threads)."""

import threading
from dataclasses import replace

import pytest
import torch

from fitlab import Config, train
from fitlab.failure.autopsy import autopsy
from fitlab.failure.fixes import DETACH, VARIANTS, run_variant
from fitlab.failure.vivid import vivid_example
from fitlab.numerics.threads import TORCH_THREADS
from fitlab.shared_layer.gradients import tied_gradient_ledger

LESSON = Config(detach=False, width=7, epochs=2)
JOBS = {
    "a run, autograd": lambda: train(replace(LESSON, detach=True, engine="autograd")),
    "a run, the fast engine": lambda: train(replace(LESSON, detach=True, engine="fast")),
    "a fix of the gallery": lambda: run_variant(LESSON, DETACH),
    "the blog's script as written": lambda: run_variant(LESSON, VARIANTS[0]),
    "the replay": lambda: autopsy(LESSON),
    "the vivid example": lambda: vivid_example(LESSON),
    "the tied-gradient ledger": lambda: tied_gradient_ledger(replace(LESSON, detach=True)),
}


@pytest.mark.parametrize("job", JOBS, ids=str)
def test_a_job_in_a_fresh_thread_runs_on_fitlabs_torch_thread_count(job):
    seen = {}

    def session():
        torch.set_num_threads(2)   # what a new thread may start with: torch's default, one per core
        JOBS[job]()
        seen["threads"] = torch.get_num_threads()

    thread = threading.Thread(target=session)
    thread.start()
    thread.join()
    assert seen["threads"] == TORCH_THREADS == 1
