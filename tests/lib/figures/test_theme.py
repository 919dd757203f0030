"""One theme for every chart: axis and legend text at least 14 px, in a
colour with at least 4.5:1 contrast on white (WCAG AA)."""

from fitlab import Config, train
from fitlab.figures import theme
from fitlab.figures.charts import loss_chart, sweep_heatmap
from fitlab.figures.watch_charts import watch_panels


def contrast(hex_colour: str, background: str = "#ffffff") -> float:
    def luminance(colour: str) -> float:
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    high, low = sorted((luminance(hex_colour), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def readable(config: dict) -> None:
    for part in ("axis", "legend"):
        assert config[part]["labelFontSize"] >= 14 and config[part]["titleFontSize"] >= 14, part
        assert contrast(config[part]["labelColor"]) >= 4.5 and contrast(config[part]["titleColor"]) >= 4.5
    assert config["title"]["subtitleFontSize"] >= 14 and contrast(config["title"]["subtitleColor"]) >= 4.5


def test_altair_charts_and_the_watch_pictures_carry_the_one_readable_theme():
    run = train(Config(epochs=3))
    readable(loss_chart(run.history).to_dict()["config"])
    table = run.history.tail(1).assign(width=5, lr=0.01, test_r2=0.5)
    readable(sweep_heatmap(table, "width", "lr").to_dict()["config"])
    for spec in watch_panels(run).values():
        assert spec["config"] == theme.config()
        readable(spec["config"])
