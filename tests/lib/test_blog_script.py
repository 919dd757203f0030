"""The blog's script rendered from a Config, run with `python` as the blog's reader runs it,
fails exactly as fitlab.train says, or trains to fitlab's and the blog loop's losses."""

import ast
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


FAILING = [
    dict(),
    dict(width=7, shared_repeats=3, seed=4),
    dict(shared_repeats=0, width=3),
    dict(shared_repeats=8, batch_size=1, lr=0.5),
    dict(tied=False, width=6, n_train=20, batch_size=7),
]


@pytest.mark.parametrize("overrides", FAILING, ids=str)
def test_undetached_script_fails_as_fitlab_says(overrides, tmp_path, trained):
    config = Config(detach=False, **overrides)
    proc = run_python(blog_script(config), tmp_path)
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


@pytest.mark.parametrize("overrides", TRAINING, ids=str)
def test_detached_script_prints_fitlabs_and_the_blog_loops_losses(overrides, tmp_path, trained, blog_loop):
    config = Config(engine="autograd", **overrides)
    proc = run_python(blog_script(config), tmp_path)
    assert proc.returncode == 0, proc.stderr
    losses = printed_losses(proc.stdout)
    assert len(losses) == config.epochs
    assert_close(losses, list(trained(config).history.train_loss[1:]))
    blog = blog_loop(**overrides)
    assert blog.error is None
    assert_close(losses, blog.losses)
    assert re.search(r"^test loss \S+$", proc.stdout, re.MULTILINE)


def test_untied_script_trains_as_fitlabs_untied_student(tmp_path, trained):
    config = Config(engine="autograd", tied=False, shared_repeats=3, width=4, epochs=25, lr=0.05)
    proc = run_python(blog_script(config), tmp_path)
    assert proc.returncode == 0, proc.stderr
    losses = printed_losses(proc.stdout)
    assert_close(losses, list(trained(config).history.train_loss[1:]))
    tied = trained(Config(engine="autograd", shared_repeats=3, width=4, epochs=25, lr=0.05))
    assert losses[-1] != pytest.approx(tied.history.train_loss.iloc[-1], rel=1e-6)


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
