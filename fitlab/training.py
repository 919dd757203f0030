"""train(config): the blog's fit, by the engine the config picks, as a Run."""

from __future__ import annotations

from fitlab.config import Config
from fitlab.run import Progress, Run


def train(config: Config, progress: Progress | None = None) -> Run:
    """Make labels with the teacher, re-initialise it in place as the student,
    and fit it with SGD on the first n_train rows, as the blog does.

    `progress(done, total)` is called after each epoch. An exception from
    backward() (the blog's error when labels are not detached) ends training
    and is returned in `run.error`, never raised. config.runs_engine picks
    the engine: numpy by hand ("fast") or torch autograd.
    """
    if config.runs_engine == "fast":
        from fitlab.engines.numpy_run import train_numpy
        return train_numpy(config, progress)
    from fitlab.engines.autograd import train_autograd
    return train_autograd(config, progress)
