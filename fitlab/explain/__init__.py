"""Explain PyTorch's in-place autograd error: which line saved the tensor, which wrote it, the fix.

    from fitlab.explain import run_script, format_report, decode
    report = run_script("train.py", [])    # runs it as __main__, recording writes
    print(format_report(report))
    report.to_json()
    decode(str(exc))                       # facts from any torch version's message

    with fitlab.explain.recording() as rec:   # a notebook cell, a block of code
        ...
    rec.report                             # the same Report, None if nothing failed

    report = run_fixed("script", "train.py")   # the same, and --fix's proof: report.proof

In IPython or Jupyter: `%load_ext fitlab.explain`, then `%%explain` (or `%%explain --fix`) on a cell.
Command line: python -m fitlab.explain [--report FILE.json] [--fix [--write]] (SCRIPT | -m MODULE) [ARGS...]

Names are imported on first use, so `import fitlab.explain.decode` (pure text) does not
import torch.
"""

import importlib

# Pure text, imported at once: `decode` names both the module and its function, and an import
# of the module would otherwise leave the package's `decode` bound to the module.
from fitlab.explain.decode import Decoded, decode

_HOME = {
    "Frame": "stack", "Via": "stack",
    "Recorder": "recorder",
    "Fix": "advice", "Edit": "advice",
    "Report": "report", "SilentWrite": "report", "StaleTensor": "report", "TensorFacts": "report",
    "WriteFacts": "report",
    "format_report": "report",
    "run_script": "runner", "run_module": "runner", "run_fixed": "fix", "Proof": "fix",
    "recording": "notebook", "Recording": "notebook",
    "load_ipython_extension": "ipython",
}

__all__ = ["Decoded", "Edit", "Fix", "Frame", "Proof", "Recorder", "Recording", "Report", "SilentWrite",
           "StaleTensor", "TensorFacts", "Via", "WriteFacts", "decode", "format_report", "load_ipython_extension",
           "recording", "run_fixed", "run_module", "run_script"]


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'fitlab.explain' has no attribute {name!r}")
    return getattr(importlib.import_module(f"fitlab.explain.{home}"), name)


def __dir__() -> list:
    return __all__
