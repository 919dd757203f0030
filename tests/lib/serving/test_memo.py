"""fitlab.serving.memo: at most so many values or so many bytes, the least
recently used (stored or found) forgotten first, a value alone over the bytes
not kept, and its count and bytes right under threads."""

from __future__ import annotations

import random
import threading
import time

from fitlab.serving.memo import Memo

KEYS, ROUNDS = 100, 300


def kept(memo: Memo, keys) -> list:
    """Which of `keys` the memo holds (each found, so now recently used)."""
    missing = object()
    return [k for k in keys if memo.get(k, missing) is not missing]


def test_a_count_bound_forgets_the_least_recently_used_first():
    memo = Memo(max_entries=3)
    for k in "abcd":
        memo.put(k, k.upper())
    assert len(memo) == 3 and memo.get("a") is None and memo.get("b") == "B"
    memo.put("e", "E")  # "b" was found: "c" is now the oldest
    assert kept(memo, "abcde") == ["b", "d", "e"]


def test_storing_a_key_again_replaces_its_value_and_makes_it_recent():
    memo = Memo(max_entries=2, max_bytes=100)
    memo.put("a", 1, 10)
    memo.put("b", 2, 20)
    memo.put("a", 3, 30)
    assert memo.nbytes == 50 and len(memo) == 2
    memo.put("c", 4, 5)  # "b" is the oldest now
    assert kept(memo, "abc") == ["a", "c"] and memo.get("a") == 3 and memo.nbytes == 35


def test_a_byte_bound_counts_the_given_sizes_and_forgets_until_under():
    memo = Memo(max_bytes=100)
    for k, size in zip("abcd", (40, 30, 20, 10)):
        memo.put(k, k, size)
    assert memo.nbytes == 100 and len(memo) == 4
    memo.get("a")
    memo.put("e", "e", 45)  # over by 45: "b" (30) and "c" (20) go, "a" was found
    assert kept(memo, "abcde") == ["a", "d", "e"] and memo.nbytes == 95


def test_a_value_over_the_byte_bound_is_not_kept_and_forgets_nothing():
    memo = Memo(max_bytes=100)
    memo.put("small", 1, 10)
    memo.put("huge", 2, 500)
    assert kept(memo, ["small", "huge"]) == ["small"] and memo.nbytes == 10


def test_both_bounds_hold_each_value_at_least_a_share_of_the_bytes():
    memo = Memo(max_entries=4, max_bytes=100)
    for k in range(6):
        memo.put(k, k, 1)  # tiny values: the count bounds them
    assert kept(memo, range(6)) == [2, 3, 4, 5] and memo.nbytes == 4
    memo.put("big", "big", 50)  # 50 + 4 × 25 > 100: the two least recent go
    assert kept(memo, [2, 3, 4, 5, "big"]) == [4, 5, "big"] and memo.nbytes == 52


def test_no_bound_keeps_everything_and_clear_forgets_it():
    memo = Memo()
    for k in range(1000):
        memo.put(k, k, 1)
    assert len(memo) == 1000 and memo.nbytes == 1000
    memo.clear()
    assert len(memo) == 0 and memo.nbytes == 0 and memo.get(0, "gone") == "gone"


def test_a_stored_none_is_found():
    memo = Memo(max_entries=1)
    memo.put("k", None)
    assert memo.get("k", "missing") is None


class Key(int):
    """A key whose every lookup lets other threads run (its hash sleeps), as a
    session's thread may lose the interpreter at any point of a get or a put."""

    def __hash__(self) -> int:
        time.sleep(0)
        return int.__hash__(self)


def test_many_threads_leave_the_bounds_and_the_bytes_right():
    """Sessions in threads finding and storing at once, each switching to
    another in the middle of every lookup: without the memo's lock, one
    forgets a key another is moving to the end or storing again (KeyError),
    or the bytes lose what one added or subtracted."""
    memo = Memo(max_entries=30, max_bytes=150)
    size = {k: 1 + k % 13 for k in range(KEYS)}
    errors, start = [], threading.Barrier(8)

    def session(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        try:
            for _ in range(ROUNDS):
                k = Key(rng.randrange(KEYS))
                found = memo.get(k)
                assert found is None or found == (k, size[k])
                if found is None:
                    memo.put(k, (k, size[k]), size[k])
        except Exception as error:  # noqa: BLE001 - reported below, by the test's thread
            errors.append(error)

    threads = [threading.Thread(target=session, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    held = kept(memo, range(KEYS))
    assert 0 < len(held) == len(memo) <= 30
    assert memo.nbytes == sum(size[k] for k in held) <= 150
