"""Explain PyTorch's in-place autograd error: which line saved the tensor, which wrote it.

    from fitlab.explain import run_script, format_report, decode
    report = run_script("blog.py", [])     # runs it as __main__, recording writes
    print(format_report(report))
    report.to_json()
    decode(str(exc))                       # facts from any torch version's message

Command line: python -m fitlab.explain [--report FILE.json] SCRIPT [ARGS...]
"""

from fitlab.explain.decode import Decoded, decode

__all__ = ["Decoded", "decode"]
