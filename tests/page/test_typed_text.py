"""What a visitor types or pastes: shown as inert text when the page
explains why it cannot use it, and a whole pasted log is searched."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from fitlab import Config, train
from fitlab.explain.decode import MAX_CHARS
from tests.page.helpers import open_page

MARKUP = ("0.01, ![i](http://127.0.0.1:9/i.png) **bold** [link](http://127.0.0.1:9/) "
          "<img src=http://127.0.0.1:9/j.png> :red[x]")


def rendered_as_markdown(at: AppTest) -> str:
    """Everything the page hands the browser as markdown."""
    kinds = (at.markdown, at.error, at.warning, at.info, at.caption, at.success)
    return "\n".join(element.value for elements in kinds for element in elements)


def test_markup_typed_in_a_sweep_box_is_shown_as_text():
    at = open_page(timeout=120)
    at.session_state["view"] = "Sweep"
    at.run()
    at.text_input(key="sweep_lr").set_value(MARKUP)
    at.button(key="sweep_run").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == ["This sweep cannot run:"]
    assert any("![i](http://127.0.0.1:9/i.png)" in t.value and "<img" in t.value for t in at.text)
    words = rendered_as_markdown(at)
    for bit in ("](http", "<img", "**bold**", ":red["):
        assert bit not in words


def _decode(at, text: str) -> None:
    """Paste `text` into the decoder's form and press Decode."""
    at.text_area(key="decode_message").input(text)
    next(b for b in at.button if b.label == "Decode").click().run()


def test_a_long_pasted_log_is_searched_for_the_message():
    message = train(Config(detach=False)).error.message
    noise = "INFO step 12 loss 0.318 lr 0.01 " * 20 + "\n"
    log = noise * (MAX_CHARS // len(noise) * 9 // 10) + f"RuntimeError: {message}\n" + noise * 50
    assert 0.9 * MAX_CHARS < len(log) < MAX_CHARS
    at = open_page(timeout=120)
    _decode(at, log)
    assert not at.exception and not at.warning
    assert "`is at version 2; expected version 1`" in rendered_as_markdown(at)


def test_a_paste_longer_than_the_box_reads_says_so():
    message = train(Config(detach=False)).error.message
    noise = "x" * 99 + "\n"
    at = open_page(timeout=120)
    box = at.text_area(key="decode_message")
    # A browser cuts a paste at the box's max_chars; what it sends is this:
    assert box.proto.max_chars == MAX_CHARS + 1
    _decode(at, (noise * (MAX_CHARS // 100) + message)[:box.proto.max_chars])
    assert not at.exception
    assert len(at.warning) == 1 and "longer than this box reads (1,000,000 characters)" in at.warning[0].value
    assert not [i for i in at.info if "That is not this error" in i.value]  # it was not read
    _decode(at, (message + noise * (MAX_CHARS // 100))[:MAX_CHARS + 1])
    assert len(at.warning) == 1  # still too long, but the message is in what was read
    assert "`is at version 2; expected version 1`" in rendered_as_markdown(at)
