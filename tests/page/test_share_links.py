"""Share links and garbage in the URL, through AppTest's query parameters."""

import pytest
from streamlit.proto.Block_pb2 import Block as BlockProto

from fitlab import Config, train
from fitlab.config import SETTINGS
from fitlab.weights import parameter_matrix
from tests.page.helpers import loss_charts
from tests.page.helpers import open_page as open_link
from ui.share import IGNORED_HEADLINE, SHOWN_CHARS, SHOWN_PARTS, ignored_lines, url_problems
from ui.sidebar import DRAWN_FIRST
from ui.words import ADVANCED, FIELD_LABELS, MAIN, SETTING_WORDS, SIDEBAR_FIELDS

KEYS = SIDEBAR_FIELDS  # the settings the sidebar shows and the URL holds


def page_config(at) -> Config:
    return Config(**{k: at.session_state[k] for k in KEYS})


def test_a_link_opens_its_run():
    at = open_link(width="7", shared_repeats="3", lr="0.05", batch_size="10", n_train="40",
                   epochs="30", seed="4", tied="false")
    assert not at.exception and not at.error and not at.warning
    expected = Config(width=7, shared_repeats=3, lr=0.05, batch_size=10, n_train=40, epochs=30,
                      seed=4, tied=False)
    assert page_config(at) == expected
    run = train(expected)
    assert at.dataframe[1].value.equals(parameter_matrix(run.student_params))
    assert at.metric[0].value == f"{run.history.train_loss.iloc[-1]:.4g}"


def test_a_link_to_a_wide_stop_of_the_width_slider_opens_it():
    at = open_link(width="48", lr="0.02")
    assert not at.exception and not at.error and not at.warning
    assert at.select_slider(key="width").value == 48
    assert page_config(at) == Config(width=48, lr=0.02)


def test_a_link_between_the_sliders_stops_opens_its_values_as_they_are():
    # Old links (the learning rate was a number box) and sweep cells hold values between the stops:
    # each is a stop of its own while in use, so the link and the address bar stay the run on screen.
    at = open_link(lr="0.015", width="17")
    assert not at.exception and not at.error and not at.warning
    assert page_config(at) == Config(lr=0.015, width=17)
    lr = at.select_slider(key="lr")
    assert lr.options[lr.options.index("0.01"):][:3] == ["0.01", "0.015", "0.02"]
    assert "17" in at.select_slider(key="width").options
    lr.set_value(0.02).run()
    assert at.select_slider(key="lr").value == 0.02 and "0.015" not in at.select_slider(key="lr").options
    assert not at.exception and page_config(at) == Config(lr=0.02, width=17)


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_a_link_with_detach_off_opens_the_lesson():
    # 3 epochs: the lesson's fix gallery trains its fixes for as many.
    at = open_link(detach="false", width="7", epochs="3")
    assert not at.exception
    assert "[torch.FloatTensor [7, 1]]" in at.error[0].value


def ignored_text(at) -> str:
    """The bad-link warning's list of ignored parts (plain text), after
    checking that the warning itself is the page's own words only."""
    assert len(at.warning) == 1 and at.warning[0].value == IGNORED_HEADLINE
    assert len(at.text) == 1
    return at.text[0].value


@pytest.mark.parametrize("params,field", [
    ({"width": "abc"}, "width"), ({"lr": "-1"}, "lr"), ({"width": "99999"}, "width"),
    ({"lr": "nan"}, "lr"), ({"seed": "1.5"}, "seed"), ({"detach": "maybe"}, "detach"),
    ({"width": ["3", "4"]}, "width"), ({"epochs": ""}, "epochs"),
    ({"batch_size": "20", "n_train": "10"}, "batch_size"), ({"colour": "red"}, "colour"),
    ({"width": "2.5"}, "width"),
])
@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
def test_garbage_in_the_url_warns_and_the_page_works(params, field):
    at = open_link(**params)
    assert not at.exception and not at.error
    text = ignored_text(at)
    assert f"• {field}" in text
    assert len(loss_charts(at)) == 1 and len(at.dataframe) == 2
    # The page runs a valid Config and says, in words, which value it used instead.
    config = page_config(at)
    if field in KEYS:
        value = getattr(config, field)
        shown = ("on" if value else "off") if isinstance(value, bool) else f"{value:g}"
        default = getattr(Config(), field) == value
        assert f"using {'the default, ' if default else ''}{shown}." in text
    # The address bar is the link to the run on screen again: no ignored key stays.
    assert set(at.query_params) <= set(KEYS)
    if field in at.query_params:
        assert at.query_params[field] in (str(value), f"{value:g}")


def test_the_pages_own_session_keys_in_a_link_are_no_settings():
    """The run log and a heavy job's owner live in session state, beside the
    widgets: in a link they are unknown keys, not settings with odd values."""
    at = open_link(seed="4242", run_log="1", job_owner="1")  # a new run: a heavy job, owned by the session
    assert not at.exception and "job_owner" in at.session_state
    text = ignored_text(at)
    assert "• run_log=1: not a setting of this page; ignored." in text
    assert "• job_owner=1: not a setting of this page; ignored." in text


