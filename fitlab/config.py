"""The settings of one run: what the user chooses, validated once, frozen.

Each setting is one line of Config, its declaration: its default and the
values it takes (bounds or choices, an upper bound set by another setting,
the stops a picker offers). Everything else reads the declarations from
SETTINGS: validation here, BOUNDS and CHOICES, the page's sidebar and share
links, the README's table of controls (tools.figures), and the test that
every engine honours every setting (tests/lib/test_every_setting.py).

What a setting is and takes is the library's; how the page words and
arranges it (its label, help, group and place in the sidebar) is the page's,
in ui/words.py, which has one entry per setting: the library never words
the page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields

# "fast": numpy by hand (fitlab.engines.numpy_run); "autograd": torch, the blog's way.
ENGINES = ("fast", "autograd")
_DECLARED = "fitlab.setting"  # the metadata key of a field's declaration


def one_two_five(low: int, high: int) -> tuple[float, ...]:
    """1, 2 and 5 × 10^k for k from `low` to `high`, and 10^(high + 1): a
    picker's stops over decades, each about twice the one before."""
    return (*(float(f"{m}e{k}") for k in range(low, high + 1) for m in (1, 2, 5)), float(f"1e{high + 1}"))


def setting(default, *, bounds=None, choices=(), at_most=None, why="", stops=(), same_numbers=False):
    """One Config field's declaration (see Setting for each argument)."""
    return field(default=default, metadata={_DECLARED: dict(
        bounds=bounds, choices=tuple(choices), at_most=at_most, why=why, stops=tuple(stops),
        same_numbers=same_numbers)})


@dataclass(frozen=True)
class Config:
    """One teacher–student run. The defaults are the blog's setup.

    Each line below declares one setting (`setting`): its default and what
    it takes; its comment says what it is.
    """

    # hidden units of every hidden layer; stops: every width up to 16, where a unit more or less
    # changes the fit, then roughly ×1.5 apart
    width: int = setting(5, bounds=(1, 256), stops=(*range(1, 17), 24, 32, 48, 64, 96, 128, 192, 256))
    shared_repeats: int = setting(2, bounds=(0, 8))  # times the one shared Linear(width, width) is used
    lr: float = setting(0.01, bounds=(1e-6, 10.0), stops=one_two_five(-6, 0))  # SGD learning rate
    batch_size: int = setting(5, bounds=(1, 10_000), at_most=("n_train", 0))  # rows per SGD step, the last maybe fewer
    detach: bool = setting(True)  # detach the labels from the teacher's graph (the blog's fix)
    tied: bool = setting(True)  # one shared layer in the student; False: a copy per use, from the same start
    epochs: int = setting(100, bounds=(1, 2000))  # passes over the training rows
    n_samples: int = setting(200, bounds=(2, 20_000))  # rows of X drawn in all; the first n_train train, the rest test
    n_train: int = setting(50, bounds=(1, 19_999), at_most=("n_samples", -1),  # training rows
                           why="at least one row must be left for the test set")
    in_features: int = setting(10, bounds=(1, 256))  # columns of X
    seed: int = setting(0, bounds=(0, 2**32 - 1))  # seed of the run's one torch.Generator
    # "fast" (numpy by hand) or "autograd" (torch, the reference), the same numbers either way;
    # detach=False always runs autograd, whose backward() is what raises the blog's error
    engine: str = setting("fast", choices=ENGINES, same_numbers=True)

    def __post_init__(self) -> None:
        for declared in SETTINGS.values():
            declared.check(getattr(self, declared.name))
        for declared in _DEPENDENT:
            declared.check_against(getattr(self, declared.name), vars(self))

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


@dataclass(frozen=True)
class Setting:
    """One Config field as its line declares it.

    name          the field
    kind          "int", "float", "bool" or "choice" (of strings)
    default       its value in the blog's setup
    bounds        (low, high), inclusive, of a number; None otherwise
    choices       the values of a choice; () otherwise
    at_most       (other, offset): a number is also at most the field
                  `other`'s value + offset (n_train ≤ n_samples − 1); or None
    why           why that bound holds, said when it refuses a value
    stops         the values a picker offers, where some matter more than
                  others (any value within bounds stays valid); or ()
    same_numbers  every value computes the same numbers: it says how the run
                  is computed, not what is computed
    """

    name: str
    kind: str
    default: object
    bounds: tuple | None = None
    choices: tuple = ()
    at_most: tuple[str, int] | None = None
    why: str = ""
    stops: tuple = ()
    same_numbers: bool = False

    def bounds_given(self, values: Mapping[str, object]) -> tuple:
        """(low, high) of this number when the other settings hold `values`
        (a mapping of field names, such as Config.as_dict())."""
        low, high = self.bounds
        if self.at_most is not None:
            other, offset = self.at_most
            high = min(high, values[other] + offset)
        return low, high

    def check(self, value) -> None:
        """Raise a ValueError naming the field, the value and what is allowed
        unless `value` is of this setting's kind and within its own bounds."""
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"{self.name}={value!r} is not allowed: it must be True or False")
        elif self.kind == "choice":
            if value not in self.choices:
                raise ValueError(f"{self.name}={value!r} is not allowed: it must be one of {self.choices}")
        else:
            low, high = self.bounds
            if not self._is_number(value):
                number = "a whole number" if self.kind == "int" else "a number"
                raise ValueError(f"{self.name}={value!r} is not allowed: it must be {number} "
                                 f"from {low:g} to {high:g}")
            _check_range(self.name, value, low, high)

    def _is_number(self, value) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind == "int":
            return isinstance(value, int)
        # An int is always finite (and math.isfinite overflows on a huge one).
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))

    def check_against(self, value, values: Mapping[str, object]) -> None:
        """Raise a ValueError unless `value` is within the bound another
        setting sets (at_most), the others holding `values`."""
        other = self.at_most[0]
        why = f": {self.why}" if self.why else ""
        _check_range(self.name, value, *self.bounds_given(values), why=f" with {other}={values[other]}{why}")


def _check_range(name: str, value, low, high, why: str = "") -> None:
    if not low <= value <= high:
        raise ValueError(f"{name}={value!r} is out of range: allowed {low:g} to {high:g}{why}")


def _kind(annotation: str) -> str:
    return {"str": "choice"}.get(annotation, annotation)


# Every setting's declaration, by field name, in Config's order.
SETTINGS: dict[str, Setting] = {
    f.name: Setting(f.name, _kind(f.type), f.default, **f.metadata[_DECLARED]) for f in fields(Config)}
# The inclusive bounds of each number (a bound set by another setting, at_most, comes on top).
BOUNDS: dict[str, tuple[float, float]] = {s.name: s.bounds for s in SETTINGS.values() if s.bounds is not None}
# The values each choice may take.
CHOICES: dict[str, tuple[str, ...]] = {s.name: s.choices for s in SETTINGS.values() if s.kind == "choice"}


def _depth(declared: Setting) -> int:
    return 0 if declared.at_most is None else 1 + _depth(SETTINGS[declared.at_most[0]])


# The bounds set by other settings, checked once every field is valid alone,
# a setting's own before the bounds it sets (n_train's before batch_size's).
_DEPENDENT = sorted((s for s in SETTINGS.values() if s.at_most is not None), key=_depth)
