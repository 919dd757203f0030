"""The settings of one run: what the user chooses, validated once, frozen."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

# Inclusive bounds of each numeric field. batch_size and n_train have an
# upper bound that depends on other fields; validate() checks those too.
BOUNDS: dict[str, tuple[float, float]] = {
    "width": (1, 256),
    "shared_repeats": (0, 8),
    "lr": (1e-6, 10.0),
    "batch_size": (1, 10_000),
    "epochs": (1, 2000),
    "n_samples": (2, 20_000),
    "n_train": (1, 19_999),
    "in_features": (1, 256),
    "seed": (0, 2**32 - 1),
}

# "fast": numpy by hand (fitlab.engines.numpy_run); "autograd": torch, the blog's way.
ENGINES = ("fast", "autograd")
# The values each text field may take.
CHOICES: dict[str, tuple[str, ...]] = {"engine": ENGINES}

@dataclass(frozen=True)
class Config:
    """One teacher–student run. The defaults are the blog's setup.

    width           hidden units of every hidden layer
    shared_repeats  how many times the one shared Linear(width, width) is used
    lr              SGD learning rate
    batch_size      rows per SGD step (the last batch of an epoch may be short)
    detach          detach the labels from the teacher's graph (the blog's fix)
    tied            the student keeps one shared layer; False gives it
                    independent copies that start from the same values
    epochs          passes over the training rows
    n_samples       rows of X drawn in all; the first n_train train, the rest test
    n_train         training rows
    in_features     columns of X
    seed            seed of the run's one torch.Generator
    engine          "fast" (numpy by hand) or "autograd" (torch, the reference);
                    detach=False always runs autograd, whose backward() is
                    what raises the blog's error
    """

    width: int = 5
    shared_repeats: int = 2
    lr: float = 0.01
    batch_size: int = 5
    detach: bool = True
    tied: bool = True
    epochs: int = 100
    n_samples: int = 200
    n_train: int = 50
    in_features: int = 10
    seed: int = 0
    engine: str = "fast"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "bool":
                if not isinstance(value, bool):
                    raise ValueError(f"{f.name}={value!r} is not allowed: it must be True or False")
            elif f.type == "str":
                if value not in CHOICES[f.name]:
                    raise ValueError(f"{f.name}={value!r} is not allowed: it must be one of {CHOICES[f.name]}")
            elif f.type == "int":
                _check_int(f.name, value)
            else:
                _check_float(f.name, value)
        _check_range("n_train", self.n_train, 1, self.n_samples - 1,
                     why=f" with n_samples={self.n_samples}: at least one row must be left for the test set")
        _check_range("batch_size", self.batch_size, 1, self.n_train, why=f", at most n_train={self.n_train}")

    @property
    def n_test(self) -> int:
        """Rows held out for the test loss."""
        return self.n_samples - self.n_train

    @property
    def batches_per_epoch(self) -> int:
        """SGD steps per epoch, counting the short last batch."""
        return math.ceil(self.n_train / self.batch_size)

    @property
    def runs_engine(self) -> str:
        """The engine train() uses: the chosen one, but autograd whenever the
        labels stay attached."""
        return self.engine if self.detach else "autograd"

    def as_dict(self) -> dict:
        """The fields as a plain dict, in declaration order."""
        return asdict(self)

    def changes(self) -> dict:
        """The fields whose value differs from the default Config."""
        default = Config()
        return {k: v for k, v in self.as_dict().items() if getattr(default, k) != v}


def _check_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}={value!r} is not allowed: it must be a whole number "
                         f"from {BOUNDS[name][0]:g} to {BOUNDS[name][1]:g}")
    _check_range(name, value, *BOUNDS[name])


def _check_float(name: str, value) -> None:
    # An int is always finite (and math.isfinite overflows on a huge one).
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or (isinstance(value, float) and not math.isfinite(value))):
        raise ValueError(f"{name}={value!r} is not allowed: it must be a number "
                         f"from {BOUNDS[name][0]:g} to {BOUNDS[name][1]:g}")
    _check_range(name, value, *BOUNDS[name])


def _check_range(name: str, value, low, high, why: str = "") -> None:
    if not low <= value <= high:
        raise ValueError(f"{name}={value!r} is out of range: allowed {low:g} to {high:g}{why}")
