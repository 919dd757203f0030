"""tools.bench_blas chooses the threshold by the timings it is given (made up
here; the bench measures), and the report's last line is machine-readable."""

from tools.bench_blas import choose, report, total_seconds

# (width, rows, multiply-adds, sgemm s, matmul s): sgemm wins small, matmul large.
RESULTS = [(5, 5, 150, 1e-6, 2e-6), (64, 5, 20_800, 1.2e-6, 2.8e-6),
           (128, 50, 825_600, 21e-6, 22e-6), (256, 20, 1_315_840, 70e-6, 52e-6),
           (256, 200, 13_158_400, 315e-6, 290e-6)]


def test_the_threshold_chosen_is_the_size_with_the_least_total_time():
    assert choose(RESULTS) == 1_315_840
    assert total_seconds(RESULTS, 1_315_840) < total_seconds(RESULTS, 825_600)
    assert total_seconds(RESULTS, 1_315_840) < total_seconds(RESULTS, 13_158_401)   # all sgemm


def test_when_sgemm_wins_everywhere_no_product_goes_to_matmul():
    results = [(w, r, n, ts, ts * 2) for w, r, n, ts, _ in RESULTS]
    assert choose(results) == 13_158_401


def test_the_report_ends_with_the_chosen_and_the_set_threshold():
    last = report(RESULTS, rounds=5).splitlines()[-1]
    assert last == "crossover chosen=1315840 set=1048576"
