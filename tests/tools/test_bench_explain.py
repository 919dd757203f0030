"""tools.bench_explain runs the workloads it is given, and prints each one's ratios (the timing
itself is the bench's to measure, not a test's)."""

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # each starts a python that imports torch


def test_the_bench_runs_one_workload_and_prints_its_ratios():
    out = subprocess.run([sys.executable, "-m", "tools.bench_explain", "blog_net", "--rounds", "1", "--no-contents"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    [line] = [line for line in out.splitlines() if "ratio" in line]
    assert line.startswith("blog tiny net, 100 steps")
    ratio = r"\d+\.\d\d"
    assert re.search(rf"ratio +{ratio}x \(rounds {ratio}-{ratio}\).*bare {ratio}x.*anomaly mode {ratio}x", line), line


def test_an_unknown_workload_is_refused_by_name():
    run = subprocess.run([sys.executable, "-m", "tools.bench_explain", "resnet"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and "unknown workload 'resnet'" in run.stderr
