"""The lesson's opening picture: the teacher's forward pass, the tensor it
saved that torch's message names, its version counter moving at the
re-initialisation, and the student's backward stopping there. Three moments,
stepped in the browser by the chart's own buttons (a Vega-Lite parameter,
"moment"): no rerun.

Its rows are fitlab.failure.story.story_rows of a real replay."""

from __future__ import annotations

import textwrap

import altair as alt
import pandas as pd

from fitlab.figures.theme import FONT_PX, INK

STALE = "#c62828"     # 5.6:1 on white
ROW_PX = 24
CAPTION_LINES = 3
CAPTION_CHARS = 44    # a phone's 350 px at 14 px
MOMENTS = ("1 forward", "2 re-init", "3 backward")


def captions(rows: pd.DataFrame) -> list[str]:
    """What each moment shows, in words, about the tensor torch names (or
    the first stale one)."""
    named = rows[rows.culprit] if rows.culprit.any() else rows[rows.stale]
    if named.empty:
        return ["1 · The teacher's forward pass saves tensors for backward.",
                "2 · Re-initialising the net in place writes its parameters.",
                "3 · The student's loss.backward() finds no stale saved tensor."]
    t = named.iloc[0]
    tensor = f"{t.saved} {t['shape']}"
    return [f"1 · The teacher's forward pass saves {tensor} for backward, at version {t.saved_version}.",
            f"2 · Making the student re-initialises that same net in place: the write moves "
            f"{t.saved}'s version {t.saved_version} → {t.version}.",
            f"3 · The student's loss.backward() walks into the labels' graph and stops at "
            f"{t.saved}: it expected version {t.saved_version} and found {t.version}."]


def story_chart(rows: pd.DataFrame) -> alt.LayerChart:
    """The forward pass top to bottom, one row per operation (rows of
    fitlab.failure.story.story_rows), each saved parameter tensor beside its
    operation with its version; buttons step through the three moments."""
    n = len(rows)
    moment = alt.param(name="moment", value=1, bind=alt.binding_radio(
        options=[1, 2, 3], labels=list(MOMENTS), name="step: "))
    data = rows.assign(row=rows.step + 0.5)
    rows_scale = alt.Scale(domain=[0, n + CAPTION_LINES + 1.2], nice=False, reverse=True)

    def y(field: str) -> alt.Y:   # every layer's rows on one scale, with no axis (conflicting axes draw nothing)
        return alt.Y(field, axis=None, scale=rows_scale)

    base = alt.Chart(data).encode(y=y("row:Q"))
    reached = "(moment < 3 || datum.reached)"
    operations = base.mark_text(align="left", x=28, fontSize=FONT_PX).encode(
        text="operation:N",
        opacity=alt.condition(reached, alt.value(1), alt.value(0.35)),
        tooltip=[alt.Tooltip("grad_fn:N", title="autograd node")])
    bumped = "datum.stale && moment >= 2"
    label = base.transform_calculate(
        label="datum.saved + ' ' + datum.shape + '   v' + (moment >= 2 ? datum.version : datum.saved_version)"
              " + (moment >= 2 && datum.stale ? ' (saved at v' + datum.saved_version + ')' : '')")
    saved = [label.transform_filter(f"datum.saved != '' && {'' if named else '!'}datum.culprit").mark_text(
        align="left", x=140, fontSize=FONT_PX, fontWeight="bold" if named else "normal").encode(
        text="label:N",
        color=alt.condition(bumped, alt.value(STALE), alt.value(INK)),
        opacity=alt.condition(reached, alt.value(1), alt.value(0.35))) for named in (False, True)]
    links = base.transform_filter("datum.saved != ''").mark_rule(x=118, x2=134, strokeDash=[3, 2]).encode(
        color=alt.condition(bumped, alt.value(STALE), alt.value("#6b6b6b")))
    # The forward pass runs down the left edge; backward, at moment 3, back up it to where it stops.
    forward = alt.Chart(pd.DataFrame({"first": [0.3], "last": [n - 0.2]})).mark_rule(
        x=10, color="#6b6b6b", strokeWidth=2).encode(y=y("first:Q"), y2="last:Q")
    stop = rows.step[rows.reached].min() if rows.reached.any() else 0
    backward = alt.Chart(pd.DataFrame({"from": [n + 0.1], "to": [stop + 0.5], "mark": ["✗"]}))
    back_line = backward.mark_rule(x=18, color=STALE, strokeWidth=3).encode(
        y=y("from:Q"), y2="to:Q", opacity=alt.condition("moment >= 3", alt.value(1), alt.value(0)))
    back_stop = backward.mark_text(x=18, dx=0, fontSize=FONT_PX + 4, fontWeight="bold", color=STALE).encode(
        y=y("to:Q"), text="mark:N",
        opacity=alt.condition("moment >= 3", alt.value(1), alt.value(0)))
    lines = ["\n".join(textwrap.wrap(c, CAPTION_CHARS)) for c in captions(rows)]
    words = pd.DataFrame({"moment": [1, 2, 3], "line": lines, "row": n + 0.6})
    caption = alt.Chart(words).transform_filter("datum.moment == moment").mark_text(
        align="left", baseline="top", x=0, fontSize=FONT_PX, lineHeight=19, lineBreak="\n").encode(
        y=y("row:Q"), text="line:N")
    return alt.layer(forward, links, operations, *saved, back_line, back_stop, caption).add_params(moment).properties(
        width="container", height=ROW_PX * (n + CAPTION_LINES + 1),
        title=alt.Title("The labels' graph: what the teacher's forward pass saved", anchor="start"))