def test_the_address_bar_keeps_what_it_used_and_drops_what_it_ignored():
    at = open_link(colour="red", seed=["3", "4"], lr="0.2")
    assert not at.exception
    assert dict(at.query_params) == {"lr": "0.2", "seed": "4"}
    assert page_config(at) == Config(lr=0.2, seed=4)
    assert "• seed=3 (and 1 more): given 2 times; using 4." in ignored_text(at)


PHISHING = ("`\n\n---\n\n**RuntimeError: your session expired. "
            "[Log in again](https://evil.example/login)**\n\n`")
IMAGE = "![pix](http://127.0.0.1:9/pix.png)"
HEADING = "x\n# You have been hacked"


def markdown_shown(at) -> list[str]:
    """Every text of the page that Streamlit renders as markdown."""
    return [e.value for kind in ("markdown", "warning", "error", "info", "success", "caption", "title",
                                 "header", "subheader") for e in getattr(at, kind)]


@pytest.mark.parametrize("params,shown", [
    ({"width": PHISHING}, "width=`\\n\\n---\\n\\n**RuntimeError: your session expired. [Log in ag"),
    ({"width": IMAGE}, f"width={IMAGE}"),
    ({IMAGE: "1"}, f"{IMAGE}=1"),
    ({HEADING: "1"}, "x\\n# You have been hacked=1"),
])
def test_text_from_the_url_is_shown_as_plain_text_only(params, shown):
    at = open_link(**params)
    assert not at.exception
    assert shown in ignored_text(at)
    for text in markdown_shown(at):
        assert not any(part in text for part in ("evil.example", "pix.png", "hacked"))


def test_a_huge_value_and_a_flood_of_keys_are_cut_short():
    at = open_link(width="9" * 100_000, **{f"k{i}": "v" for i in range(999)})  # 1,000 parts: Streamlit ignores more
    assert not at.exception and len(loss_charts(at)) == 1
    lines = ignored_text(at).splitlines()
    assert len(lines) == SHOWN_PARTS + 1 and len(ignored_text(at)) < 2000
    assert lines[0].startswith("• width=" + "9" * SHOWN_CHARS + "… (cut short)")
    assert lines[-1] == "• … and 992 more parts of the link, not settings of this page or not usable; ignored."
    assert dict(at.query_params) == {}


SWEEP_HEADER = "Sweep: the learning rate, and how much luck matters"


def tab_bar(at, key: str):
    """The message of the tab bar `key` to the browser."""
    def bars(node):
        proto = getattr(node, "proto", None)
        if isinstance(proto, BlockProto) and proto.WhichOneof("type") == "tab_container" \
                and proto.tab_container.id.endswith(f"-{key}"):
            yield proto.tab_container
        for child in getattr(node, "children", {}).values():
            yield from bars(child)

    (bar,) = bars(at.main)
    return bar


def test_a_link_opens_its_tab_and_a_switch_is_written_to_the_url():
    at = open_link(view="Sweep", lr="0.02")
    assert not at.exception and not at.warning
    assert at.session_state["view"] == "Sweep"
    assert SWEEP_HEADER in [h.value for h in at.header]    # the Sweep tab drawn, not Training's
    assert dict(at.query_params) == {"view": "Sweep", "lr": "0.02"}
    # A click on a tab is written to the URL by the browser (Streamlit's frontend, from these;
    # tests/e2e/test_history.py sees it): under "view", the first tab left out.
    bar = tab_bar(at, "view")
    assert (bar.query_param_key, bar.default_tab_label) == ("view", "Training")
    # The page's own switch: a sweep cell loaded opens its Training tab, the first: a clean URL.
    at.text_input(key="sweep_lr").set_value("0.01, 0.05")
    at.text_input(key="sweep_seed").set_value("0, 3")
    at.button(key="sweep_run").click().run()
    at.selectbox(key="sweep_cell").select_index(3).run()
    at.button(key="sweep_load").click().run()
    assert not at.exception and at.session_state["view"] == "Training"
    assert dict(at.query_params) == {"lr": "0.05", "seed": "3"}


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_a_lesson_link_opens_its_tab():
    at = open_link(detach="false", epochs="3", failure_view="Compare runs")
    assert not at.exception and not at.warning
    assert at.session_state["failure_view"] == "Compare runs"
    assert "Compare runs" in [h.value for h in at.header]
    bar = tab_bar(at, "failure_view")
    assert (bar.query_param_key, bar.default_tab_label) == ("failure_view", "Inside the failure")


@pytest.mark.parametrize("value", ["Nope", "sweep", "", IMAGE, HEADING, PHISHING])
def test_a_tab_the_page_does_not_have_opens_training_and_says_so_in_plain_text(value):
    at = open_link(view=value, seed="4")
    assert not at.exception and not at.error
    assert at.session_state["view"] == "Training" and len(loss_charts(at)) == 1
    shown = value.replace("\n", "\\n")[:SHOWN_CHARS]
    assert f"• view={shown}" in ignored_text(at)
    assert "not a tab of this page; opening Training." in ignored_text(at)
    for text in markdown_shown(at):
        assert not any(part in text for part in ("evil.example", "pix.png", "hacked", "Nope"))
    assert dict(at.query_params) == {"seed": "4"}


