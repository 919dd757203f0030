"""The Training tab: final losses, the loss chart and its CSV, the
teacher's and the student's parameters."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st

from fitlab import Config
from fitlab.figures.charts import loss_chart
from fitlab.figures.tables import history_csv, history_file_name
from fitlab.fit_that_works import FitThatWorks, fit_that_works, search_seconds
from fitlab.outcome import outcome
from fitlab.run import Run
from fitlab.weights import padding_mask, parameter_matrix
from ui.charts import KEYED_BY_REPR, draw
from ui.sidebar import load_settings
from ui.state import heavy, let_others_draw
from ui.tabs.watch import watch_glance
from ui.words import FIELD_LABELS, loss_change


def divergence_note(run: Run) -> str | None:
    """Markdown saying plainly that and when a run diverged, or None."""
    epoch = run.diverged_at
    if epoch is None:
        return None
    drawn = "epoch 0" if epoch == 1 else f"epochs 0 to {epoch - 1}"
    return (f"**Training diverged at epoch {epoch} and stopped there** (of {run.config.epochs}): the loss "
            f"overflowed to infinity or became NaN, because each SGD step overshot by more than the last "
            f"(learning rate {run.config.lr:g} is too large for this net); more epochs would only give NaN. "
            f"A lower **{FIELD_LABELS['lr']}** trains. The chart draws the finite "
            f"losses ({drawn}) and marks epoch {epoch} in red; the tables and the CSV keep "
            "everything, NaN and inf included.")


def r_squared_text(value: float) -> str:
    """R² as the page shows it: two decimals, or "n/a" when undefined."""
    return "n/a" if math.isnan(value) else f"{value:.2f}"


def fit_note(run: Run) -> tuple[str, bool] | None:
    """(markdown, worse) comparing the final student with the constant
    predictor; worse is True when the student's test MSE is above the
    constant's. None for a diverged run (its losses are not numbers; see
    divergence_note) and for a run that finished no epoch."""
    facts = outcome(run)
    if facts.diverged_at is not None or not facts.trained:
        return None
    base, last = run.baseline, run.history.iloc[-1]
    test_r2 = r_squared_text(base.r_squared(last.test_loss, "test"))
    worse = last.test_loss > base.test_mse
    constant = (f"Predicting the training labels' mean ({base.constant:.4g}) for every row, with no "
                f"training at all, scores test MSE {base.test_mse:.4g} and train MSE {base.train_mse:.4g} "
                "(the dashed lines on the chart)")
    change = f"Its train loss {loss_change(facts)}"
    if facts.near_constant_labels:
        labels = run.student_teacher.labels.astype(np.float64)
        side = "above" if worse else "below"
        return (f"**The teacher's labels are nearly constant here**: they vary by {facts.label_spread:.1g} "
                f"of their size (std {labels.std():.2g} around {labels.mean():.4g}), so there is almost "
                f"nothing to learn, and R² ({test_r2} on the test rows), the error over that tiny "
                f"variation, means little. Compare errors instead: {constant}; the student's test MSE is "
                f"{last.test_loss:.4g}, {side} the constant's, and its train MSE {last.train_loss:.4g}. "
                f"{change}.", worse)
    if facts.loss_rose:
        return (f"**Training made the student worse.** {change}: its steps overshoot at learning rate "
                f"{run.config.lr:g}; a lower **{FIELD_LABELS['lr']}** lets it descend. {constant}; the "
                f"student's test MSE is {last.test_loss:.4g} (test R² {test_r2}).", worse)
    if not worse:
        times = base.test_mse / last.test_loss if last.test_loss > 0 else math.inf
        return (f"{constant}; the student's test MSE is {times:.3g}× lower (test R² {test_r2}).", False)
    config = run.config
    underfit = not facts.fits_training_rows
    train_side = "worse there too" if underfit else "better there"
    rows = plural(config.n_train, "training row")
    if facts.constant_fits_exactly:
        train_side = "where the constant scores 0"
        helps = f"{exact_constant_note(run)} {fitted_rows(run)}"
    elif underfit:
        helps = (f"It has not yet fitted even its own training rows: more epochs ({FIELD_LABELS['epochs']}), "
                 "or a larger learning rate while training stays stable, let it go further.")
    else:
        helps = (f"It fits its {rows} better than the constant but not the "
                 f"{plural(config.n_test, 'test row')}. {fitted_rows(run)}")
    moved_on = (", which says it moved on from its random start, not that it fits"
                if facts.loss_fell and not facts.constant_fits_exactly else "")
    return (f"**The student does worse than a constant.** {constant}. The student's test MSE, "
            f"{last.test_loss:.4g}, is {base.times_constant(last.test_loss, 'test'):.3g}× the constant's "
            f"(test R² {test_r2}); on the training rows it scores {last.train_loss:.4g}, {train_side}. "
            f"{change}{moved_on}. "
            f"{helps}", True)


def plural(n: int, thing: str) -> str:
    """ "1 test row", "150 test rows"."""
    return f"{n:,} {thing}{'' if n == 1 else 's'}"


def training_error(run: Run) -> float:
    """The student's final root mean squared error on its training rows,
    over the labels' root mean square."""
    labels = run.student_teacher.labels.astype(np.float64)
    return math.sqrt(run.history.train_loss.iloc[-1]) / math.sqrt(float(np.mean(labels ** 2)))


