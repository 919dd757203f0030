"""Config validation: every bad value names its field, the value and the range."""

import pytest

from fitlab import BOUNDS, Config


def test_defaults_are_the_blogs_setup():
    c = Config()
    assert (c.width, c.shared_repeats, c.lr, c.batch_size, c.detach, c.epochs,
            c.n_samples, c.n_train, c.in_features, c.seed) == (5, 2, 0.01, 5, True, 100, 200, 50, 10, 0)
    assert c.n_test == 150 and c.batches_per_epoch == 10


@pytest.mark.parametrize("field", [f for f in BOUNDS if f not in ("batch_size", "n_train")])
def test_each_bound_is_inclusive_and_enforced(field):
    low, high = BOUNDS[field]
    is_int = isinstance(getattr(Config(), field), int)
    for ok in (low, high):
        value = int(ok) if is_int else ok
        extra = {"n_samples": max(value, 51)} if field == "n_samples" else {}
        if field == "n_samples" and value < 51:
            extra = {"n_samples": value, "n_train": 1, "batch_size": 1}
        if field == "epochs":  # one batch per epoch keeps 2000 epochs in the work budget
            extra = {"batch_size": Config().n_train}
        Config(**{field: value, **extra})
    for bad in (low - 1, high + 1):
        bad = int(bad) if is_int else bad
        with pytest.raises(ValueError) as info:
            Config(**{field: bad})
        text = str(info.value)
        assert text.startswith(f"{field}=") and repr(bad) in text
        assert f"{low:g}" in text and f"{high:g}" in text


@pytest.mark.parametrize("field,value", [
    ("width", 2.5), ("width", "5"), ("epochs", True), ("lr", float("nan")),
    ("lr", float("inf")), ("lr", "0.1"), ("detach", 1), ("tied", "yes"), ("seed", None),
])
def test_wrong_types_are_value_errors_naming_the_field(field, value):
    with pytest.raises(ValueError, match=f"^{field}="):
        Config(**{field: value})


def test_batch_size_is_bounded_by_n_train():
    Config(n_train=20, batch_size=20)
    with pytest.raises(ValueError, match=r"batch_size=21 is out of range: allowed 1 to 20"):
        Config(n_train=20, batch_size=21)


def test_n_train_leaves_a_test_row():
    Config(n_samples=200, n_train=199)
    with pytest.raises(ValueError, match=r"n_train=200 is out of range: allowed 1 to 199"):
        Config(n_train=200)


def test_config_is_frozen_and_hashable_by_value():
    with pytest.raises(AttributeError):
        Config().width = 3
    assert hash(Config(width=7)) == hash(Config(width=7)) and Config(width=7) == Config(width=7)


def test_changes_lists_only_non_defaults():
    assert Config().changes() == {}
    assert Config(width=7, detach=False).changes() == {"width": 7, "detach": False}