def test_the_warning_is_shown_once_then_the_page_moves_on():
    at = open_link(width="abc")
    assert at.warning
    at.select_slider(key="width").set_value(6).run()
    assert not at.warning and not at.exception


@pytest.mark.slow  # the refusal trains its offers (affordable.tried_offers): about 9 s of CPU
def test_a_link_over_the_work_budget_is_refused_in_words():
    at = open_link(epochs="2000", width="256", shared_repeats="8")
    assert not at.exception
    assert len(at.error) == 1
    message = at.error[0].value
    assert message.startswith("These settings are too much work for this page")
    # In the sidebar's labels, not Config's field names.
    for part in ("**Advanced › Epochs** 2000", "**Hidden width** 256", "**Shared layer repeats** 8"):
        assert part in message
    assert "shared_repeats" not in message and "epochs=" not in message
    assert not loss_charts(at)
    # Nothing has run yet: no empty "Compare runs" under the message.
    assert not at.multiselect and "Compare runs" not in [h.value for h in at.header]


def test_the_field_labels_are_the_sidebars():
    at = open_link()
    labels = {w.label for kind in ("slider", "select_slider", "number_input", "checkbox", "radio")
              for w in getattr(at.sidebar, kind)}
    for field, label in FIELD_LABELS.items():
        if field in KEYS:
            assert label.removeprefix("Advanced › ") in labels, (field, label)


def test_a_diverging_link_says_so_and_charts_the_finite_part():
    at = open_link(lr="5", shared_repeats="8")
    assert not at.exception and not at.error
    diverged = [w.value for w in at.warning if "diverged at epoch" in w.value]
    assert len(diverged) == 1
    assert len(loss_charts(at)) == 1 and len(at.dataframe) == 2
    at.toggle(key="log_scale").set_value(True).run()
    assert not at.exception and len(loss_charts(at)) == 1


def test_url_problems_names_each_ignored_part():
    settings = {"width": 5, "lr": 0.01, "detach": True}
    assert url_problems({"width": ["5"], "lr": ["0.010"], "detach": ["TRUE"]}, settings) == []
    problems = url_problems({"width": ["abc"], "lr": ["inf"], "detach": ["1"], "x": ["y"]}, settings)
    assert [(p.key, p.kind, p.used, p.default) for p in problems] == [
        ("width", "invalid", 5, True), ("lr", "invalid", 0.01, True), ("detach", "invalid", True, True),
        ("x", "unknown", None, False)]
    assert ignored_lines(problems) == [
        "• width=abc: not a value this setting can take; using the default, 5.",
        "• lr=inf: not a value this setting can take; using the default, 0.01.",
        "• detach=1: not a value this setting can take; using the default, on.",
        "• x=y: not a setting of this page; ignored."]


def sidebar_widgets(node) -> list:
    """The sidebar's widgets bound to the URL, in the order the page shows them."""
    found = [node] if getattr(getattr(node, "proto", None), "query_param_key", "") else []
    for child in getattr(node, "children", {}).values():
        found += sidebar_widgets(child)
    return found


def test_the_sidebar_shows_one_widget_per_setting_in_the_words_order_each_bound_to_its_field():
    at = open_link()
    widgets = sidebar_widgets(at.sidebar)
    assert [w.proto.query_param_key for w in widgets] == list(SIDEBAR_FIELDS)
    for widget in widgets:
        words = SETTING_WORDS[widget.key]
        assert widget.key == widget.proto.query_param_key
        assert (widget.label, widget.proto.help or None) == (words.label, words.help)
    assert set(SETTING_WORDS) == set(SETTINGS) and len(SETTING_WORDS) == len(SETTINGS)
    assert set(SIDEBAR_FIELDS) == {f for f, w in SETTING_WORDS.items() if w.group in (MAIN, ADVANCED)}
    (expander,) = [e for e in at.sidebar.get("expander") if e.label == ADVANCED]
    assert [w.key for w in sidebar_widgets(expander)] == [f for f in SIDEBAR_FIELDS
                                                          if SETTING_WORDS[f].group == ADVANCED]


def test_a_widget_whose_bound_follows_another_is_drawn_after_it():
    drawn = [f for group in DRAWN_FIRST for f in SIDEBAR_FIELDS if SETTING_WORDS[f].group == group]
    assert sorted(drawn) == sorted(SIDEBAR_FIELDS)
    following = {f: SETTINGS[f].at_most[0] for f in drawn if SETTINGS[f].at_most}
    assert following == {"batch_size": "n_train", "n_train": "n_samples"}
    for field, other in following.items():
        assert other not in drawn or drawn.index(other) < drawn.index(field), (field, other)
