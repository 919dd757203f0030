import cProfile
import os
import sys

sys.path.insert(0, "/work/wt-34")
_p = cProfile.Profile()
_p.enable()
_g = {"__name__": "__main__", "__file__": "/work/wt-34/streamlit_app.py"}
try:
    exec(compile(open("/work/wt-34/streamlit_app.py").read(), "/work/wt-34/streamlit_app.py", "exec"), _g)
finally:
    _p.disable()
    _p.dump_stats(os.environ.get("PROF_OUT", "/tmp/page.prof"))
