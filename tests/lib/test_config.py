"""Config validation: every bad value names its field, the value and the range."""

import dataclasses
import hashlib

import pytest
from streamlit.runtime.caching.cache_type import CacheType
from streamlit.runtime.caching.hashing import update_hash

from fitlab import BOUNDS, Config
from fitlab.config import CHOICES, SETTINGS, Setting


def test_defaults_are_the_blogs_setup():
    c = Config()
    assert (c.width, c.shared_repeats, c.lr, c.batch_size, c.detach, c.epochs,
            c.n_samples, c.n_train, c.in_features, c.seed) == (5, 2, 0.01, 5, True, 100, 200, 50, 10, 0)
    assert c.n_test == 150 and c.batches_per_epoch == 10


@pytest.mark.parametrize("field", [f for f in BOUNDS if SETTINGS[f].at_most is None])
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


def test_every_field_is_declared_and_the_tables_are_made_from_the_declarations():
    config = Config()
    assert list(SETTINGS) == [f.name for f in dataclasses.fields(Config)]
    for name, declared in SETTINGS.items():
        assert declared.name == name and declared.default == getattr(config, name)
        assert declared.kind == {bool: "bool", int: "int", float: "float", str: "choice"}[type(declared.default)]
        assert (declared.bounds is not None) == (declared.kind in ("int", "float"))
        assert bool(declared.choices) == (declared.kind == "choice")
        assert all(declared.bounds[0] <= stop <= declared.bounds[1] for stop in declared.stops)
    assert BOUNDS == {n: s.bounds for n, s in SETTINGS.items() if s.bounds is not None}
    assert CHOICES == {"engine": ("fast", "autograd")}
    assert {n: s.at_most for n, s in SETTINGS.items() if s.at_most} == {
        "batch_size": ("n_train", 0), "n_train": ("n_samples", -1)}


def test_validation_is_by_kind_and_bounds_with_no_code_per_setting():
    declared = Setting("decay", "float", 0.0, bounds=(0.0, 1.0))
    declared.check(0.5)
    with pytest.raises(ValueError, match=r"^decay=2 is out of range: allowed 0 to 1$"):
        declared.check(2)
    with pytest.raises(ValueError, match=r"^decay='x' is not allowed: it must be a number from 0 to 1$"):
        declared.check("x")
    with pytest.raises(ValueError, match=r"^mode='c' is not allowed: it must be one of \('a', 'b'\)$"):
        Setting("mode", "choice", "a", choices=("a", "b")).check("c")


def test_a_bound_set_by_another_setting_follows_it():
    batch = SETTINGS["batch_size"]
    assert batch.bounds_given(Config(n_train=20).as_dict()) == (1, 20)
    assert batch.bounds_given(Config(n_samples=20_000, n_train=19_999).as_dict()) == (1, 10_000)
    assert SETTINGS["n_train"].bounds_given(Config().as_dict()) == (1, 199)
    # n_train's bound is checked before the batch's, which follows it.
    with pytest.raises(ValueError, match=r"^n_train=300 "):
        Config(n_train=300, batch_size=400)


def test_config_is_frozen_and_hashable_by_value():
    with pytest.raises(AttributeError):
        Config().width = 3
    assert hash(Config(width=7)) == hash(Config(width=7)) and Config(width=7) == Config(width=7)


def test_changes_lists_only_non_defaults():
    assert Config().changes() == {}
    assert Config(width=7, detach=False).changes() == {"width": 7, "detach": False}


# Runs are cached by Config: the server's RunCache by its == and hash (those
# of the tuple of its fields, in order), st.cache_data by a digest of
# dataclasses.asdict. The keys below were computed before the settings were
# declared as data (issue 31); a change of a field's name, order or type
# would change them, and a warm cache would miss.
PINNED_KEYS = [
    (Config(), (5, 2, 0.01, 5, True, True, 100, 200, 50, 10, 0, "fast"),
     "0e92ad5a1455887aa24f3b8b9e548e10"),
    (Config(width=48, lr=0.02, engine="autograd"), (48, 2, 0.02, 5, True, True, 100, 200, 50, 10, 0, "autograd"),
     "641f2cc248c8f636754c69ded473e966"),
    (Config(detach=False, tied=False, seed=2**32 - 1, n_samples=20000, n_train=19999, batch_size=64,
            in_features=3, epochs=7, shared_repeats=0),
     (5, 0, 0.01, 64, False, False, 7, 20000, 19999, 3, 4294967295, "fast"),
     "3f919d073961195ab3cd8dae41f81237"),
]


@pytest.mark.parametrize("config,values,digest", PINNED_KEYS, ids=["default", "wide", "extremes"])
def test_cache_keys_are_the_ones_made_before_the_settings_were_declared(config, values, digest):
    assert dataclasses.astuple(config) == values and hash(config) == hash(values)
    assert [type(v) for v in dataclasses.astuple(config)] == [type(v) for v in values]
    hasher = hashlib.new("md5")
    update_hash(config, hasher=hasher, cache_type=CacheType.DATA)
    assert hasher.hexdigest() == digest
