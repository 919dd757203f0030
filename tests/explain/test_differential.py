"""Do no harm: correct programs behave under fitlab.explain exactly as under python.

Each script of tests/explain/correct/ (and two fixtures that finish) runs as python runs it
and under the CLI, plain, with --fix and with --check-contents (which must find no changed
contents in a correct program; tests/explain/differential.py: each in a fork of one process that imported
torch and transformers once); exit status, stdout and stderr must be equal, stderr apart from
the tool's own report after it. The scripts print their final losses as float.hex(), so the
numbers are compared bit for bit: tiny random BERT and GPT-2 from transformers, writes to
views under no_grad (nn.Embedding(padding_idx=...)), loop/foreach/fused optimizers,
checkpointing, autocast on CPU, torch.compile, DataLoader workers, DistributedDataParallel,
warnings and an exit code.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow  # two processes, each forking one child per script

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORRECT = sorted((HERE / "correct").glob("*.py"))
# Fixtures that finish: the tool adds a silent-write report to stderr, nothing else.
FINISHING = [HERE / "scripts" / "gan_fused.py", HERE / "scripts" / "finishes_silent.py"]
SCRIPTS = CORRECT + FINISHING
TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def _transformers_runs() -> bool:
    # transformers 5 needs torch>=2.6 and imports as stubs below it; tools/torch_versions.py puts
    # an older transformers beside an older torch, so that its models run there too.
    from transformers.utils import is_torch_available
    return is_torch_available()


# Scripts using what an older torch lacks (tools/torch_versions.py runs the tests on each release):
# whether this one has it, and what.
NEEDS = {"amp_cpu": (lambda: TORCH >= (2, 3), "torch.amp.GradScaler('cpu')"),
         "gan_fused": (lambda: TORCH >= (2, 4), "a fused Adam on CPU"),
         "bert_tiny": (_transformers_runs, "a transformers whose models run on it"),
         "gpt2_tiny": (_transformers_runs, "a transformers whose models run on it")}


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    """{side: folder of NAME.out/.err/.rc}: the sides run at once, one process each."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out, procs = {}, []
    for side in ("python", "explain", "fix", "contents"):
        out[side] = tmp_path_factory.mktemp(side)
        procs.append(subprocess.Popen([sys.executable, str(HERE / "differential.py"), side, str(out[side]),
                                       *map(str, SCRIPTS)], cwd=ROOT, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        stdout, stderr = p.communicate(timeout=900)
        assert p.returncode == 0, stderr
    return out


def _read(folder: Path, script: Path, ext: str) -> str:
    return (folder / (script.stem + ext)).read_text()


@pytest.mark.parametrize("side", ["explain", "fix", "contents"])
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_same_exit_status_output_and_numbers(sides, script, side):
    needs = NEEDS.get(script.stem)
    if needs is not None and not needs[0]():
        pytest.skip(f"torch {torch.__version__} lacks {needs[1]}")
    py, ex = sides["python"], sides[side]
    assert _read(ex, script, ".rc") == _read(py, script, ".rc")
    assert _read(ex, script, ".out") == _read(py, script, ".out")
    err_py, err_ex = _read(py, script, ".err"), _read(ex, script, ".err")
    assert err_ex.startswith(err_py), (err_py, err_ex)
    report = err_ex[len(err_py):]
    if script in FINISHING:
        assert report.startswith("Silent writes (no error, but backward used the overwritten values):\n")
    else:
        assert report == ""
    if side == "contents":  # the content check adds nothing to what the plain run reports
        assert err_ex == _read(sides["explain"], script, ".err")


def test_the_corpus_prints_numbers_that_would_differ():
    # The comparison is only as strong as what the scripts print: every one prints a loss or grad
    # as float.hex() (bit for bit), the optimizers' script one per implementation.
    for script in CORRECT:
        assert ".hex()" in script.read_text(), script.name
