"""fitlab: watch a teacher–student fit with a tied layer train, and see why
PyTorch's in-place error happens. Widgets in, pictures out."""

import time

if __name__ == "__mp_main__":
    # A worker process (fitlab.serving.isolation) is spawned while this page is
    # Streamlit's __main__, and so imports it first, under this name: nothing for it here.
    pass
elif __name__ != "__main__":
    # `streamlit run streamlit_app.py` finds this st.App and serves the file as
    # the page; the server warms up as it starts (ui/warmup.py). Streamlit runs
    # the page itself as __main__, AppTest too.
    import streamlit as st

    from ui.warmup import warm_up

    app = st.App(__file__, lifespan=warm_up)
else:
    import streamlit as st

    from ui.browser import browser_script
    from ui.decode import decode_section
    from ui.phone import narrow_screen_style, result_in_view
    from ui.share import tabs_in_url, warn_about_url
    from ui.sidebar import read_config, refusal_section
    from ui.state import drawing, run_with_progress
    from ui.warmup import page_ran
    from ui.words import intro_html, starting

    started = time.monotonic()  # when the person's change reached the page
    with drawing():  # a few page runs draw at once, server-wide (ui/state.py)
        st.set_page_config(page_title="fitlab", page_icon="📉", layout="wide")
        narrow_screen_style()
        st.title("fitlab")
        intro = st.container(key="intro")  # filled once the sidebar has read the settings
        decode_section()

        url_note = st.container()  # a bad link's warning: in the main area, seen on a phone too
        config = read_config()
        browser_script()
        result_in_view()
        intro.html(intro_html(config, detach_ticked=st.session_state.get("detach", True)))
        starting_note = st.empty()   # said at once: the tabs' imports and the run come next
        if config is not None:
            starting_note.caption(starting(config))
        # The tabs need torch and the charts. The page's frame above does not,
        # so on a fresh server it reaches the browser, which draws it and loads
        # its widgets' code, while the warm-up still imports them (ui/warmup.py).
        from ui.tabs.compare import compare_section, remember, remembered_run_shown
        from ui.tabs.failure import error_panel, failure_diagnosis, fix_gallery
        from ui.tabs.gradients import tied_gradient_section
        from ui.tabs.student import student_section
        from ui.tabs.sweep import opened_from_sweep, sweep_section
        from ui.tabs.training import loss_section, parameter_tables
        from ui.tabs.watch import watch_section

        if config is None:
            # The page stays whole: why these settings do not run, and the nearest
            # that do; earlier runs stay comparable.
            refused, compare = tabs_in_url(["Training", "Compare runs"], key="refused_view")
            with refused:
                refusal_section()
        else:
            run = run_with_progress(config)
            starting_note.empty()
            remember(run, started)
            if run.error is not None:
                error_panel(run)  # the lesson comes first, torch's own words
                inside, gallery, compare = tabs_in_url(["Inside the failure", "Fix gallery", "Compare runs"],
                                                       key="failure_view")
                with inside:
                    if inside.open:
                        failure_diagnosis(config)
                        parameter_tables(run)
                with gallery:
                    if gallery.open:  # trains every fix: only when asked for
                        fix_gallery(config)
            else:
                # Tabs rerun the page when switched, so a tab's content is drawn only
                # while it is open: the browser renders one tab, not six (ui/state.py).
                training, watching, student, gradients, compare, sweep = tabs_in_url(
                    ["Training", "Watch it learn", "Student vs teacher", "The shared layer's gradients",
                     "Compare runs", "Sweep"], key="view")
                with training:
                    opened_from_sweep(config)
                    loss_section(run, first_screen=training.open)
                    parameter_tables(run)
                with watching:
                    if watching.open:  # its six pictures are half a page's drawing: only when asked for
                        watch_section(run)
                with student:
                    if student.open:
                        student_section(run)
                with gradients:
                    tied_gradient_section(run, shown=gradients.open)
                with sweep:
                    sweep_section(config, shown=sweep.open)
        with compare:
            compare_section(shown=compare.open)
        warn_about_url(url_note)  # last: every widget has read the URL by now
        if config is not None:
            remembered_run_shown()
        page_ran()
