"""python -m fitlab.explain [--report FILE.json] SCRIPT [ARGS...]

Exit status: 1 when the script died of the in-place error, 2 of another exception,
else the script's own (0 when it finished)."""

import argparse
import sys

from fitlab.explain.report import format_report
from fitlab.explain.runner import run_script


def main(argv=None) -> int:
    """Run the CLI; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m fitlab.explain", description=__doc__.split("\n")[0])
    parser.add_argument("--report", metavar="FILE.json", help="also write the report as JSON here")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    report = run_script(ns.script, ns.args)
    sys.stdout.flush()
    text = format_report(report)
    if text:
        print(text, file=sys.stderr)
    if ns.report:
        with open(ns.report, "w", encoding="utf-8") as f:
            f.write(report.to_json())
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
