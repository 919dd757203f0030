"""The bench's report: its table, the targets it says are met, and its
machine-readable last line (timings are made up here; the bench measures)."""

import time

from tools.bench import CASES, CLOCKS, report, seconds


def medians(fast_ms):
    """Blog loop 300 ms for every case, the fast engine as given."""
    return {name: {"blog": 0.3, "autograd": 0.3, "fast": fast_ms.get(name, 0.01)} for name in CASES}


def test_the_report_says_which_targets_are_met_and_ends_machine_readable():
    text = report(medians({"default": 0.0125, "width 256": 0.2}), sweep_seconds=0.0015, rounds=5)
    lines = text.splitlines()
    assert lines[-1] == "speedup default=24.0 width256=1.5 sweep64=200"
    assert "- default ≥ 20×: 24.0× met" in lines
    assert "- width 256 ≥ 3×: 1.5× MISSED" in lines
    assert "- sweep of 64 configs ≥ 150× per config: 200.0× met" in lines
    assert "- no config slower than the blog's loop (slowest: width 256): 1.5× met" in lines


def test_a_config_slower_than_the_blog_loop_is_reported_missed():
    text = report(medians({"default": 0.02, "epochs 1000": 0.6}), sweep_seconds=0.01, rounds=5)
    assert "- default ≥ 20×: 15.0× MISSED" in text
    assert "- no config slower than the blog's loop (slowest: epochs 1000): 0.5× MISSED" in text
    assert "- sweep of 64 configs ≥ 150× per config: 30.0× MISSED" in text


def test_the_recording_table_measures_the_watch_views_real_specs(monkeypatch):
    import fitlab
    from tools import bench

    config = fitlab.Config(epochs=3)
    monkeypatch.setattr(bench, "RECORDING_CASES", {"tiny": config})
    row = bench.recording_report(1).splitlines()[-1]
    frames = fitlab.train(config).frames
    assert row.startswith(f"| tiny | {len(frames.epochs)} | {frames.nbytes / 1e6:.2f} MB |"), row
    assert "specs " in row and " kB + data " in row


def test_the_cpu_clock_counts_the_threads_work_not_its_waiting():
    def wait_then_work():
        time.sleep(0.3)
        sum(range(200_000))

    assert seconds(wait_then_work, CLOCKS["wall"]) >= 0.3
    assert seconds(wait_then_work, CLOCKS["cpu"]) < 0.3


def test_the_report_names_its_clock():
    assert report(medians({}), sweep_seconds=0.001, rounds=5, clock="cpu").startswith(
        "tools.bench: median of 5 interleaved rounds, cpu time;")
