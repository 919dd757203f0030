"""The prediction-against-label charts put both axes on one scale: the
Student tab's and the Watch picture's each a square over one range; a diverged run's scatter says why it is empty."""

import numpy as np
import pandas as pd

from fitlab import Config, train
from fitlab.figures.charts import prediction_chart
from fitlab.figures.watch_charts import watch_panels


def scales(spec: dict) -> list[dict]:
    return [layer["encoding"][axis]["scale"] for layer in spec["layer"] for axis in ("x", "y")
            if "scale" in layer["encoding"].get(axis, {})]


def test_the_student_tabs_scatter_is_a_square_over_one_range_at_any_setting():
    for config in (Config(epochs=5), Config(epochs=5, width=7, lr=0.1)):
        spec = prediction_chart(train(config).test_predictions).to_dict()
        found = scales(spec)
        assert len(found) == 4 and all(s == found[0] for s in found) and found[0]["nice"] is False
        assert spec["width"] == spec["height"] and spec["autosize"]["type"] == "pad"


def test_a_scatter_says_how_many_predictions_a_diverged_run_left_off():
    predictions = pd.DataFrame({"label": [0.1, 0.2, 0.3], "prediction": [np.nan, 2e10, 0.25]})
    spec = prediction_chart(predictions).to_dict()
    texts = [row for values in spec["datasets"].values() for row in values if "text" in row]
    assert texts and texts[0]["text"] == "2 of 3 predictions off the chart: the run diverged"


def test_the_watch_scatter_is_a_square_over_one_range():
    spec = watch_panels(train(Config(epochs=5)), names=("predictions",))["predictions"]
    points = spec["layer"][1]["encoding"]
    assert points["x"]["scale"] == points["y"]["scale"] and points["x"]["scale"]["nice"] is False
    assert spec["width"] == spec["height"] and spec["autosize"]["type"] == "pad"
