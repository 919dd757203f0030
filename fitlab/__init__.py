"""fitlab: a teacher–student fit with a tied layer, and the in-place error it teaches.

    from fitlab import Config, train
    run = train(Config())      # the blog's setup
    run.history                # epoch, train_loss, test_loss
    fitlab.sweep(Config(), lr=[0.01, 0.1], seed=[0, 1])   # {config: history}

torch is imported on first use of train or sweep, not on `import fitlab`, so a page
that only validates a Config starts fast.
"""

from fitlab.config import BOUNDS, Config

__all__ = ["BOUNDS", "Config", "sweep", "train"]


def __getattr__(name: str):
    if name == "train":
        from fitlab.training import train
        return train
    if name == "sweep":
        from fitlab.sweeps import sweep
        return sweep
    raise AttributeError(f"module 'fitlab' has no attribute {name!r}")
