"""The blog's script rendered from a Config, run with `python` as the blog's reader runs it,
fails exactly as fitlab.train says, or trains to fitlab's and the blog loop's losses."""

import ast
import json
import math
import re
import subprocess
import sys

import pytest

from fitlab import Config
from fitlab.failure.blog_script import blog_script

_EPOCH = re.compile(r"^epoch (\d+): train loss (\S+)$", re.MULTILINE)


def run_python(script: str, tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "blog.py"
    path.write_text(script)
    return subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)


# Runs each script given as the main module, one after the other in one
# python (one import of torch for them all, ~2 s each otherwise), and prints
# what `python SCRIPT` would have: the exit status, the output, the traceback.
# test_a_script_ends_in_the_batch_as_with_python holds it to the real thing.
_BATCH = """
import contextlib, io, json, runpy, sys, traceback
ran = []
for path in sys.argv[1:]:
    out, err, status = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(path, run_name="__main__")
        except Exception:
            traceback.print_exc()
            status = 1
    ran.append(dict(returncode=status, stdout=out.getvalue(), stderr=err.getvalue()))
print(json.dumps(ran))
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """What each script of this module's configs did, run in one batch."""
    folder = tmp_path_factory.mktemp("blog-scripts")
    scripts = [blog_script(c) for c in [*(Config(detach=False, **o) for o in FAILING),
                                        *(Config(engine="autograd", **o) for o in TRAINING), UNTIED]]
    paths = []
    for i, script in enumerate(scripts):
        paths.append(folder / f"blog{i}.py")
        paths[-1].write_text(script)
    batch = subprocess.run([sys.executable, "-c", _BATCH, *map(str, paths)], cwd=folder, capture_output=True,
                           text=True, timeout=900, check=True)
    return {script: subprocess.CompletedProcess([], **result)
            for script, result in zip(scripts, json.loads(batch.stdout))}


FAILING = [
    dict(),
    dict(width=7, shared_repeats=3, seed=4),
    dict(shared_repeats=0, width=3),
    dict(shared_repeats=8, batch_size=1, lr=0.5),
    dict(tied=False, width=6, n_train=20, batch_size=7),
]


@pytest.mark.slow  # the rendered scripts run with python
@pytest.mark.parametrize("overrides", FAILING, ids=str)
def test_undetached_script_fails_as_fitlab_says(overrides, ran, trained):
    config = Config(detach=False, **overrides)
    proc = ran[blog_script(config)]
    assert proc.returncode == 1
    expected = trained(config).error
    assert proc.stderr.rstrip("\n").splitlines()[-1] == f"{expected.type}: {expected.message}"
    assert "loss.backward()" in proc.stderr and not _EPOCH.search(proc.stdout)


TRAINING = [
    dict(),
    dict(seed=11, batch_size=7, n_train=40, epochs=30, width=4),
    dict(seed=7, shared_repeats=0, epochs=20),
    dict(seed=2, lr=0.05, in_features=4, n_samples=60, n_train=33, batch_size=8, epochs=15),
]


def printed_losses(stdout: str) -> list:
    found = _EPOCH.findall(stdout)
    assert [int(e) for e, _ in found] == list(range(1, len(found) + 1))
    return [float(v) for _, v in found]


def assert_close(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-7), (a, b)


@pytest.mark.slow  # the rendered scripts run with python
@pytest.mark.parametrize("overrides", TRAINING, ids=str)
def test_detached_script_prints_fitlabs_and_the_blog_loops_losses(overrides, ran, trained, blog_loop):
    config = Config(engine="autograd", **overrides)
    proc = ran[blog_script(config)]
    assert proc.returncode == 0, proc.stderr
    losses = printed_losses(proc.stdout)
    assert len(losses) == config.epochs
    assert_close(losses, list(trained(config).history.train_loss[1:]))
    blog = blog_loop(**overrides)
    assert blog.error is None
    assert_close(losses, blog.losses)
    assert re.search(r"^test loss \S+$", proc.stdout, re.MULTILINE)


UNTIED = Config(engine="autograd", tied=False, shared_repeats=3, width=4, epochs=25, lr=0.05)


@pytest.mark.slow  # the rendered scripts run with python
def test_untied_script_trains_as_fitlabs_untied_student(ran, trained):
    config = UNTIED
    proc = ran[blog_script(config)]
    assert proc.returncode == 0, proc.stderr
    losses = printed_losses(proc.stdout)
    assert_close(losses, list(trained(config).history.train_loss[1:]))
    tied = trained(Config(engine="autograd", shared_repeats=3, width=4, epochs=25, lr=0.05))
    assert losses[-1] != pytest.approx(tied.history.train_loss.iloc[-1], rel=1e-6)


@pytest.mark.slow  # the rendered scripts run with python
@pytest.mark.parametrize("config", [Config(detach=False), Config(engine="autograd")], ids=["fails", "trains"])
def test_a_script_ends_in_the_batch_as_with_python(config, ran, tmp_path):
    alone, batched = run_python(blog_script(config), tmp_path), ran[blog_script(config)]
    assert alone.returncode == batched.returncode == (0 if config.detach else 1), alone.stderr
    assert alone.stdout == batched.stdout
    assert alone.stderr.splitlines()[-1:] == batched.stderr.splitlines()[-1:]
    assert ("loss.backward()" in alone.stderr) == ("loss.backward()" in batched.stderr) == (not config.detach)


@pytest.mark.parametrize("repeats", [0, 1, 8])
def test_the_net_uses_the_shared_layer_once_per_repeat(repeats):
    script = blog_script(Config(shared_repeats=repeats, width=9, in_features=3))
    tree = ast.parse(script)
    net = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "net")
    names = [ast.unparse(a) for a in net.args]
    assert names.count("shared") == repeats
    assert names[0] == "nn.Linear(3, 9)" and names[-1] == "nn.Linear(9, 1)"
    assert len(names) == 2 * repeats + 3


def test_only_config_numbers_reach_the_text():
    # Every literal of the script is the template's own or one of these numbers.
    config = Config(width=3, shared_repeats=1, lr=1e-6, batch_size=7, epochs=2000, n_samples=20_000,
                    n_train=19_999, in_features=256, seed=2**32 - 1, detach=False)
    script = blog_script(config)
    numbers = {n.value for n in ast.walk(ast.parse(script)) if isinstance(n, ast.Constant)
               and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)}
    assert numbers == {1, 3, 1e-6, 7, 2000, 20_000, 19_999, 256, 2**32 - 1}
    assert "import copy" not in script and ".detach()" not in script.split("def get_label")[1].split("\n")[2]
