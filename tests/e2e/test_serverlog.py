"""The server-log check the browser suite applies, on lines as Streamlit and
Python write them."""

from .serverlog import log_problems

QUIET = """\
2026-12-01 08:00:00,001 INFO streamlit.web.server: You can now view your Streamlit app
  URL: http://127.0.0.1:8501
"""

NOISY = """\
2026-12-01 08:00:01,002 WARNING streamlit.elements.lib.policies: The widget with key "epochs" \
was created with a default value but also had its value set via the Session State API.
Stack (most recent call last):
  File "/x/streamlit_app.py", line 3, in <module>
2026-12-01 08:00:02,003 ERROR streamlit.runtime.scriptrunner: Uncaught app execution
Traceback (most recent call last):
/x/fitlab/figures/charts.py:12: FutureWarning: this will change
"""


def test_a_quiet_log_passes_and_each_kind_of_problem_is_found():
    assert log_problems(QUIET) == []
    found = log_problems(NOISY)
    assert [line.split(" ")[0] if not line[0].isdigit() else line.split(" ")[2] for line in found] == [
        "WARNING", "Stack", "ERROR", "Traceback", "/x/fitlab/figures/charts.py:12:"]
