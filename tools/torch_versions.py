"""Run the explain tool's tests under other torch releases: one virtual environment per release.

    python -m tools.torch_versions 2.1.2 2.14.1 [--root DIR] [--drop] [-- PYTEST ARGS]
    python -m tools.torch_versions --range [--drop]      # every minor release, lowest, newest, then between

Each venv sees this machine's packages (`--system-site-packages`: pytest, libcst, Lightning...)
and gets its own `torch==RELEASE` (pip --no-cache-dir), which shadows the installed one (the
table's torch column is the venv's own `torch.__version__`); a torch built against NumPy 1 gets
`numpy<2` beside it, and a torch older than transformers 5 allows (2.6) an older transformers.
Then `python -m pytest -n 0 tests/explain/test_explain.py tests/explain/test_causes.py
tests/explain/test_differential.py` runs in it: the scripts, the causes and the
differential corpus of correct programs. Before them, `pip install --dry-run .` in the venv says
whether installing fitlab there would touch its torch. A release from the index is a CUDA build
(4-7 GB with its nvidia wheels); it runs on CPU. With --drop, each venv but the lowest and the
newest release given is deleted after its run (the disk holds about 80 GB). Prints a Markdown
table, one row per release: its torch, the paths compat.py chose (fitlab/explain/compat.py), what
`pip install .` would do, pytest's summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv

ROOT = os.path.join(os.path.expanduser("~"), ".cache", "fitlab", "torch-versions")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The newest patch of each minor release from the oldest fitlab.explain supports.
RANGE = ("2.1.2", "2.2.2", "2.3.1", "2.4.1", "2.5.1", "2.6.0", "2.7.1", "2.8.0", "2.9.1", "2.10.0",
         "2.11.0", "2.12.1", "2.13.0", "2.14.1")
TESTS = ["tests/explain/test_explain.py", "tests/explain/test_causes.py", "tests/explain/test_differential.py"]
_PROBE = "import torch; print(torch.__version__)"
_NUMPY = "import numpy, torch; torch.from_numpy(numpy.zeros(1))"
_PATHS = "from fitlab.explain import compat; print(compat.path_line())"
_TRANSFORMERS = "from transformers.utils import is_torch_available; assert is_torch_available()"
# transformers 5 needs torch>=2.6 (below it its models are stubs); this one runs the corpus's BERT
# and GPT-2 from torch 2.1 on.
OLD_TRANSFORMERS = "transformers==4.46.3"


def _ask(python: str, code: str) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=REPO)


def python_of(root: str, release: str) -> str:
    """The interpreter of the venv for torch `release`, made (and torch installed) if missing."""
    home = os.path.join(root, f"torch-{release}")
    python = os.path.join(home, "bin", "python")
    if not os.path.exists(python):
        venv.EnvBuilder(system_site_packages=True, with_pip=True).create(home)
    probe = _ask(python, _PROBE)
    if probe.returncode != 0 or not probe.stdout.strip().startswith(release):
        # The machine's constraints cap torch at the newest release on its index; a venv asks
        # for exactly one release, which the cap allows or refuses on its own.
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-cache-dir", f"torch=={release}"], check=True)
    if _ask(python, _TRANSFORMERS).returncode != 0:
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-cache-dir", OLD_TRANSFORMERS], check=True)
    if _ask(python, _NUMPY).returncode != 0:  # built against NumPy 1: "Numpy is not available"
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-cache-dir", "numpy<2"], check=True)
    return python


def pip_install(python: str) -> str:
    """What `pip install .` would do to the venv's torch: "keeps torch", or what it would install."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        run = subprocess.run([python, "-m", "pip", "install", "--dry-run", "-q", "--no-cache-dir",
                              "--report", report, "."], cwd=REPO, capture_output=True, text=True)
        if run.returncode != 0:
            return "fails: " + run.stderr.strip()[-200:]
        with open(report) as f:
            wanted = [f"{item['metadata']['name']} {item['metadata']['version']}" for item in json.load(f)["install"]]
    torch = [w for w in wanted if w.split()[0].lower() == "torch"]
    return "would install " + ", ".join(torch) if torch else "keeps torch"


def row(python: str, rest: list) -> tuple:
    """(torch's version, compat's paths, `pip install .`'s effect, pytest's summary, exit status, output)."""
    found = _ask(python, _PROBE).stdout.strip()
    paths = _ask(python, _PATHS)
    install = pip_install(python)
    run = subprocess.run([python, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", "--noconftest",
                          *(rest or TESTS)], cwd=REPO, capture_output=True, text=True)
    lines = [ln for ln in run.stdout.splitlines() if ln.strip()]
    summary = lines[-1].strip("= ") if lines else run.stderr.strip()[-300:]
    return found, paths.stdout.strip() or paths.stderr.strip()[-200:], install, summary, run.returncode, run.stdout


def main(argv=None) -> int:
    """Make the venvs, run the tests in each, print the table; the exit status is the worst of pytest's."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("releases", nargs="*")
    parser.add_argument("--range", action="store_true", help="every release of RANGE: lowest, newest, then between")
    parser.add_argument("--root", default=ROOT)
    parser.add_argument("--drop", action="store_true", help="delete each venv after its run but the lowest and newest")
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args, rest = parser.parse_args(argv[:cut]), argv[cut + 1:]
    releases = list(args.releases) or []
    if args.range:
        releases += [RANGE[0], RANGE[-1], *RANGE[1:-1]]
    ordered = sorted(releases, key=lambda r: tuple(int(part) for part in r.split(".")))
    keep = {ordered[0], ordered[-1]} if releases else set()
    worst = 0
    print("| release | torch | paths (fitlab/explain/compat.py) | `pip install .` | pytest |\n|---|---|---|---|---|",
          flush=True)
    for release in releases:
        python = python_of(args.root, release)
        found, paths, install, summary, code, out = row(python, rest)
        print(f"| {release} | {found} | {paths} | {install} | {summary} |", flush=True)
        if install != "keeps torch":
            code = max(code, 1)
        if code:
            sys.stderr.write(out[-4000:])
        worst = max(worst, code)
        if args.drop and release not in keep:
            shutil.rmtree(os.path.join(args.root, f"torch-{release}"), ignore_errors=True)
    return worst


if __name__ == "__main__":
    sys.exit(main())