def exact_constant_note(run: Run) -> str:
    """A sentence for training labels all equal (one training row, say), where
    the constant predictor scores 0 and no student can beat it: how close the
    student came, in the labels' own terms."""
    exact = ("predicting that row's label fits it exactly" if run.config.n_train == 1 else
             "with the training labels all equal, their mean fits them exactly")
    return (f"On its {plural(run.config.n_train, 'training row')} the student is off by "
            f"{training_error(run):.2g} of the labels' size, but {exact}, so no student beats the "
            "constant there.")


def fitted_rows(run: Run) -> str:
    """Why a student fitted to its training rows may miss the test rows, as
    far as these settings show: more weights than rows, whether more rows
    can be had, and a verdict resting on one test row."""
    config, weights = run.config, len(run.student_params)
    said = []
    if config.n_train < weights:
        said.append(f"{weights} weights have many ways to fit {plural(config.n_train, 'row')}.")
    if config.n_train < config.n_samples - 1:
        said.append(f"More training rows ({FIELD_LABELS['n_train']}) constrain it more.")
    if config.n_test == 1:
        said.append("With one test row, this verdict rests on a single row's error.")
    return " ".join(said)


def blog_figure_note(run: Run) -> str | None:
    """One sentence on the blog's test figure versus the true test MSE; None
    when there is no figure to compare (a diverged run's is NaN or inf)."""
    config = run.config
    if run.blog_test_loss is None or not math.isfinite(run.blog_test_loss):
        return None
    n_batches = math.ceil(config.n_test / config.batch_size)
    true_mse = run.history.test_loss.iloc[-1]
    if n_batches == 1:
        return (f"The test loss here is the true mean squared error over the {config.n_test} test "
                f"rows ({true_mse:.4g}); with one test batch, the blog's script prints the same "
                f"figure ({run.blog_test_loss:.4g}).")
    return (f"The test loss here is the true mean squared error over the {config.n_test} "
            f"test rows ({true_mse:.4g}); the blog's script would print "
            f"{run.blog_test_loss:.4g}, because it adds up the {n_batches} per-batch means "
            f"instead of averaging them.")


def engine_note(run: Run) -> str:
    """One sentence: which engine trained the run, and where the other is."""
    if run.engine == "fast":
        return ("Trained by the **fast** engine: the same math as autograd, written out by hand "
                f"in numpy. The **autograd** engine (torch, the blog's way) is under {FIELD_LABELS['engine']}.")
    if not run.config.detach:
        return ("Trained by the **autograd** engine: with the labels attached only torch's "
                "backward() can show the blog's error, so the fast engine does not apply.")
    return ("Trained by the **autograd** engine: torch, the blog's way. The **fast** engine "
            f"(the same math by hand in numpy) is under {FIELD_LABELS['engine']}.")


