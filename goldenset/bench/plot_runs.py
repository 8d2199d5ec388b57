"""The N-run comparison as a picture: each run's mean with its 95% interval, one panel per metric.

A library function returning the image's bytes (`runs_figure`), so the HTML report of `bench
compare` and any other page (the labelling app's set explorer) draw the same picture from the
same numbers: a list of `RunMeans` (a label and, per metric, the mean and its interval), the
metrics in panel order, and which run is the baseline. The baseline is drawn in black with a
square marker and `(baseline)` after its label, and its mean is a dashed vertical line across
its panel, so a run whose interval clears the line stands out; the others are blue circles.
Panels are stacked (one width whatever the number of metrics, as the benchmark's other plot);
runs are listed top to bottom in the order given. Matplotlib draws off screen (Agg); SVG text
stays text (`svg.fonttype = none`) so a page can search and style it.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

WIDTH_INCHES = 6.4
FORMATS = ("png", "svg")


@dataclass(frozen=True)
class RunMeans:
    """One run as the picture shows it: its label and, per metric, (mean, lo, hi)."""

    label: str
    means: Mapping[str, tuple[float, float, float]]


def runs_figure(
    runs: Sequence[RunMeans],
    metrics: Sequence[str],
    *,
    baseline: str | None = None,
    title: str = "",
    fmt: str = "png",
) -> bytes:
    """The picture as PNG (100 dpi) or SVG bytes; `baseline` is the label of the run to mark, if any."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    import matplotlib

    matplotlib.use("Agg")  # files only; never a display
    import matplotlib.pyplot as plt

    shown = [m for m in metrics if any(m in r.means for r in runs)] or [""]
    per_panel = 0.32 * max(1, len(runs)) + 1.0
    fig, axes = plt.subplots(len(shown), 1, figsize=(WIDTH_INCHES, per_panel * len(shown) + 0.5), squeeze=False)
    for ax, metric in zip(axes[:, 0], shown, strict=True):
        _panel(ax, runs, metric, baseline)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "goldenset"}):
        fig.savefig(buf, format=fmt, dpi=100, metadata={"Date": None} if fmt == "svg" else None)
    plt.close(fig)
    return buf.getvalue()


def _panel(ax, runs: Sequence[RunMeans], metric: str, baseline: str | None) -> None:
    ys = list(range(len(runs)))[::-1]  # the first run on top
    for y, run in zip(ys, runs, strict=True):
        if metric not in run.means:
            continue
        mean, lo, hi = run.means[metric]
        below = mean - lo if math.isfinite(lo) else 0.0
        above = hi - mean if math.isfinite(hi) else 0.0
        base = run.label == baseline
        ax.errorbar(
            [mean],
            [y],
            xerr=[[below], [above]],
            fmt="s" if base else "o",
            color="black" if base else "tab:blue",
            ecolor="black" if base else "tab:blue",
            capsize=3,
        )
        if base:
            ax.axvline(mean, color="black", linewidth=0.8, linestyle="--")
    ax.set_yticks(ys, [f"{r.label} (baseline)" if r.label == baseline else r.label for r in runs])
    ax.set_title(metric, fontsize=10)
    ax.set_xlabel("mean over the compared queries, 95% CI")
