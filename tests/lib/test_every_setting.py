"""Every declared setting is honoured everywhere: for each field of Config, a
changed value changes the autograd run, the fast engine and the sweep stack
compute that changed run, and the blog's script with those numbers, run with
python, prints it. The fields are fitlab.config.SETTINGS, so a new setting is
covered the day it is declared, and an engine that ignores it fails here.

A setting declared `same_numbers` (the engine) says how a run is computed,
not what: changing it must leave every engine's numbers where they were."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

import fitlab
from fitlab import Config
from fitlab.config import SETTINGS, Setting
from fitlab.failure.blog_script import blog_script

# Small enough for every engine in a moment; no value at a bound, so each
# setting can move either way.
BASE = Config(width=4, shared_repeats=2, lr=0.02, batch_size=4, epochs=3, n_samples=40, n_train=12,
              in_features=5, seed=3)


def changed(declared: Setting, base: Config = BASE) -> Config:
    """`base` with `declared`'s value moved to the nearest other value it may take."""
    now = getattr(base, declared.name)
    if declared.kind == "bool":
        candidates = [not now]
    elif declared.kind == "choice":
        candidates = [c for c in declared.choices if c != now]
    elif declared.stops:
        at = declared.stops.index(now)
        candidates = [*declared.stops[at + 1:at + 2], *declared.stops[max(at - 1, 0):at]]
    elif declared.kind == "int":
        candidates = [now + 1, now - 1]
    else:
        candidates = [now * 2, now / 2, sum(declared.bounds) / 2]
    for value in candidates:
        if value == now:
            continue
        try:
            return replace(base, **{declared.name: value})
        except ValueError:
            continue
    raise AssertionError(f"{declared.name} cannot move from {now!r} at {base}")


def on(engine: str, config: Config) -> Config:
    return replace(config, engine=engine)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-7)


def same_history(a, b) -> bool:
    return (list(a.epoch) == list(b.epoch)
            and all(close(x, y) for column in ("train_loss", "test_loss") for x, y in zip(a[column], b[column])))


def same_run(a, b) -> bool:
    """Whether two runs compute the same numbers, to the engines' tolerance
    (tests/lib/engines/test_engines.py), or fail with the same error."""
    if (a.error is None) != (b.error is None):
        return False
    if a.error is not None:
        return (a.error.message, a.error.epoch, a.error.batch) == (b.error.message, b.error.epoch, b.error.batch)
    return (same_history(a.history, b.history) and close(a.blog_test_loss, b.blog_test_loss)
            and list(a.student_params.parameter) == list(b.student_params.parameter)
            and np.allclose(a.student_params.value, b.student_params.value, rtol=1e-4, atol=1e-6))


FIELDS = list(SETTINGS)


def test_every_field_of_config_is_declared_and_moves():
    assert FIELDS == list(Config().as_dict())
    for declared in SETTINGS.values():
        assert getattr(changed(declared), declared.name) != getattr(BASE, declared.name)


@pytest.mark.parametrize("field", FIELDS)
def test_a_changed_setting_changes_the_autograd_run_and_the_fast_engine_agrees(field, trained):
    config = changed(SETTINGS[field])
    autograd, before = trained(on("autograd", config)), trained(on("autograd", BASE))
    assert autograd.engine == "autograd" and trained(config).engine == config.runs_engine
    if SETTINGS[field].same_numbers:
        assert same_run(trained(config), trained(BASE)), f"{field} changes the numbers"
    else:
        assert not same_run(autograd, before), f"autograd ignores {field}"
    fast = trained(on("fast", config))
    assert fast.engine == on("fast", config).runs_engine  # fast, but autograd for attached labels
    assert same_run(fast, autograd), f"the fast engine computes another run than autograd at {field}"


@pytest.mark.parametrize("field", FIELDS)
def test_the_sweep_stack_trains_the_changed_setting_as_train_does(field, trained):
    config = changed(SETTINGS[field])
    if not config.detach:  # a sweep runs the fast engine: it refuses attached labels, by name
        with pytest.raises(ValueError, match="^detach=False"):
            fitlab.sweep(config, lr=[config.lr])
        return
    # Two cells, so the stack holds more than the one run asked about.
    histories = fitlab.sweep(config, lr=[config.lr, 3 * config.lr])
    assert same_history(histories[config], trained(on("autograd", config)).history), f"the sweep ignores {field}"


# Runs each script as the main module, one after the other in one python
# (one import of torch for all), and prints what each printed and whether
# it raised (tests/lib/failure/test_blog_script.py holds such a batch to `python`).
_BATCH = """
import contextlib, io, json, runpy, sys, traceback
ran = []
for path in sys.argv[1:]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(path, run_name="__main__")
            failed = None
        except Exception as exc:
            failed = str(exc)
    ran.append(dict(stdout=out.getvalue(), failed=failed))
print(json.dumps(ran))
"""
_EPOCH = re.compile(r"^epoch \d+: train loss (\S+)$", re.MULTILINE)
_TEST = re.compile(r"^test loss (\S+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    """What the blog's script printed, by Config: BASE's and each field's change."""
    configs = [BASE, *(changed(s) for s in SETTINGS.values())]
    folder = tmp_path_factory.mktemp("every-setting")
    paths = []
    for i, config in enumerate(configs):
        paths.append(folder / f"blog{i}.py")
        paths[-1].write_text(blog_script(config))
    batch = subprocess.run([sys.executable, "-c", _BATCH, *map(str, paths)], cwd=folder, capture_output=True,
                           text=True, timeout=600, check=True)
    return dict(zip(configs, json.loads(batch.stdout)))


def script_matches(output: dict, run) -> bool:
    """Whether the script's output is `run`'s: the same error, or the same
    train loss per epoch and test figure."""
    if run.error is not None or output["failed"] is not None:
        return output["failed"] == (run.error and run.error.message)
    losses = [float(v) for v in _EPOCH.findall(output["stdout"])]
    figure = float(_TEST.search(output["stdout"])[1])
    return (len(losses) == len(run.history) - 1 and all(map(close, losses, run.history.train_loss[1:]))
            and close(figure, run.blog_test_loss))


@pytest.mark.slow  # the rendered scripts run with python
@pytest.mark.parametrize("field", FIELDS)
def test_the_blogs_script_with_your_numbers_prints_the_changed_run(field, printed, trained):
    config = changed(SETTINGS[field])
    output, before = printed[config], trained(on("autograd", BASE))
    assert script_matches(printed[BASE], before)
    assert script_matches(output, trained(on("autograd", config))), f"the script ignores {field}"
    if SETTINGS[field].same_numbers:  # the script is the reference computation, whatever the engine
        assert blog_script(config) == blog_script(BASE)
    else:
        assert not script_matches(output, before), f"the script prints the same at another {field}"