def verdict_line(run: Run) -> str:
    """Markdown, one line: how the run did against a constant predictor, in
    its numbers (fit_note below says why, at length)."""
    epoch = run.diverged_at
    if epoch is not None:
        return (f"**Diverged at epoch {epoch}**, where training stopped: learning rate {run.config.lr:g} "
                "is too large for this net.")
    facts = outcome(run)
    if not facts.trained:
        return "**No epoch trained.**"
    base, last = run.baseline, run.history.iloc[-1]
    r2 = r_squared_text(base.r_squared(last.test_loss, "test"))
    if facts.near_constant_labels:
        return f"**The labels are nearly constant here**: test R² {r2} means little (below)."
    if last.test_loss > base.test_mse:
        return (f"**Worse than a constant** on the test rows: test R² {r2}, test MSE "
                f"{base.times_constant(last.test_loss, 'test'):.3g}× a constant's.")
    times = base.test_mse / last.test_loss if last.test_loss > 0 else math.inf
    return f"**Better than a constant** on the test rows: test R² {r2}, test MSE {times:.3g}× lower."


_FOUND = "fit_that_works_found"   # the search's answer for the config it searched, shown on its page


def _found_note(found: FitThatWorks | None, config: Config) -> str:
    if found is None:
        return "No nearby settings (fewer shared-layer uses, another learning rate, more epochs) fit better."
    changed = ", ".join(f"{FIELD_LABELS[f]} {getattr(config, f):g} → {v:g}" for f, v in found.changes(config).items())
    return (f"A fit that works, found by training the nearby settings: {changed}, test R² "
            f"{r_squared_text(found.start_r2)} → {found.test_r2:.2f}.")


def verdict_section(run: Run, line: str) -> None:
    """The verdict in one `line` (verdict_line) and, when the student does worse than a
    constant or diverged, one click to a fit that works (fitlab.fit_that_works)."""
    worse = run.diverged_at is not None or line.startswith("**Worse")
    with st.container(key="verdict", horizontal=True, vertical_alignment="center"):
        st.container(key="verdict_line", width="content").markdown(line)
        if worse and run.config.detach:
            clicked = st.button("Show me a fit that works", key="find_fit", type="primary",
                                help="Trains nearby settings of the same task and loads the one whose "
                                     "student predicts the test rows best.")
        else:
            clicked = False
    searched = st.session_state.get(_FOUND)
    if searched is not None and searched[0] == run.config:
        st.caption(_found_note(searched[1], run.config))
    elif searched is not None and searched[1] is not None and searched[1].config == run.config:
        st.caption(_found_note(searched[1], searched[0]))
    if clicked:
        with st.spinner("Training nearby settings for a fit that works…"):
            found = heavy("the search for a fit that works", fit_that_works, run.config,
                          estimate=search_seconds(run.config))
        st.session_state[_FOUND] = (run.config, found)
        if found is not None:
            load_settings(found.changes(run.config))
        st.rerun()


def loss_section(run: Run, first_screen: bool = True) -> None:
    """The first screen (the verdict in one line, the run learning as it
    plays; only while the tab is open, as the tab that plays is one at a
    time), then final losses, the loss chart and its CSV."""
    words = run_words(config=run.config, _run=run)
    if first_screen:
        verdict_section(run, words["verdict"])
        watch_glance(run)
    diverged = words["diverged"]
    if diverged is not None:
        st.warning(diverged)
    last, base = run.history.iloc[-1], run.baseline
    columns = st.columns(4)
    for column, split in zip(columns[:2], ("train", "test")):
        column.metric(f"Final {split} MSE", f"{last[f'{split}_loss']:.4g}")
    for column, split in zip(columns[2:], ("train", "test")):
        column.metric(f"{split.capitalize()} R²", r_squared_text(base.r_squared(last[f"{split}_loss"], split)),
                      help=f"1 − MSE / variance of the {split} labels: 1 is a perfect fit, 0 is as good as "
                           "predicting their mean, below 0 is worse.")
    note = words["fit"]
    if note is not None:
        text, worse = note
        if worse:  # not st.warning: that is the page's word for a link it could not use
            st.info(text, icon="⚠️")
        else:
            st.caption(text)
    # On by default: the loss falls by orders of magnitude and hugs zero on a linear axis.
    log_scale = st.toggle("Log scale", value=True, key="log_scale")
    with st.container(key="loss_chart"):  # a stable handle for the browser tests
        draw(loss_chart, (run.config, log_scale), run.history, log_scale, base, run.diverged_at)
    for note in (words["blog_figure"], words["engine"]):
        if note is not None:
            st.caption(note)
    st.download_button("Download the loss history (CSV)", data=words["csv"],
                       file_name=history_file_name(run.config), mime="text/csv", key="download_history",
                       on_click="ignore")


