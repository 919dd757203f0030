"""The server's heavy jobs, a few at a time: a bounded, fair, thread-safe gate.

Training, a sweep, the fix gallery, a replay: each keeps a core busy for
seconds. Let every session start one at once and they all crawl (two cores
shared by dozens of threads), memory grows with them, and nobody finishes
sooner. `JobGate` lets `slots` jobs run at once; the others wait their turn
in arrival order, and learn their place in line while they wait. At most
`max_waiting` may wait; one more is turned away (`ServerBusy`) instead of
joining an unbounded pile of threads.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Place:
    """Where a waiting job stands.

    ahead    jobs before it in the line
    running  jobs running now (as many as the gate has slots, while it waits)
    """

    ahead: int
    running: int


class ServerBusy(RuntimeError):
    """The line is full: the job was not queued."""

    def __init__(self, waiting: int):
        self.waiting = waiting
        super().__init__(f"{waiting} jobs are already waiting; try again in a minute")


class JobGate:
    """At most `slots` jobs at once, first come first served, at most
    `max_waiting` in line."""

    def __init__(self, slots: int = 2, max_waiting: int = 32):
        if slots < 1 or max_waiting < 0:
            raise ValueError(f"slots={slots}, max_waiting={max_waiting}: need slots ≥ 1, max_waiting ≥ 0")
        self.slots, self.max_waiting = slots, max_waiting
        self._running = 0
        self._line: deque[object] = deque()
        self._changed = threading.Condition()

    @property
    def running(self) -> int:
        """Jobs holding a slot now."""
        with self._changed:
            return self._running

    @property
    def waiting(self) -> int:
        """Jobs in line now."""
        with self._changed:
            return len(self._line)

    @contextmanager
    def slot(self, on_wait: Callable[[Place], None] | None = None) -> Iterator[None]:
        """Hold one of the slots for the `with` block, waiting in line for
        it if all are taken. `on_wait(place)` is called (outside the gate's
        lock, in the waiting thread) when the job has to wait and each time
        its place changes. Raises ServerBusy if the line is full. A wait cut
        short by an exception (from on_wait, say) leaves the line cleanly."""
        ticket = object()
        with self._changed:
            if self._running < self.slots and not self._line:
                self._running += 1
                ticket = None
            elif len(self._line) >= self.max_waiting:
                raise ServerBusy(len(self._line))
            else:
                self._line.append(ticket)
        if ticket is not None:
            self._wait_for_turn(ticket, on_wait)
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

    def _wait_for_turn(self, ticket: object, on_wait: Callable[[Place], None] | None) -> None:
        told = None
        try:
            while True:
                with self._changed:
                    while True:
                        ahead = self._line.index(ticket)
                        if ahead == 0 and self._running < self.slots:
                            self._line.popleft()
                            self._running += 1
                            self._changed.notify_all()  # the next in line moved up
                            return
                        place = Place(ahead, self._running)
                        if place != told:
                            break
                        self._changed.wait()
                if on_wait is not None:
                    on_wait(place)
                told = place
        except BaseException:
            with self._changed:
                if ticket in self._line:
                    self._line.remove(ticket)
                    self._changed.notify_all()
            raise

    def run(self, func: Callable, *args, on_wait: Callable[[Place], None] | None = None, **kwargs):
        """func(*args, **kwargs) in a slot (see `slot`)."""
        with self.slot(on_wait):
            return func(*args, **kwargs)
