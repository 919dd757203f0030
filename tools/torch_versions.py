"""Run the explain tool's tests under other torch releases: one virtual environment per version.

    python -m tools.torch_versions 2.1.0 2.14.1 [--root DIR] [--install-only] [-- PYTEST ARGS]

Each venv sees this machine's packages (`--system-site-packages`: pytest, ipykernel,
Lightning...) and gets its own `torch==VERSION` from the package index, which shadows the
installed one; then `python -m pytest -n 0 tests/explain` runs in it. The page's torch stays
pinned: this checks only what `pip install .` claims (pyproject's `torch>=`). A release from
the index is a CUDA build (about 5 GB with its nvidia wheels); it imports and runs on CPU.
The venvs are kept under --root (default ~/.cache/fitlab/torch-versions) for the next run.
Prints one line per version: torch's own version string and pytest's summary line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import venv

ROOT = os.path.join(os.path.expanduser("~"), ".cache", "fitlab", "torch-versions")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_of(root: str, version: str) -> str:
    """The interpreter of the venv for torch `version`, made (and torch installed) if missing."""
    home = os.path.join(root, f"torch-{version}")
    python = os.path.join(home, "bin", "python")
    if not os.path.exists(python):
        venv.EnvBuilder(system_site_packages=True, with_pip=True).create(home)
    probe = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0 or not probe.stdout.strip().startswith(version):
        # The machine's constraints cap torch at the newest release on its index; a venv asks
        # for exactly one version, which the cap allows or refuses on its own.
        subprocess.run([python, "-m", "pip", "install", "-q", f"torch=={version}"], check=True)
    return python


def main(argv=None) -> int:
    """Make the venvs, run the tests in each; the exit status is the worst of pytest's."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("versions", nargs="+")
    parser.add_argument("--root", default=ROOT)
    parser.add_argument("--install-only", action="store_true")
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args, rest = parser.parse_args(argv[:cut]), argv[cut + 1:]
    worst = 0
    for version in args.versions:
        python = python_of(args.root, version)
        if args.install_only:
            continue
        found = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                               capture_output=True, text=True).stdout.strip()
        run = subprocess.run([python, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider",
                              *(rest or ["tests/explain"])], cwd=REPO, capture_output=True, text=True)
        lines = [ln for ln in run.stdout.splitlines() if ln.strip()]
        print(f"torch {found}: {lines[-1] if lines else run.stderr.strip()[-300:]}")
        if run.returncode:
            sys.stdout.write(run.stdout[-4000:])
        worst = max(worst, run.returncode)
    return worst


if __name__ == "__main__":
    sys.exit(main())
