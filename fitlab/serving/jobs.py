"""The server's costly work, a few at once, through one fair scheduler, `JobGate`.
The page keeps two (ui/state.py): for heavy jobs (training, a sweep, the fix
gallery, a replay: all at once, they all crawl) and for page draws (forty at
once queue on Streamlit's config lock, and nobody hears anything for seconds).

A gate runs `slots` at once, and at most `max_waiting` wait (None: any number). A
freed slot is handed to the waiting job with the highest response ratio, (waited +
estimate) / estimate, `estimate` its expected seconds: a small job passes big ones,
and a waiting job's ratio grows, so none starves; equal ratios go in arrival order.
Only that job wakes, not 200 page runs waiting to draw. A full line turns away its
biggest job for a smaller newcomer, or the newcomer (`ServerBusy`). A session
(`owner`) has one job in line: a new one takes the place and the waited time of its
waiting one (`Replaced`), also within `REJOIN_SECONDS` of its wait being cut short
(Streamlit stops a waiting page run to rerun it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

SHORTEST_ESTIMATE = 0.05  # seconds: a ratio's divisor is never smaller
REJOIN_SECONDS = 10.0  # how long an owner's wait cut short is remembered


class ServerBusy(RuntimeError):
    """The line is full: the job was not queued."""

    def __init__(self, waiting: int):
        self.waiting = waiting
        super().__init__(f"{waiting} jobs are already waiting; try again in a minute")


class Replaced(RuntimeError):
    """A newer job of the same owner took this waiting job's place in line."""


@dataclass(eq=False)  # each ticket is itself, whatever its fields
class Ticket:
    """A job's claim on a slot (JobGate.acquire)."""

    owner: Hashable | None
    estimate: float
    since: float  # when its owner's job first joined the line (kept by a replacement)
    turn: threading.Condition  # on the gate's lock: notified when it has the slot, or is out
    holds: bool = False
    out: RuntimeError | None = None  # raised in its thread: Replaced, or ServerBusy (a smaller newcomer came)

    def rank(self, now: float) -> tuple[float, float]:
        """Its response ratio at `now`, then its arrival: the highest goes first."""
        return (now - self.since + self.estimate) / self.estimate, -self.since


class JobGate:
    """A few jobs at once, the rest in line, fairly (see the module's docstring)."""

    def __init__(self, slots: int = 2, max_waiting: int | None = 32, refresh: float = 1.0):
        if slots < 1 or (max_waiting or 0) < 0 or refresh <= 0:
            raise ValueError(f"slots={slots}, max_waiting={max_waiting}, refresh={refresh}: "
                             "need slots ≥ 1, max_waiting ≥ 0, refresh > 0")
        self.slots, self.max_waiting, self.refresh = slots, max_waiting, refresh
        self._running = 0
        self._line: list[Ticket] = []
        self._left: dict[Hashable, tuple[float, float]] = {}  # owner: (since, left at)
        self._lock = threading.Lock()

    @contextmanager
    def slot(self, on_wait: Callable[[int], None] | None = None, owner: Hashable | None = None,
             estimate: float = 1.0) -> Iterator[None]:
        """Hold a slot for the `with` block (acquire, then release)."""
        self.acquire(on_wait, owner, estimate)
        try:
            yield
        finally:
            self.release()

    def acquire(self, on_wait: Callable[[int], None] | None = None, owner: Hashable | None = None,
                estimate: float = 1.0) -> Ticket:
        """Take a slot, waiting in line if all are taken; release() gives it back.
        `on_wait(ahead)`, the jobs before it in line (all slots are held while it
        waits), is called in the waiting thread, outside the gate's lock, as the job
        joins and every `refresh` seconds; an exception from it leaves the line
        cleanly. Raises ServerBusy or Replaced."""
        ticket = self._join(owner, max(float(estimate), SHORTEST_ESTIMATE))
        self._wait_for_turn(ticket, on_wait)
        return ticket

    def release(self) -> None:
        """Give a slot back: to the waiting job of the highest ratio, if any."""
        with self._lock:
            self._hand_over()

    def step_aside(self, ticket: Ticket) -> None:
        """Hand the slot `ticket` holds to the highest ratio of the line and `ticket`
        (its waited time kept); wait for it again if that is another job."""
        with self._lock:
            ticket.holds = False
            self._line.append(ticket)
            self._hand_over()
        self._wait_for_turn(ticket, None)

    def _hand_over(self) -> None:
        """The slot of a job that left, to the best waiting job (under the lock)."""
        if not self._line:
            self._running -= 1
            return
        now = time.monotonic()
        best = max(self._line, key=lambda t: t.rank(now))
        self._line.remove(best)
        best.holds = True
        best.turn.notify()

    def _join(self, owner: Hashable | None, estimate: float) -> Ticket:
        now = time.monotonic()
        with self._lock:
            ticket = Ticket(owner, estimate, now, threading.Condition(self._lock))
            if self._running < self.slots:
                self._running += 1
                ticket.holds = True
                return ticket
            gone = next((t for t in self._line if owner is not None and t.owner == owner), None)
            if gone is not None:
                ticket.since, gone.out = gone.since, Replaced("a newer job of the same owner took its place in line")
            elif self.max_waiting is not None and len(self._line) >= self.max_waiting:
                gone = max(self._line, key=lambda t: (t.estimate, t.since), default=None)
                if gone is None or gone.estimate <= estimate:
                    raise ServerBusy(len(self._line))
                gone.out = ServerBusy(len(self._line))
            if owner is not None:
                self._left = {o: (since, at) for o, (since, at) in self._left.items() if now - at < REJOIN_SECONDS}
                ticket.since = min(ticket.since, self._left.pop(owner, (now, now))[0])
            if gone is not None:
                self._line.remove(gone)
                gone.turn.notify()
            self._line.append(ticket)
            return ticket

    def _wait_for_turn(self, ticket: Ticket, on_wait: Callable[[int], None] | None) -> None:
        timeout = 0.0  # told at once as it joins, then every `refresh` seconds
        try:
            while True:
                with self._lock:
                    ticket.turn.wait_for(lambda: ticket.out is not None or ticket.holds,
                                         None if on_wait is None else timeout)
                    if ticket.out is not None:
                        raise ticket.out
                    if ticket.holds:
                        return
                    now = time.monotonic()
                    ahead = sum(1 for t in self._line if t.rank(now) > ticket.rank(now))
                on_wait(ahead)
                timeout = self.refresh
        except BaseException:
            with self._lock:
                if ticket.holds:  # the slot came as it left: pass it on
                    self._hand_over()
                elif ticket in self._line:
                    self._line.remove(ticket)
                    if ticket.owner is not None:
                        self._left[ticket.owner] = (ticket.since, time.monotonic())
            raise
