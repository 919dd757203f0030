"""stack.capture reuses the callers of the last capture; it must give what a full walk gives."""

import sys
import threading

from fitlab.explain import stack as stacks


def _walked(skip: int) -> tuple:
    f, out = sys._getframe(skip), []
    while f is not None and len(out) < stacks.MAX_DEPTH:
        out.append((f.f_code, f.f_lasti))
        f = f.f_back
    return tuple(out)


def test_capture_is_a_full_walk_across_loops_recursion_generators_and_threads():
    seen = []

    def check():
        seen.append(stacks.capture(2) == _walked(2))

    def gen():
        for _ in range(50):
            check()
            yield

    def deep(k):  # past MAX_DEPTH, back, and in between
        check()
        if k:
            deep(k - 1)
            check()

    def resume(g):  # the generator resumed under another caller
        check()
        next(g, None)

    def resume_quietly(g):  # ... with no capture between its last one and its next
        next(g, None)

    def program():
        g = gen()
        for depth in (3, 120, 0, 40, 97):
            check()
            next(g, None)
            deep(depth)
            [check() for _ in range(2)]
        resume(g)
        resume_quietly(g)
        next(g, None)
        resume_quietly(g)
        stacks.forget()
        check()

    program()
    threads = [threading.Thread(target=program) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) > 1000 and all(seen)
