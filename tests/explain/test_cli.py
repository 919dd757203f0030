"""`python -m fitlab.explain` behaves like `python` for any script: the same output and exit
status (1 for the in-place error, 2 for another exception, SIGINT for Ctrl-C), never its own
frames, whatever the script does to stdout, argv, cwd, threads, processes or its exceptions.
Where the process is the claim (the in-place error's traceback and report, a closed stdout, Ctrl-C,
a KeyboardInterrupt, a thread, a forked child) the real CLI runs in a subprocess, beside `python
SCRIPT`; elsewhere both run in forks of one process that imported torch (forked_explain and
forked_python, tests/explain/conftest.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .test_explain import SCRIPTS, marked

pytestmark = pytest.mark.slow  # every test runs the CLI, or python, as a process or a fork

ROOT = Path(__file__).resolve().parents[2]
CLI = SCRIPTS / "cli"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
OURS = "fitlab" + os.sep + "explain"


def cli(*args: str, cwd: Path = CLI) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fitlab.explain", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=240, check=False)


def python(*args: str, cwd: Path = CLI) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=240, check=False)


def test_other_error_prints_pythons_traceback_and_exits_2(tmp_path, forked_explain, forked_python):
    ours = forked_explain("--report", str(tmp_path / "r.json"), str(SCRIPTS / "other_error.py"), cwd=CLI)
    alone = forked_python(str(SCRIPTS / "other_error.py"), cwd=CLI)
    assert ours.returncode == 2
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "other_error" and report["error"].startswith("ValueError")
    assert f'other_error.py", line {marked("other_error.py", "raised-here")}, in check' in ours.stderr
    assert ours.stderr.strip() == alone.stderr.strip() and OURS not in ours.stderr


def test_a_script_python_cannot_compile_is_shown_as_python_shows_it(tmp_path, forked_explain):
    # Real python for the script alone: it stops at compiling, before importing anything.
    (tmp_path / "typo.py").write_text("import torch\n\nloss = torch.ones(2).sum(\nprint(loss)\n")
    alone = subprocess.run([sys.executable, "typo.py"], cwd=tmp_path, capture_output=True, text=True, check=False)
    ours = forked_explain("typo.py", cwd=tmp_path)
    assert alone.returncode == 1 and ours.returncode == 2  # another error than autograd's: 2
    assert ours.stderr == alone.stderr and "SyntaxError: '(' was never closed" in ours.stderr
    assert 'typo.py", line 3' in ours.stderr and ours.stdout == alone.stdout == ""
    missing = forked_explain("gone.py", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.startswith("fitlab.explain: can't run gone.py: ")
    assert "No such file or directory" in missing.stderr


def test_argv_path_name_and_exit_code_pass_through(tmp_path, forked_explain):
    out = tmp_path / "seen.json"
    proc = forked_explain("--report", str(tmp_path / "r.json"), str(SCRIPTS / "argv_exit.py"), str(out), "3", cwd=CLI)
    assert proc.returncode == 3 and json.loads((tmp_path / "r.json").read_text())["exit_code"] == 3
    seen = json.loads(out.read_text())
    assert seen["argv"] == [str(SCRIPTS / "argv_exit.py"), str(out), "3"]
    assert Path(seen["path0"]).resolve() == SCRIPTS.resolve()
    assert seen["name"] == "__main__" and seen["helper"] == 42
    # Real python (the script imports no torch): the same, its loader too (inspect, pkgutil read it).
    assert python(str(SCRIPTS / "argv_exit.py"), str(out), "3").returncode == 3
    assert json.loads(out.read_text()) == seen and seen["loader"] == "SourceFileLoader"


def test_dash_m_gives_the_module_what_python_gives_it(tmp_path, forked_explain):
    for name in ("argv_exit.py", "sibling_helper.py"):
        shutil.copy(SCRIPTS / name, tmp_path / name)
    out = tmp_path / "seen.json"
    assert forked_explain("-m", "argv_exit", str(out), "0", cwd=tmp_path).returncode == 0
    seen = json.loads(out.read_text())
    # Real python: the same argv, sys.path[0], file, cached file, spec, package and loader.
    assert python("-m", "argv_exit", str(out), "0", cwd=tmp_path).returncode == 0
    assert json.loads(out.read_text()) == seen and seen["spec"] == "argv_exit" and seen["helper"] == 42


def test_a_symlinked_script_imports_beside_the_file_it_links_to_as_under_python(tmp_path, forked_explain):
    (tmp_path / "real").mkdir()
    (tmp_path / "other").mkdir()
    for name in ("argv_exit.py", "sibling_helper.py"):
        shutil.copy(SCRIPTS / name, tmp_path / "real" / name)
    (tmp_path / "other" / "argv_exit.py").symlink_to(Path("..") / "real" / "argv_exit.py")
    out = tmp_path / "seen.json"
    assert forked_explain("other/argv_exit.py", str(out), "0", cwd=tmp_path).returncode == 0
    seen = json.loads(out.read_text())
    assert python("other/argv_exit.py", str(out), "0", cwd=tmp_path).returncode == 0
    assert json.loads(out.read_text()) == seen and seen["helper"] == 42
    assert seen["path0"] == str(tmp_path / "real") and seen["file"] == str(tmp_path / "other" / "argv_exit.py")


def _packed(tmp_path: Path, packing: str, *files: Path) -> str:
    """`files` as a folder app/ (the first as its __main__.py) or as a zip file app.zip of it."""
    app = tmp_path / "app"
    app.mkdir()
    for i, f in enumerate(files):
        shutil.copy(f, app / ("__main__.py" if i == 0 else f.name))
    if packing == "folder":
        return "app"
    shutil.make_archive(str(tmp_path / "app"), "zip", app)
    shutil.rmtree(app)
    return "app.zip"


@pytest.mark.parametrize("packing", ["folder", "zip"])
def test_a_folder_or_zip_file_runs_its_main_as_python_runs_it(tmp_path, packing, forked_explain):
    target = _packed(tmp_path, packing, SCRIPTS / "argv_exit.py", SCRIPTS / "sibling_helper.py")
    out = tmp_path / "seen.json"
    assert forked_explain(target, str(out), "3", cwd=tmp_path).returncode == 3
    seen = json.loads(out.read_text())
    # Real python (the script imports no torch): the same argv, sys.path[0], file, spec and loader.
    assert python(target, str(out), "3", cwd=tmp_path).returncode == 3
    assert json.loads(out.read_text()) == seen and seen["spec"] == "__main__" and seen["helper"] == 42
    assert seen["argv"][0] == target and seen["file"] == str(tmp_path / target / "__main__.py")


@pytest.mark.parametrize("packing", ["folder", "zip"])
def test_a_folder_or_zip_files_error_is_explained_and_only_a_folder_is_fixed(tmp_path, packing, forked_explain):
    target = _packed(tmp_path, packing, SCRIPTS / "exp_augassign.py")
    ours = forked_explain(target, cwd=tmp_path)
    assert ours.returncode == 1 and OURS not in ours.stderr
    for mark, line in (("saved at", "saved-here"), ("written at", "written-here"), ("failed at", "failed-here")):
        n = marked("exp_augassign.py", line)
        text = (SCRIPTS / "exp_augassign.py").read_text().splitlines()[n - 1].strip()
        # A zip file's lines too, read through its loader.
        assert re.search(rf"{mark} +__main__\.py:{n} +{re.escape(text)}", ours.stderr), ours.stderr
    fixed = forked_explain("--fix", target, cwd=tmp_path)
    if packing == "folder":
        assert "PROVED" in fixed.stderr and "+++ b/app/__main__.py" in fixed.stderr
    else:  # nothing to edit inside a zip file: said, not a failed run
        assert "NO EDIT" in fixed.stderr and "no source for __main__.py" in fixed.stderr
    assert OURS not in fixed.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = forked_explain("empty", cwd=tmp_path)
    assert refused.returncode == 2 and "can't find '__main__' module in 'empty'" in refused.stderr


def test_inplace_error_prints_pythons_traceback_then_the_report():
    # Real processes, both: the CLI as it is run, beside python.
    ours, alone = cli(str(SCRIPTS / "exp_augassign.py")), python(str(SCRIPTS / "exp_augassign.py"))
    assert ours.returncode == 1 and alone.returncode == 1
    assert ours.stderr.startswith(alone.stderr.rstrip("\n"))
    assert "[torch.FloatTensor [4]]" in ours.stderr and OURS not in ours.stderr


@pytest.mark.parametrize("script", ["closes_stdout.py", "keyboard.py"])
def test_same_output_and_status_as_python(script):
    # Real processes: what the interpreter does on its way out (a stdout closed, death by SIGINT).
    ours, alone = cli(script), python(script)
    assert (ours.returncode, ours.stdout, ours.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    assert OURS not in ours.stderr


def _closed_pipe_for(broken: str, *args: str) -> tuple[int, str]:
    """The CLI's exit status, and what it said on the other stream, with `broken` (stdout or
    stderr) a pipe whose reader went away (`| head`) before anything was written."""
    read, write = os.pipe()
    os.close(read)
    other = "stderr" if broken == "stdout" else "stdout"
    proc = subprocess.run([sys.executable, "-m", "fitlab.explain", *args], cwd=CLI, env=ENV, timeout=240,
                          check=False, text=True, **{broken: write, other: subprocess.PIPE})
    os.close(write)
    return proc.returncode, getattr(proc, other)


def test_its_own_words_into_a_closed_pipe_end_without_a_traceback(tmp_path):
    # Real processes: the help into a closed stdout, the report into a closed stderr.
    status, said = _closed_pipe_for("stdout", "--help")
    assert status == 1 and "Traceback" not in said and "BrokenPipeError" not in said, said
    for script, exit_code in (("exp_augassign.py", 1), ("finishes_silent.py", 0)):
        report = tmp_path / f"{script}.json"
        status, said = _closed_pipe_for("stderr", "--check-contents", "--report", str(report), str(SCRIPTS / script))
        # The report's file is written all the same, and the status is the script's, not the pipe's.
        assert status == exit_code and json.loads(report.read_text())["exit_code"] == exit_code


@pytest.mark.parametrize("script", ["base_exception.py", "str_raises.py"])
def test_a_base_exception_or_one_that_cannot_print_is_another_exception_exit_2(script, forked_explain,
                                                                              forked_python):
    ours, alone = forked_explain(script, cwd=CLI), forked_python(script, cwd=CLI)
    assert (ours.returncode, alone.returncode) == (2, 1)
    assert ours.stderr == alone.stderr and OURS not in ours.stderr


def _ctrl_c_as_in_a_terminal() -> None:
    # A suite started in the background of a shell without job control
    # inherits SIGINT ignored, and Python (ours and plain python alike) then
    # ignores Ctrl-C: the script slept its full minute and exited. A terminal
    # leaves SIGINT at its default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_ends_by_sigint_and_still_writes_an_interrupted_report(tmp_path):
    report = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "fitlab.explain", "--report", str(report), "sleeps.py"],
                            cwd=CLI, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_as_in_a_terminal)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGINT
    assert json.loads(report.read_text())["status"] == "interrupted"
    assert err.strip().splitlines()[-1] == "KeyboardInterrupt" and OURS not in err


def test_unwritable_report_is_refused_before_the_script_runs(tmp_path, forked_explain):
    marker = tmp_path / "ran"
    proc = forked_explain("--report", "/nonexistent/dir/r.json", "marks_and_chdir.py", str(marker), str(tmp_path),
                          cwd=CLI)
    assert proc.returncode == 2 and not marker.exists()
    assert len(proc.stderr.strip().splitlines()) == 1 and "/nonexistent/dir" in proc.stderr


def test_relative_report_is_resolved_against_the_invocation_folder(tmp_path, forked_explain):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = forked_explain("--report", "r.json", str(CLI / "marks_and_chdir.py"), str(tmp_path / "ran"),
                          str(elsewhere), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "finished"
    assert not (elsewhere / "r.json").exists()


def test_dash_m_runs_a_module_as_python_does(tmp_path, forked_explain, forked_python):
    ours = forked_explain("--report", str(tmp_path / "r.json"), "-m", "pkg.train", "a", "b", cwd=CLI)
    alone = forked_python("-m", "pkg.train", "a", "b", cwd=CLI)
    assert ours.stdout == alone.stdout == "argv ['a', 'b'] name __main__\n"
    assert ours.returncode == 1
    report = json.loads((tmp_path / "r.json").read_text())
    train = CLI / "pkg" / "train.py"
    for key, mark in (("saved_at", "saved-here"), ("failed_at", "failed-here")):
        assert Path(report[key][-1]["file"]) == train and report[key][-1]["line"] == marked("cli/pkg/train.py", mark)
    assert report["writes"][0]["frames"][-1]["line"] == marked("cli/pkg/train.py", "written-here")


def test_inplace_error_in_a_thread_is_explained(tmp_path):
    # Real processes: a thread's error, printed by Python's threading.excepthook, and the exit after it.
    ours, alone = cli("--report", str(tmp_path / "r.json"), "thread_error.py"), python("thread_error.py")
    # Python prints the thread's traceback and exits 0; so does the CLI, with the report after it.
    assert ours.returncode == alone.returncode == 0 and ours.stdout == alone.stdout == "main done\n"
    assert ours.stderr.startswith(alone.stderr.rstrip("\n").split("RuntimeError: one of")[0])
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "inplace_error"
    for key, mark in (("saved_at", "saved-here"), ("failed_at", "failed-here")):
        assert report[key][-1]["line"] == marked("cli/thread_error.py", mark)
    assert report["writes"][0]["frames"][-1]["line"] == marked("cli/thread_error.py", "written-here")
    assert OURS not in ours.stderr


def test_anomaly_modes_trace_of_the_forward_call_is_pythons(tmp_path):
    # Real processes: the trace is the whole stack at the forward call (a fork's would hold the server's).
    ours, alone = cli("--report", str(tmp_path / "r.json"), "anomaly.py"), python("anomaly.py")
    assert ours.returncode == alone.returncode == 1
    assert "Traceback of forward call that caused the error:\n  File" in alone.stderr
    assert "nn/modules/module.py" in alone.stderr.replace(os.sep, "/")  # torch's frames stay, as python's
    assert ours.stderr.startswith(alone.stderr.rstrip("\n")) and OURS not in ours.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["saved_at"][-1]["line"] == marked("cli/anomaly.py", "saved-here")


@pytest.mark.parametrize("script", ["cli/excepthook.py", "ddp_augassign.py"])
def test_a_scripts_own_excepthook_prints_its_traceback_as_under_python(tmp_path, forked_explain, forked_python,
                                                                        script):
    # excepthook.py's own hook; torch.distributed's (2.4 and newer) prefixes each line with the rank.
    ours = forked_explain("--report", str(tmp_path / "r.json"), str(SCRIPTS / script), cwd=CLI)
    alone = forked_python(str(SCRIPTS / script), cwd=CLI)
    assert ours.returncode == alone.returncode == 1 and OURS not in ours.stderr
    assert ours.stderr.startswith(alone.stderr.rstrip("\n")) and "Traceback" in alone.stderr
    if script == "cli/excepthook.py":  # the hook's lines only, the cause's traceback among them
        assert all(line.startswith("[hooked] ") for line in alone.stderr.splitlines())
        assert alone.stderr.count("Traceback (most recent call last)") == 2
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["traceback"] == alone.stderr
    assert report["writes"][0]["frames"][-1]["line"] == marked(script, "written-here")


def test_a_scripts_excepthook_that_raises_prints_as_under_python(tmp_path):
    # Real processes: python prints the hook's output, "Error in sys.excepthook", its error and
    # the original traceback (a fork's runner would let the hook's error end it instead).
    ours = cli("--report", str(tmp_path / "r.json"), "excepthook_raises.py")
    alone = python("excepthook_raises.py")
    assert ours.returncode == alone.returncode == 1 and OURS not in ours.stderr
    head, original = alone.stderr.split("\nOriginal exception was:\n")
    assert head.startswith("[hooked] RuntimeError\nError in sys.excepthook:\n")
    assert head.endswith("KeyError: 'handler'\n") and "# hook-fails-here" in head
    assert original.startswith("Traceback") and "expected version 0 instead" in original
    assert ours.stderr.startswith(alone.stderr)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["traceback"] == alone.stderr
    assert report["writes"][0]["frames"][-1]["line"] == marked("cli/excepthook_raises.py", "written-here")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_ends_as_pythons_and_the_parent_reports(tmp_path):
    ours, alone = cli("--report", str(tmp_path / "r.json"), "fork_child.py"), python("fork_child.py")
    assert ours.returncode == alone.returncode == 0
    assert ours.stdout == alone.stdout == "child exit 1\n"
    # The child prints Python's traceback only (no report, no frames of ours).
    assert ours.stderr == alone.stderr
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "finished"


@pytest.mark.parametrize("version", ["2.0.1", "1.13.1+cu117"])
def test_a_torch_below_the_range_is_refused_in_one_line(monkeypatch, capsys, version):
    import torch

    from fitlab.explain.__main__ import main
    monkeypatch.setattr(torch, "__version__", version)
    assert main([str(SCRIPTS / "finishes_clean.py")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"({version})" in err and "torch>=2.1" in err


@pytest.mark.parametrize("target", ["sub/paths.py", "sub"], ids=["script", "folder"])
@pytest.mark.parametrize("safe", [False, True], ids=["plain", "python -P"])
def test_the_script_sees_the_sys_path_python_gives_it_not_the_tools_own_folder(tmp_path, safe, target):
    # A real process: the claim is what python put on sys.path for the tool as it started
    # (under -P, none for a script, a folder all the same).
    (tmp_path / "sub").mkdir()
    for name in ("paths.py", "__main__.py"):
        (tmp_path / "sub" / name).write_text("import json, sys\nprint(json.dumps(sys.path))\n")
    flags = ["-P"] if safe else []
    ours = subprocess.run([sys.executable, *flags, "-m", "fitlab.explain", target], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=240, check=False)
    alone = subprocess.run([sys.executable, *flags, target], cwd=tmp_path, env=ENV,
                           capture_output=True, text=True, timeout=240, check=False)
    assert ours.returncode == alone.returncode == 0, ours.stderr
    assert json.loads(ours.stdout) == json.loads(alone.stdout)
    assert str(tmp_path) not in json.loads(ours.stdout)
