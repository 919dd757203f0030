"""Top-level functions for tests/lib/serving/test_isolation.py to run in worker
processes: a module of its own, importing nothing heavy, so that a bare
worker unpickles them at once."""

import os
import time


def pid_after(seconds: float) -> int:
    """This process's id, after `seconds`."""
    time.sleep(seconds)
    return os.getpid()


def die() -> None:
    """Exit the process at once, as a crash would."""
    os._exit(3)


def anomaly_enabled() -> bool:
    """Whether torch's anomaly mode is on in this process."""
    import torch

    return torch.is_anomaly_enabled()


def resident_bytes() -> int:
    """This process's resident memory in bytes (Linux's /proc)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def raise_timeout() -> None:
    """Raise the call's own TimeoutError, as a call with a deadline of its own may."""
    raise TimeoutError("the call's own deadline")
