"""What --fix found, shows and writes: the proof (each culprit's verdict), the unified diff of the
edited files, the verdicts in words, and `--write`'s copy of the edited files over the user's
(each backed up first)."""

from __future__ import annotations

import difflib
import os
import shutil
from dataclasses import dataclass, field

from fitlab.explain.causes import DID_NOT_HELP
from fitlab.explain.neighbours.messages import WRITTEN_AT


@dataclass(frozen=True)
class Culprit:
    """One failure edited: its cause (causes.py key), the line the fix is for (file:line, the user's
    file), the verdict of the rerun with this edit and the ones before it, that in words, and the
    line's label as the report gives it (the write's "written at", a freed graph's "built at")."""

    kind: str
    at: str
    verdict: str
    said: str
    label: str = WRITTEN_AT

    def to_dict(self) -> dict:
        """The JSON object of one entry of the fix's "culprits"."""
        return {"kind": self.kind, "label": self.label, "at": self.at, "verdict": self.verdict, "said": self.said}


@dataclass(frozen=True)
class Proof:
    """What --fix found: the verdict of all the edits together (the last culprit's), each culprit,
    the unified diff of the user's files, and the edited files' text (path -> text)."""

    verdict: str
    culprits: tuple
    diff: str
    files: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON object of the report's "proof" field."""
        return {"verdict": self.verdict, "culprits": [c.to_dict() for c in self.culprits], "diff": self.diff,
                "files": sorted(self.files)}


def ran(backwards: int, stopped: str | None, bound: int, steps: int) -> str:
    """How far an edited copy ran, in words: `backwards` calls made, the one that failed being call
    `bound - steps`; stopped: "timeout" if the rerun was stopped at its deadline."""
    past = backwards - (bound - steps)
    calls = f"{backwards} backward call{'s' if backwards != 1 else ''}"
    return ("stopped at the timeout, " if stopped == "timeout" else "") + (
        f"{calls} run, the one that failed" + (f" and {past} past it" if past > 0 else "") if past >= 0 else
        f"the program ended after {calls}")


def unified_diff(program, texts: dict) -> str:
    """The unified diff of the user's files against the edited text."""
    out = []
    for path, new in sorted(texts.items()):
        old = program.text_of(path) or ""
        name = program.label if program.label and path == program.path else os.path.relpath(path)
        out += difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}")
    return "".join(out)


def write_files(proof: Proof) -> list:
    """Write the edited files over the user's, each first copied to PATH.orig (or .orig.N if
    that exists); (path, its backup's path) of each."""
    backups = []
    for path, text in sorted(proof.files.items()):
        if path.startswith("<") or not os.path.isfile(path):
            continue
        backup, n = path + ".orig", 1
        while os.path.exists(backup):
            backup, n = f"{path}.orig.{n}", n + 1
        shutil.copy2(path, backup)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        backups.append((path, backup))
    return backups


def format_proof(proof: Proof) -> str:
    """The text --fix prints after the report: each culprit's verdict, then the diff (an edit
    that did not help is shown as tried, not as a fix)."""
    out = ["", "--fix: the edit applied to a copy of your files, rerun:"]
    for i, c in enumerate(proof.culprits, 1):
        together = " (all the edits together)" if i == len(proof.culprits) > 1 else ""
        out.append(f"  {i}. {c.kind} {c.label} {c.at}: {c.verdict.upper()}{together}: {c.said}")
    if proof.diff and proof.verdict != DID_NOT_HELP:
        out += ["", proof.diff.rstrip("\n")]
    elif proof.diff:
        out += ["", "The edit tried (not a fix):", proof.diff.rstrip("\n")]
    return "\n".join(out)
