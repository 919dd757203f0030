"""The parameter tables' colours: one diverging scale (fitlab.figures.charts) for the
tables and the watch view, each cell tinted by its sign and size, padding and
a diverged run's NaN and inf left uncoloured."""

import math

import numpy as np

from fitlab import Config, train
from fitlab.figures.charts import DIVERGING_ENDS, diverging_tint
from fitlab.weights import padding_mask, parameter_matrix
from ui.tabs.training import _styled_matrix


def cell_styles(styler) -> dict:
    styler._compute()
    return {(r, c): dict(props) for (r, c), props in styler.ctx.items()}


def test_each_cell_is_tinted_by_its_sign_and_size_on_the_shared_bound():
    run = train(Config(epochs=2, width=4, shared_repeats=2))
    params = run.teacher_params
    matrix = parameter_matrix(params)
    bound = float(np.abs(params.value).max()) / 2  # half the largest: some cells saturate
    styles = cell_styles(_styled_matrix(params, matrix, bound))
    padded = padding_mask(params).to_numpy()
    saturated = 0
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            value, tint = matrix.iat[i, j], styles.get((i, j), {}).get("background-color", "")
            if padded[i, j]:
                assert tint == ""
                continue
            end = DIVERGING_ENDS["positive" if value > 0 else "negative"]
            alpha = min(abs(value) / bound, 1.0)
            assert tint == f"rgba({end}, {alpha:.2f})", (i, j, value)
            saturated += alpha == 1.0
    assert saturated > 0 and DIVERGING_ENDS["positive"] != DIVERGING_ENDS["negative"]


def test_nan_and_inf_get_no_colour():
    assert diverging_tint(math.nan, 1.0) is None and diverging_tint(-math.inf, 1.0) is None
    assert diverging_tint(-0.25, 1.0) == f"rgba({DIVERGING_ENDS['negative']}, 0.25)"
    # NaN weights by epoch 1, where the run stops (a run that stops at an inf loss may keep finite weights).
    run = train(Config(width=256, epochs=2, batch_size=1, seed=5))
    assert run.diverged_at is not None
    params = run.student_params
    matrix = parameter_matrix(params)
    styles = cell_styles(_styled_matrix(params, matrix, 1.0))
    odd = np.argwhere(~np.isfinite(matrix.to_numpy(dtype=float)) & ~padding_mask(params).to_numpy())
    assert len(odd) > 0
    assert all("background-color" not in styles.get((i, j), {}) for i, j in odd)
