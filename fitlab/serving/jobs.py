"""The server's costly work, a few at a time, through one bounded, fair gate.

Training, a sweep, the fix gallery, a replay: each keeps a core busy for
seconds. Let every session start one at once and they all crawl (two cores
shared by dozens of threads), memory grows with them, and nobody finishes
sooner. `JobGate` lets `slots` jobs run at once; the others wait, and learn
their place in line while they wait. At most `max_waiting` may wait; one
more is turned away (`ServerBusy`) instead of joining an unbounded pile of
threads.

Who goes next is fair to small jobs without starving big ones. In arrival
order, a tiny uncached run waited 85 s behind 32 queued width-256 jobs. Now
the next slot goes to the waiting job with the highest response ratio,
(waited + estimate) / estimate, `estimate` being the job's expected seconds
(fitlab.serving.budget's cost model): a 0.1 s run that arrives behind a 6 s one that
has waited 30 s starts after about 0.5 s, and every job's ratio grows while
it waits, so each is eventually first. Jobs of equal estimate go in arrival
order. A full line turns a newcomer away, unless it is smaller than the
biggest job waiting: then that one is turned away (`ServerBusy`) in its
stead, so a crowd of big jobs cannot keep a small one out either. A session
has at most one job in line: a new one from the same
`owner` takes the place (and the waited time) of its waiting one, which
leaves the line with `Replaced`; so does one that joins within
`REJOIN_SECONDS` of its owner's wait being cut short (Streamlit stops a
waiting page run to rerun it with the visitor's new setting). A waiting job
is told its place as it joins, each time it changes, and at least every
`refresh` seconds (a page run can be stopped only while it is told).

A page draw is not a job: a cached page is tens of milliseconds of
Python, and as a job it waited for heavy ones to end (the load test's
visitor got its chart after 15.4 s, goal 3 s). Nor does it need a gate of
its own: with the server's short switch interval (ui/warmup.py) the event
loop keeps its turn beside the draws, and the load test and the
class of 200 meet their goals without one (docs/measurements/robustness.md).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# Below this many seconds an estimate counts as this: the ratio stays finite.
SHORTEST_ESTIMATE = 0.05
# An owner's wait cut short is remembered this long for its next job.
REJOIN_SECONDS = 10.0


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


class Replaced(RuntimeError):
    """A newer job of the same owner took this waiting job's place in line."""


@dataclass(eq=False)  # each ticket is itself, whatever its fields
class _Ticket:
    owner: Hashable | None
    estimate: float
    since: float  # when its owner's job first joined the line (kept by a replacement)
    order: int  # arrival, breaking ties
    replaced: bool = False
    turned_away: bool = False  # by a smaller newcomer to a full line

    def ratio(self, now: float) -> float:
        return (now - self.since + self.estimate) / self.estimate


class JobGate:
    """At most `slots` jobs at once, at most `max_waiting` in line, the
    next slot to the highest response ratio (see the module's docstring)."""

    def __init__(self, slots: int = 2, max_waiting: int = 32, refresh: float | None = 1.0):
        if slots < 1 or max_waiting < 0 or (refresh is not None and refresh <= 0):
            raise ValueError(f"slots={slots}, max_waiting={max_waiting}, refresh={refresh}: "
                             "need slots ≥ 1, max_waiting ≥ 0, refresh > 0 or None")
        self.slots, self.max_waiting, self.refresh = slots, max_waiting, refresh
        self._running = 0
        self._line: list[_Ticket] = []
        self._arrivals = itertools.count()
        self._left: dict[Hashable, tuple[float, float]] = {}  # owner: (since, left at)
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
    def slot(self, on_wait: Callable[[Place], None] | None = None, owner: Hashable | None = None,
             estimate: float = 1.0) -> Iterator[None]:
        """Hold one of the slots for the `with` block, waiting in line for
        it if all are taken. `owner` (a session, say) has at most one job in
        line: this one replaces its waiting one. `estimate` is the job's
        expected seconds. `on_wait(place)` is called (outside the gate's
        lock, in the waiting thread) as the job joins the line, each time
        its place changes and at least every `refresh` seconds. Raises
        ServerBusy if the line is full (at once, or later for a big job a
        smaller newcomer displaced), Replaced if a newer job of the same
        owner took its place. A wait cut short by an exception (from
        on_wait, say) leaves the line cleanly."""
        ticket = self._join(owner, max(float(estimate), SHORTEST_ESTIMATE))
        if ticket is not None:
            self._wait_for_turn(ticket, on_wait)
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

    def run(self, func: Callable, *args, on_wait: Callable[[Place], None] | None = None,
            owner: Hashable | None = None, estimate: float = 1.0, **kwargs):
        """func(*args, **kwargs) in a slot (see `slot`)."""
        with self.slot(on_wait, owner, estimate):
            return func(*args, **kwargs)

    def _join(self, owner: Hashable | None, estimate: float) -> _Ticket | None:
        """A slot at once (None), or a ticket in line."""
        now = time.monotonic()
        with self._changed:
            if self._running < self.slots and not self._line:
                self._running += 1
                return None
            earlier = next((t for t in self._line if owner is not None and t.owner == owner), None)
            if earlier is None and len(self._line) >= self.max_waiting:
                biggest = max(self._line, key=lambda t: (t.estimate, t.order), default=None)
                if biggest is None or biggest.estimate <= estimate:
                    raise ServerBusy(len(self._line))
                biggest.turned_away = True
                self._line.remove(biggest)
            self._left = {o: (since, at) for o, (since, at) in self._left.items() if now - at < REJOIN_SECONDS}
            since = earlier.since if earlier is not None else self._left.pop(owner, (now, now))[0]
            ticket = _Ticket(owner, estimate, since, next(self._arrivals))
            if earlier is not None:
                earlier.replaced = True
                self._line.remove(earlier)
            self._line.append(ticket)
            self._changed.notify_all()
            return ticket

    def _ahead(self, ticket: _Ticket, now: float) -> int:
        mine = (ticket.ratio(now), -ticket.order)
        return sum(1 for t in self._line if (t.ratio(now), -t.order) > mine)

    def _wait_for_turn(self, ticket: _Ticket, on_wait: Callable[[Place], None] | None) -> None:
        told, told_at = None, 0.0
        try:
            while True:
                with self._changed:
                    while True:
                        if ticket.replaced:
                            raise Replaced("a newer job of the same owner took its place in line")
                        if ticket.turned_away:
                            raise ServerBusy(len(self._line))
                        now = time.monotonic()
                        ahead = self._ahead(ticket, now)
                        if ahead == 0 and self._running < self.slots:
                            self._line.remove(ticket)
                            self._running += 1
                            self._changed.notify_all()  # the others moved up
                            return
                        place = Place(ahead, self._running)
                        due = self.refresh is not None and now - told_at >= self.refresh
                        if place != told or due:
                            break
                        self._changed.wait(None if self.refresh is None else told_at + self.refresh - now)
                if on_wait is not None:
                    on_wait(place)
                told, told_at = place, time.monotonic()
        except BaseException:
            with self._changed:
                if ticket in self._line:
                    self._line.remove(ticket)
                    if ticket.owner is not None:
                        self._left[ticket.owner] = (ticket.since, time.monotonic())
                    self._changed.notify_all()
            raise

