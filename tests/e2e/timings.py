"""What a person waits for, recorded by the browser suite and printed at the end
of the pytest run (information, never asserted)."""

TIMINGS: dict[str, float] = {}
# How a report's user_properties name a waiting time (tests/e2e/conftest.py).
WAIT = "fitlab wait: "


def record(what: str, seconds: float) -> None:
    """Remember one waiting time."""
    TIMINGS[what] = seconds
