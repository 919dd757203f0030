"""Reading torch's anomaly-mode warning: the node whose backward failed, and
the forward traceback torch attached to it.

Anomaly mode records a traceback for each node while the forward pass builds
it, so it must be on before the labels are made: turned on only around the
training line, it has nothing to show for the labels' graph. It is
process-wide; fitlab.failure.explained runs it in a worker process.
"""

from __future__ import annotations

import re

from fitlab.explain.stack import Frame

_DETECTED = re.compile(r"Error detected in (\w+)\. Traceback of forward call that caused the error:\n")
_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)\n'
                    r"(?:    (?P<code>.*)\n)?", re.MULTILINE)


def parse_anomaly_warning(text: str) -> tuple[str, tuple[Frame, ...]] | None:
    """(failing node, frames) from the text of torch's "Error detected in …"
    warning, or None if the text is not one."""
    found = _DETECTED.search(text)
    if found is None:
        return None
    frames = tuple(Frame(m["file"], int(m["line"]), m["function"], (m["code"] or "").strip())
                   for m in _FRAME.finditer(text, found.end()))
    return found.group(1), frames
