"""The calibration plot: both rates against the cutoff, the single cutoff and the review band marked.

Drawn with matplotlib's object API on the Agg canvas (no pyplot), so nothing global
changes and it works without a display. The legend is the figure's, below the axes, so it
covers no curve (tests/test_report_layout.py measures it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goldenset.scoring.calibrate import Calibration


def rates_figure(cal: Calibration) -> Any:
    """Both rates against the cutoff, the single cutoff and the band marked (a matplotlib Figure, Agg)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    m = cal.measurement
    finite = [r for r in m.cutoffs if r.cutoff is not None]
    xs = [float(r.cutoff) for r in finite if r.cutoff is not None]
    top = max(xs)
    # Constrained layout, the legend below the axes: inside them ("best") it sat over the
    # false-pass curve, whose top spans the plot's width.
    fig = Figure(figsize=(8, 5.6), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)  # no pyplot: nothing global, safe in a server or a test run
    ax = fig.add_subplot(1, 1, 1)
    # A cutoff between two distinct scores passes what the upper one passes: steps "pre".
    curves = (
        ([r.false_pass_rate for r in finite], "o", "false-pass rate (unacceptable pairs passing)"),
        ([r.false_fail_rate for r in finite], "s", "false-fail rate (acceptable pairs failing)"),
    )
    for rates, marker, label in curves:
        ax.step(xs, rates, where="pre", marker=marker, markersize=3, label=label)
    single = m.single.row.cutoff
    if single is not None:
        ax.axvline(single, color="black", linestyle="--", label=f"single cutoff {single:.4g} (cost {m.single.cost})")
    else:
        ax.axvline(top, color="black", linestyle="--", label="single cutoff: none passes")
    if m.band is not None:
        right = m.band.high if m.band.high is not None else top
        high = f"{m.band.high:.4g}" if m.band.high is not None else "none"
        ax.axvspan(
            m.band.low,
            right,
            color="orange",
            alpha=0.2,
            label=f"review band [{m.band.low:.4g}, {high}): {m.band.review_share:.1%} of pairs",
        )
    ax.set_xlabel("cutoff (a pair passes when its score >= cutoff)")
    ax.set_ylabel("rate")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(
        f"{cal.scorer} {cal.version} against {cal.against} labels: {m.pairs} pairs "
        f"({m.acceptable} acceptable, {m.unacceptable} unacceptable)",
        fontsize=9,
    )
    ax.grid(True, alpha=0.3)
    fig.legend(loc="outside lower center", ncols=2, fontsize=8)
    return fig


def plot_rates(cal: Calibration, path: str | Path) -> Path:
    """Write `rates_figure` as a PNG; the folder is created when missing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rates_figure(cal).savefig(path, format="png")
    return path
