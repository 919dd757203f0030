"""The user's own lines first: a real PyTorch Lightning GAN (manual optimisation) leads with
the LightningModule's lines, the library's frames collapsed under them; warnings raised by ops
keep the line that ran the op."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import pytest

from fitlab.explain import format_report, run_script
from fitlab.explain.stack import owner

from .test_explain import SCRIPTS, assert_at, marked


@pytest.fixture(scope="module")
def lightning_report():
    # Imported here, not at collection: it costs each worker about 3 s of CPU the other tests do not need.
    pytest.importorskip("pytorch_lightning")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return run_script(str(SCRIPTS / "lightning_gan.py"))


@pytest.mark.slow  # imports pytorch_lightning (about 3 s of CPU) and trains its GAN
def test_lightning_gan_leads_with_the_users_lines(lightning_report):
    report = lightning_report
    assert report.status == "inplace_error" and report.fix.kind == "fresh_forward_after_step"
    script = "lightning_gan.py"
    assert_at(report.saved_at[-1].to_dict(), script, "saved-here")
    assert_at(report.writes[0].frames[-1].to_dict(), script, "written-here")
    assert_at(report.failed_at[-1].to_dict(), script, "failed-here")
    # Lightning's frames between the user's line and torch are summed up, not listed.
    assert [v.package for v in report.writes[0].via] == ["pytorch_lightning"]
    assert [v.package for v in report.failed_via] == ["pytorch_lightning"]
    assert report.writes[0].via[0].frames >= 2
    every = report.saved_at + report.failed_at + report.writes[0].frames
    assert all(owner(f.file) is None and Path(f.file).name == script for f in every)
    # The outer user line that started it all is a caller.
    assert report.saved_at[0].line == marked(script, "fit-here")


@pytest.mark.slow  # its fixture imports pytorch_lightning and trains the GAN: 5 s of CPU in the inner loop
def test_lightning_report_text_collapses_the_library(lightning_report):
    text = format_report(lightning_report)
    start = text.index("\n\n[torch.FloatTensor") + 2
    report_part = text[start:]
    assert f"written at {'lightning_gan.py'}:{marked('lightning_gan.py', 'written-here')}" in report_part
    assert "via pytorch_lightning (" in report_part and "site-packages" not in report_part
    # Python's traceback comes first, as Python prints it, ending with torch's RuntimeError line.
    assert text.index("Traceback (most recent call last)") < start
    assert text[:start].rstrip().splitlines()[-1].startswith("RuntimeError: one of")


def test_warnings_keep_the_line_that_raised_them():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = run_script(str(SCRIPTS / "warns.py"))
    assert report.status == "finished"
    seen = [(Path(w.filename), w.lineno) for w in caught if issubclass(w.category, UserWarning)]
    assert seen == [(SCRIPTS / "warns.py", marked("warns.py", "warned-here")),
                    (SCRIPTS / "warns.py", marked("warns.py", "warned-cpp-here"))]
