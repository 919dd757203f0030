"""The server's costly work (training, a sweep, the fix gallery, a replay), a
few jobs at once (all at once, they all crawl) through one bounded, fair gate:
`JobGate` runs `slots` jobs at once; at most `max_waiting` wait, each told
its place, and one more is turned away (`ServerBusy`).

The next slot goes to the waiting job with the highest response ratio,
(waited + estimate) / estimate, `estimate` being its expected seconds
(fitlab.serving.budget): a small job passes big ones, and a waiting job's
ratio grows, so none starves; equal ratios go in arrival order. A full line
turns away its biggest job for a smaller newcomer. A session (`owner`) has
one job in line: a new one takes the place and the waited time of its
waiting one (`Replaced`), also within `REJOIN_SECONDS` of its wait being cut
short (Streamlit stops a waiting page run to rerun it).

Page draws are not jobs (as jobs, a cached page's tens of milliseconds
waited behind heavy ones), but they too go a few at once, through ordered
`Permits`: forty page runs drawing at once queue on Streamlit's config lock,
which every message and the event loop's session start take, and nobody hears
anything for seconds (docs/measurements/robustness.md).
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

SHORTEST_ESTIMATE = 0.05  # seconds: a ratio's divisor is never smaller
REJOIN_SECONDS = 10.0  # how long an owner's wait cut short is remembered


@dataclass(frozen=True)
class Place:
    """Where a waiting job stands: `ahead` jobs before it in line, `running`
    holding slots."""

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
    out: RuntimeError | None = None  # raised in its thread: Replaced, or ServerBusy (a smaller newcomer came)

    def rank(self, now: float) -> tuple[float, int]:
        return (now - self.since + self.estimate) / self.estimate, -self.order


class JobGate:
    """At most `slots` jobs at once, at most `max_waiting` in line, the
    next slot to the highest response ratio (see the module's docstring)."""

    def __init__(self, slots: int = 2, max_waiting: int = 32, refresh: float = 1.0):
        if slots < 1 or max_waiting < 0 or refresh <= 0:
            raise ValueError(f"slots={slots}, max_waiting={max_waiting}, refresh={refresh}: "
                             "need slots ≥ 1, max_waiting ≥ 0, refresh > 0")
        self.slots, self.max_waiting, self.refresh = slots, max_waiting, refresh
        self._running = 0
        self._line: list[_Ticket] = []
        self._arrivals = itertools.count()
        self._left: dict[Hashable, tuple[float, float]] = {}  # owner: (since, left at)
        self._changed = threading.Condition()

    @contextmanager
    def slot(self, on_wait: Callable[[Place], None] | None = None, owner: Hashable | None = None,
             estimate: float = 1.0) -> Iterator[None]:
        """Hold a slot for the `with` block, waiting in line if all are taken
        (see the module's docstring). `on_wait(place)` is called in the
        waiting thread, outside the gate's lock, as the job joins, when its
        place changes and at least every `refresh` seconds; an exception from
        it leaves the line cleanly. Raises ServerBusy or Replaced."""
        ticket = self._join(owner, max(float(estimate), SHORTEST_ESTIMATE))
        if ticket is not None:
            self._wait_for_turn(ticket, on_wait)
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

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
                biggest.out = ServerBusy(len(self._line))
                self._line.remove(biggest)
            self._left = {o: (since, at) for o, (since, at) in self._left.items() if now - at < REJOIN_SECONDS}
            since = earlier.since if earlier is not None else self._left.pop(owner, (now, now))[0]
            ticket = _Ticket(owner, estimate, since, next(self._arrivals))
            if earlier is not None:
                earlier.out = Replaced("a newer job of the same owner took its place in line")
                self._line.remove(earlier)
            self._line.append(ticket)
            self._changed.notify_all()
            return ticket

    def _wait_for_turn(self, ticket: _Ticket, on_wait: Callable[[Place], None] | None) -> None:
        told, told_at = None, -math.inf
        try:
            while True:
                with self._changed:
                    if ticket.out is not None:
                        raise ticket.out
                    now = time.monotonic()
                    ahead = sum(1 for t in self._line if t.rank(now) > ticket.rank(now))
                    if ahead == 0 and self._running < self.slots:
                        self._line.remove(ticket)
                        self._running += 1
                        self._changed.notify_all()  # the others moved up
                        return
                    place = Place(ahead, self._running)
                    if place == told and now - told_at < self.refresh:
                        self._changed.wait(told_at + self.refresh - now)
                        continue
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


class Permits:
    """`count` permits, handed out in the order they were asked for. A
    semaphore lets a newcomer take a permit released to a thread that waited
    before it; here a released permit goes to the longest waiter, so with
    200 pages queued the first to come are drawn first, and the median page
    is done at about half the crowd's time, not near its end.

    A page run coming back from a heavy job it ran (its run trained) asks with
    `after_job`: it waits behind every page run that has not had one. Its
    first draw of a fresh run is seconds of work, a cached page's tens of
    milliseconds: after a class moved to heavy runs of their own, a late
    student on the cached link waited in line behind their first draws."""

    def __init__(self, count: int):
        self._free = count
        self._lock = threading.Lock()
        self._waiting: deque[threading.Lock] = deque()
        self._after_jobs: deque[threading.Lock] = deque()

    def acquire(self, after_job: bool = False) -> None:
        """Take a permit, waiting behind everyone who asked before (with
        `after_job`, behind every page run that has not had a heavy job, too)."""
        with self._lock:
            if self._free and not self._waiting and not self._after_jobs:
                self._free -= 1
                return
            turn = threading.Lock()
            turn.acquire()
            (self._after_jobs if after_job else self._waiting).append(turn)
        turn.acquire()  # release() hands the permit over by releasing it

    def step_aside(self) -> None:
        """Hand the permit this thread holds to the longest waiter without a
        heavy job, if any, and wait for one again ahead of every page run
        back from a job: such a page run does this before each of a fresh
        run's builds (a table's message, a chart's), so a cached page waits
        for one build, not a whole first draw."""
        with self._lock:
            if not self._waiting:
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiting.popleft().release()
            self._after_jobs.appendleft(turn)
        turn.acquire()

    def release(self) -> None:
        """Give a permit back: to the longest waiter, if any, those without a
        heavy job first."""
        with self._lock:
            if self._waiting:
                self._waiting.popleft().release()
            elif self._after_jobs:
                self._after_jobs.popleft().release()
            else:
                self._free += 1