# Called by keyword: Streamlit looks a positional argument's name up in the
# function's signature on every call, half of a lookup's cost.
@st.cache_resource(max_entries=64, show_spinner=False, hash_funcs=KEYED_BY_REPR)
def run_words(config: Config, _run: Run) -> dict:
    """The Training tab's sentences about the run of `config` (verdict, divergence, fit, blog
    figure, engine) and its loss history's CSV (history_csv), made once per run and shared
    by every session, not on every page run (each reads the run's history through pandas;
    the CSV was a tenth of a cached page's CPU)."""
    return {"verdict": verdict_line(_run), "diverged": divergence_note(_run), "fit": fit_note(_run),
            "blog_figure": blog_figure_note(_run), "engine": engine_note(_run), "csv": history_csv(_run)}


# A run's two tables, built once per run, server-wide, read only: about 20
# width-256 runs' worth (their two are 3 MB).
@st.cache_resource(max_entries=20, show_spinner=False, hash_funcs=KEYED_BY_REPR)
def parameter_tables_of(config: Config, _run: Run) -> dict[str, pa.Table]:
    """The teacher's and the student's parameter_matrix of the run of
    `config`, by net, as Arrow tables: the cells past a layer's inputs
    missing (shown blank), a diverged run's NaN and inf kept as numbers
    (shown "NaN", "Infinity")."""
    return {net: _arrow_matrix(params) for net, params in (("teacher", _run.teacher_params),
                                                          ("student", _run.student_params))}


def _arrow_matrix(params: pd.DataFrame) -> pa.Table:
    matrix, padded = parameter_matrix(params), padding_mask(params)
    table = pa.Table.from_pandas(matrix)  # the row labels as pandas' index, which the grid shows as such
    for at, column in enumerate(matrix.columns):
        # Arrow's own array, not pandas': pandas would make NaN missing too.
        table = table.set_column(at, column, pa.array(matrix[column].to_numpy(float), mask=padded[column].to_numpy()))
    return table


# Streamlit's grid rows are 35 px; a table this many rows high shows the
# default width's 11 rows whole, and scrolls for wider nets.
ROW_PX, MAX_ROWS_SHOWN = 35, 16
# Every weight to four decimals, in each column's own format (no per-cell styling: restyling
# every cell cost most of a cached page, docs/measurements/robustness.md).
WEIGHT = st.column_config.NumberColumn(format="%.4f")


def parameter_tables(run: Run) -> None:
    """Teacher and student parameters, one above the other, each layer as
    its matrix (rows: output units; columns: inputs, then the bias).
    Stacked, each has the page's width: at 1400 px side by side showed 5 of
    the default's 11 columns."""
    let_others_draw()  # before, not inside, the cached build (ui/state.py)
    tables = parameter_tables_of(config=run.config, _run=run)
    height = ROW_PX * (min(tables["teacher"].num_rows, MAX_ROWS_SHOWN) + 1) + 3   # the header row, and the borders
    with st.container(key="parameter_tables"):
        for net, caption in (("teacher", "The weights that made the labels."), ("student", student_caption(run))):
            st.subheader(net.capitalize())
            st.caption(caption)
            table = tables[net]
            st.dataframe(table, width="stretch", height=height, placeholder="",
                         column_config=dict.fromkeys(table.column_names[:-1], WEIGHT))  # the last: the index
    st.caption(PARAMETER_TABLES_NOTE)


def student_caption(run: Run) -> str:
    """What the Student table holds: the trained weights, or where a failed run stopped."""
    if run.error is None:
        return "After training, started from a fresh Kaiming init."
    if (run.error.epoch, run.error.batch) == (1, 1):
        return ("The fresh Kaiming init: training failed at its first backward(), so no "
                "SGD step ever changed these weights.")
    return (f"Where training stopped: after the steps before epoch {run.error.epoch}, "
            f"batch {run.error.batch}.")


# What the parameter matrices show, and where the tidy values are.
PARAMETER_TABLES_NOTE = ("Each layer as its matrix: a row per output unit, a column per input, then the bias; "
                         "blank past a layer's inputs. Compare runs › the parameters CSV has every value in "
                         "tidy form (parameter, uses, row, col, value).")
