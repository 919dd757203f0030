"""Explain PyTorch's in-place autograd error: which line saved the tensor, which wrote it.

    from fitlab.explain import run_script, format_report, decode
    report = run_script("blog.py", [])     # runs it as __main__, recording writes
    print(format_report(report))
    report.to_json()
    decode(str(exc))                       # facts from any torch version's message

Command line: python -m fitlab.explain [--report FILE.json] SCRIPT [ARGS...]
"""

from fitlab.explain.decode import Decoded, decode
from fitlab.explain.frames import Frame
from fitlab.explain.recorder import Recorder
from fitlab.explain.report import Fix, Report, SilentWrite, TensorFacts, WriteFacts, format_report
from fitlab.explain.runner import run_script

__all__ = ["Decoded", "Fix", "Frame", "Recorder", "Report", "SilentWrite", "TensorFacts", "WriteFacts",
           "decode", "format_report", "run_script"]
