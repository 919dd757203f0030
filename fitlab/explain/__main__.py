"""python -m fitlab.explain [--report FILE.json] [--check-contents]
                           [--fix [--write] [--fix-steps N] [--fix-timeout S]] (SCRIPT | -m MODULE) [ARGS...]

Runs SCRIPT (or MODULE, as `python -m` does; a folder or zip file, its `__main__.py`) as
`__main__`, recording in-place writes; when it dies of "modified by an inplace operation",
prints Python's traceback, then where the tensor was saved, written and differentiated, and
the fix. Its neighbouring errors are explained so too: a backward through a graph an earlier
one freed ("a second time"), an in-place write to a leaf that requires grad or to a view of
one, and one to a view autograd cannot rebase. Exit status: 1 when the script died of an error
the tool explains, 2 of another exception (or a usage error), 130 on Ctrl-C (the process ends by
SIGINT, as Python's does), else the script's own (0 when it finished).

--fix applies the fix's edit to a temporary copy of your files, reruns the copy with the same
arguments and random state up to the failing backward and N more (--fix-steps, default 1; at
most S seconds, --fix-timeout, default 120), and prints the verdict (proved, runs, next write,
did not help) and the diff. Your files change only with --write, which keeps a backup of each.

--check-contents also copies every tensor autograd saves and, at each backward, compares it with
what it holds then: a write no version counter saw (numpy writing a buffer that
torch.from_numpy shares) is reported with the line that saved it. It costs a copy of every saved
tensor (memory and time: docs/explain.md).
"""

from __future__ import annotations

import os
import signal
import sys
import traceback

USAGE = ("usage: python -m fitlab.explain [--report FILE.json] [--check-contents] "
         "[--fix [--write] [--fix-steps N] [--fix-timeout S]] (SCRIPT | -m MODULE) [ARGS...]")


def _refuse(message: str) -> int:
    print(f"fitlab.explain: {message}", file=sys.stderr)
    return 2


def _number(options: dict, name: str, text: str | None, kind):
    """options[name] = kind(text), or an error string."""
    try:
        value = kind(text)
    except (TypeError, ValueError):
        return f"--{name.replace('_', '-')} needs a number, not {text!r}"
    if value <= 0 if kind is float else value < 0:
        return f"--{name.replace('_', '-')} must be {'above' if kind is float else 'at least'} 0, not {text}"
    options[name] = value
    return None


def _parse(argv: list, options: dict):
    """(report path or None, "script"/"module", target, args) or an error string; the --fix
    options go into `options` (fix, write, fix_steps, fix_timeout)."""
    report, i = None, 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            return "help"
        if arg in ("--fix", "--write", "--check-contents"):
            options[arg[2:].replace("-", "_")] = True
        elif arg in ("--fix-steps", "--fix-timeout") or arg.startswith(("--fix-steps=", "--fix-timeout=")):
            name, _, text = arg[2:].partition("=")
            if not text:
                i += 1
                text = argv[i] if i < len(argv) else None
            why = _number(options, name.replace("-", "_"), text, int if name == "fix-steps" else float)
            if why is not None:
                return why
        elif arg == "--report" or arg.startswith("--report="):
            if "=" in arg:
                report = arg.split("=", 1)[1]
            elif i + 1 < len(argv):
                i += 1
                report = argv[i]
            else:
                return "--report needs a file name"
        elif arg == "-m" or (arg.startswith("-m") and len(arg) > 2):
            name = arg[2:] or (argv[i + 1] if i + 1 < len(argv) else None)
            if not name:
                return "-m needs a module name"
            rest = argv[i + (1 if arg[2:] else 2):]
            return report, "module", name, rest
        elif arg == "--":
            i += 1
            break
        elif arg.startswith("-"):
            return f"unknown option {arg}"
        else:
            break
        i += 1
    if i >= len(argv):
        return "no script given"
    return report, "script", argv[i], argv[i + 1:]


def _writable(path: str) -> str | None:
    """Why a report cannot be written at `path` (absolute), or None if it can."""
    folder = os.path.dirname(path)
    if os.path.isdir(path):
        return f"--report {path} is a folder"
    if not os.path.isdir(folder):
        return f"--report {path}: no such folder {folder}"
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        return f"--report {path}: not writable"
    return None


def _torch_missing() -> str | None:
    """Why this torch cannot run the recorder (one line), or None."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install torch)"
    except Exception as exc:  # noqa: BLE001 - a broken torch install: one line, not its traceback
        return f"torch does not import: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    try:
        release = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    except ValueError:  # a source build's odd version string: let the imports below decide
        release = None
    if release is not None and release < (2, 1):
        return f"this torch ({torch.__version__}) is older than the oldest fitlab.explain runs on (torch>=2.1)"
    try:
        import fitlab.explain.recorder  # noqa: F401 - the APIs it needs are imported there
        import fitlab.explain.runner  # noqa: F401
    except (ImportError, AttributeError) as exc:
        return f"this torch ({torch.__version__}) lacks an API fitlab.explain needs (torch>=2.1): {exc}"
    return None


def _err():
    """Where to print: the script may have closed or replaced stderr."""
    err = sys.stderr
    return err if err is not None and not getattr(err, "closed", False) else sys.__stderr__


def _closed_pipe() -> None:
    """After a write to a pipe whose reader went away: nothing more goes to stdout or stderr, or
    Python would print a traceback of the unwritten rest at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)


