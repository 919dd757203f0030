"""What a person waits for, recorded by the browser suite and printed at the end
of the pytest run (information, never asserted)."""

TIMINGS: dict[str, float] = {}


def record(what: str, seconds: float) -> None:
    """Remember one waiting time."""
    TIMINGS[what] = seconds