def _proved(proof, write: bool) -> str:
    """--fix's verdict and diff; with --write, the edited files written (a backup of each kept)."""
    from fitlab.explain.fix import DID_NOT_HELP, NO_EDIT, format_proof, write_files
    text = format_proof(proof)
    if write and proof.verdict not in (DID_NOT_HELP, NO_EDIT):
        text += "".join(f"\nwrote {path} (your file before: {backup})" for path, backup in write_files(proof))
    elif write:
        text += "\nnothing written: the edit is no fix"
    return text


def main(argv=None) -> int:
    """Run the CLI; returns the exit status (on Ctrl-C the process ends by SIGINT instead)."""
    options: dict = {}
    parsed = _parse(list(sys.argv[1:] if argv is None else argv), options)
    if parsed == "help":
        print(__doc__.strip())
        return 0
    if isinstance(parsed, str):
        print(USAGE, file=sys.stderr)
        return _refuse(parsed)
    report_path, kind, target, args = parsed
    contents = options.pop("check_contents", False)
    if set(options) - {"fix"} and not options.get("fix"):
        print(USAGE, file=sys.stderr)
        return _refuse("--write, --fix-steps and --fix-timeout go with --fix")
    if report_path is not None:
        report_path = os.path.abspath(report_path)
        why = _writable(report_path)
        if why is not None:
            return _refuse(why)
    missing = _torch_missing()
    if missing is not None:
        return _refuse(missing)
    try:
        import libcst  # noqa: F401 - each cause's codemod (the report's edit, --fix's) edits the code with it
    except ImportError:
        return _refuse("fitlab-explain needs libcst (pip install 'libcst>=1.9,<1.10')")
    from fitlab.explain.neighbours.messages import LIKELY
    from fitlab.explain.recorder import Recorder
    from fitlab.explain.report import format_report
    from fitlab.explain.runner import run_module, run_script

    parent = os.getpid()
    try:
        if options.get("fix"):
            from fitlab.explain.fix import STEPS, TIMEOUT, run_fixed
            report = run_fixed(kind, target, args, options.get("fix_steps", STEPS),
                               options.get("fix_timeout", TIMEOUT), check_contents=contents)
        elif kind == "module":
            report = run_module(target, args, Recorder(check_contents=contents))
        else:
            report = run_script(target, args, Recorder(check_contents=contents))
    except SyntaxError as exc:  # where, the line and its caret, as python shows a script's
        print("".join(traceback.format_exception_only(exc)), end="", file=sys.stderr)
        return 2
    except (OSError, ImportError) as exc:
        return _refuse(f"can't run {target}: {exc}")
    try:
        sys.stdout.flush()
    except (ValueError, OSError, AttributeError):  # the script closed or replaced stdout
        pass
    if os.getpid() != parent:
        # A forked child that ran on to the end of the script recorded nothing (its parent
        # records): it ends as Python's would, its parent writes the report.
        if report.traceback:
            print(report.traceback.rstrip("\n"), file=_err())
        return 1 if report.status in ("inplace_error", "other_error", *LIKELY) else report.exit_code
    text = format_report(report)
    if report.proof is not None:
        text += "\n" + _proved(report.proof, options.get("write", False))
    if report_path is not None:
        with open(report_path, "w", encoding="utf-8") as f:
            f.write(report.to_json())
    if text:
        try:
            print(text, file=_err())
        except BrokenPipeError:  # the reader went away (`2>&1 | head`): the status stays the script's
            _closed_pipe()
    if report.status == "interrupted" and hasattr(signal, "SIGINT"):
        _err().flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return report.exit_code


def run() -> None:
    """The `fitlab-explain` console script and `python -m fitlab.explain`."""
    if not sys.flags.safe_path:
        # Python put the tool's own folder first (the current one for -m, the console
        # script's): `python SCRIPT` puts only the script's, which the runner adds.
        del sys.path[0]
    try:
        code = main()
    except KeyboardInterrupt:  # Ctrl-C outside the script (while the report is written)
        code = 130
    except BrokenPipeError:  # its help or usage into a closed pipe (`| head`): cut short, as python's
        _closed_pipe()
        code = 1
    try:
        sys.stdout.flush()
    except (ValueError, OSError, AttributeError):
        pass
    sys.exit(code)


if __name__ == "__main__":
    run()
