"""Showing results: rich tables for the terminal, a Markdown report with a plot of differences.

Warnings always come first; a degraded run says DEGRADED in the title of every
table and at the top of every report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from rich.console import Console
from rich.table import Table

from goldenset.bench.compare import Comparison, RunInfo
from goldenset.bench.estimate import RowEstimate, ppi_line, printed
from goldenset.bench.runs import DECIDING_ROW, BenchmarkRun

DEGRADED = "DEGRADED"


def console() -> Console:
    """A console as wide as the terminal, or as its content when writing to a pipe or a test."""
    from goldenset.consoles import ContentWidthConsole

    return ContentWidthConsole()


def fmt(x: float | None) -> str:
    """Four decimals, trec_eval style; n/a for undefined."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.4f}"


def fmt_signed(x: float | None) -> str:
    return "n/a" if x is None or math.isnan(x) else ("inf" if math.isinf(x) and x > 0 else f"{x:+.4f}")


def _stamp(title: str, degraded: bool) -> str:
    return f"{DEGRADED} · {title}" if degraded else title


def run_table(run: BenchmarkRun) -> Table:
    """Metric means per row; the deciding row first."""
    title = _stamp(f"benchmark {run.run_id} · golden build {run.build_id} · {run.n_queries} queries", run.degraded)
    t = Table(title=title, title_justify="left")
    t.add_column("metric")
    for row in run.rows:
        t.add_column(f"{row} (deciding)" if row == DECIDING_ROW else f"{row} (reference)", justify="right")
    means = {row: run.means(row) for row in run.rows}
    for m in run.metric_names + run.measures:
        t.add_row(metric_label(m, run.measures), *(fmt(means[row][m]) for row in run.rows))
    return t


def metric_label(name: str, measures: Sequence[str] = ()) -> str:
    """A metric's name as a table shows it: reference metrics (coverage, condensed) and named measures say so."""
    from goldenset.bench.metrics import get_metric

    if name in measures:
        return f"{name} (named measure)"
    return f"{name} (reference)" if get_metric(name).reference else name


def comparison_table(comp: Comparison) -> Table:
    """B - A per metric with its interval, n, smallest detectable effect and verdict."""
    title = _stamp(f"B {comp.b} vs A {comp.a} · row {comp.row}", comp.degraded)
    t = Table(title=title, title_justify="left")
    columns: tuple[tuple[str, Literal["left", "right"]], ...] = (
        ("metric", "left"),
        ("n", "right"),
        ("A", "right"),
        ("B", "right"),
        ("B - A", "right"),
        ("95% CI", "right"),
        ("MDE", "right"),
        ("verdict", "left"),
    )
    for name, justify in columns:
        t.add_column(name, justify=justify)
    for p in comp.results:
        t.add_row(
            p.metric,
            str(p.n),
            fmt(p.mean_a),
            fmt(p.mean_b),
            fmt_signed(p.diff),
            f"[{fmt_signed(p.lo)}, {fmt_signed(p.hi)}]",
            fmt(p.mde),
            comp.verdict_text(p),
        )
    return t


def eval_table(means: Mapping[str, float]) -> Table:
    t = Table()
    t.add_column("metric")
    t.add_column("value", justify="right")
    for m, v in means.items():
        t.add_row(m, fmt(v))
    return t


def _side(label: str, side: RunInfo) -> str:
    labels = f" (labels of build {side.labels_build_id})" if side.labels_build_id not in (None, side.build_id) else ""
    return f"{label} {side.run_id}: {side.config} · golden build {side.build_id}{labels}"


# Warnings and the lines naming a run are printed with soft_wrap: one line each however
# long, so that a pipe or a log keeps them whole (`grep WARNING` finds the whole reason).
def print_run(out: Console, run: BenchmarkRun, report: Path | None = None) -> None:
    """Warnings (BIASED first), the retriever and its config, the table, the notes, then `run_id: <id>`."""
    for w in run.coverage_warnings + run.warnings:
        out.print(w, markup=False, highlight=False, soft_wrap=True)
    out.print(f"retriever: {run.config_summary}", markup=False, highlight=False, soft_wrap=True)
    out.print(run_table(run))
    for note in run.notes:
        out.print(note, markup=False, highlight=False)
    if run.estimates is not None:
        e = run.estimates
        _print_estimates(
            out,
            printed(e.estimates, DECIDING_ROW),
            f"prediction-powered estimates, judge {e.judge}, {e.audit.get('design', 'uniform')} audit of pool "
            f"{e.audit.get('pool_id')} ({e.audit.get('audited')} of {e.audit.get('sample_size')} drawn queries "
            "audited)",
        )
    if report is not None:
        out.print(f"report: {report}", markup=False, highlight=False)
    out.print(f"run_id: {run.run_id}", markup=False, highlight=False)


def _print_estimates(out: Console, estimates: Sequence[RowEstimate], title: str) -> None:
    """The title, then one line per estimate: the deciding metrics only (estimate.printed); --json has all."""
    if not estimates:
        return
    design = next((e.estimate.design for e in estimates if e.estimate), "finite")
    out.print(
        f"{title} (95% intervals, clamped into each metric's range; design {design}; deciding metrics, "
        "the rest in --json):",
        markup=False,
        highlight=False,
    )
    for e in estimates:
        out.print("  " + ppi_line(e), markup=False, highlight=False, soft_wrap=True)


def print_comparison(out: Console, comp: Comparison, report: Path | None = None) -> None:
    """BIASED and warnings, which run each side is (retriever and config), what differs in their configs, the table."""
    for w in comp.coverage_lines + comp.warnings:
        out.print(w, markup=False, highlight=False, soft_wrap=True)
    for line in _sides(comp):
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    out.print(comparison_table(comp))
    method = comp.results[0].method if comp.results else "paired t"
    out.print(
        f"n = {comp.n} queries both runs saw. 95% CI: {method}. B - A > 0 means B scored higher. MDE: the smallest true "
        "difference a paired t test on this n detects with 80% power (n/a when the differences do not vary). "
        "Verdicts read only the interval: indistinguishable when it contains 0. "
        "(reference): judged@k and the condensed metrics (ndcg', precision', bpref) inform, never decide."
        + (
            " (incomplete judgments): the verdict counts unjudged documents as misses (BIASED above)."
            if comp.biased
            else ""
        ),
        markup=False,
        highlight=False,
    )
    _print_estimates(out, printed(comp.estimates, None), "B - A, prediction-powered")
    if report is not None:
        out.print(f"report: {report}", markup=False, highlight=False)


# ---------------------------------------------------------------------------- Markdown + plot
PLOT_WIDTH_INCHES = 6.4


def write_html_next_to(md: Path, title: str) -> Path:
    from goldenset.html_report import write_html_next_to as write

    return write(md, title)


def differences_figure(comps: Sequence[Comparison], title: str):
    """One panel per comparison, stacked: each metric's mean difference with its 95% interval (a Figure, Agg).

    Panels are stacked, not side by side, so the image keeps one width (640 px at 100 dpi)
    whatever the number of rows: three panels side by side made 1,500 px, clipped in the
    Dagster UI's metadata dialog and wider than a report page. The layout is matplotlib's
    constrained one, which makes room for the figure's title: `tight_layout` left it over
    the first panel's title ("+graph"). Drawn on the Agg canvas with the object API (no
    pyplot), so nothing global changes.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = [c for c in comps if c.results] or list(comps)
    per_panel = 0.4 * max((len(c.results) for c in panels), default=1) + 1.2
    fig = Figure(figsize=(PLOT_WIDTH_INCHES, per_panel * max(1, len(panels)) + 0.6), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(max(1, len(panels)), 1, squeeze=False)
    for ax, comp in zip(axes[:, 0], panels, strict=False):  # one axis even with no panel
        res = comp.results[::-1]
        ys = range(len(res))
        for y, p in zip(ys, res, strict=True):
            color = "tab:green" if p.verdict == "better" else "tab:red" if p.verdict == "worse" else "tab:gray"
            below = p.diff - p.lo if math.isfinite(p.lo) else 0.0
            above = p.hi - p.diff if math.isfinite(p.hi) else 0.0
            ax.errorbar([p.diff], [y], xerr=[[below], [above]], fmt="o", color=color, ecolor=color, capsize=3)
        ax.axvline(0.0, color="black", linewidth=0.8)
        ax.set_yticks(list(ys), [p.metric for p in res])
        ax.set_xlabel("difference (B - A), 95% CI")
        ax.set_title(_stamp(f"{comp.row}", comp.degraded), fontsize=10)
    fig.suptitle(title, fontsize=11)
    return fig


def plot_differences(comps: Sequence[Comparison], path: Path, title: str) -> Path:
    """Write `differences_figure` as a PNG at `path` (its folder made when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    differences_figure(comps, title).savefig(path, dpi=100)
    return path


def _sides(comp: Comparison) -> list[str]:
    if comp.sides is None:
        return []
    lines = [_side("A", comp.sides[0]), _side("B", comp.sides[1])]
    if comp.config_differences:
        lines.append("config differs: " + "; ".join(comp.config_differences))
    return lines


def _md_comparison(comp: Comparison) -> list[str]:
    out = [
        "| metric | n | A | B | B - A | 95% CI | MDE | verdict |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for p in comp.results:
        out.append(
            f"| {p.metric} | {p.n} | {fmt(p.mean_a)} | {fmt(p.mean_b)} | {fmt_signed(p.diff)} | "
            f"[{fmt_signed(p.lo)}, {fmt_signed(p.hi)}] | {fmt(p.mde)} | {comp.verdict_text(p)} |"
        )
    return out


def _warnings_md(warnings: Sequence[str]) -> list[str]:
    """The warnings as a list in one quoted block, one item each (as lines they ran into one paragraph)."""
    return [f"> - {w}" for w in warnings] + ([""] if warnings else [])


def run_markdown(run: BenchmarkRun, comps: Sequence[Comparison], plot_name: str | None) -> str:
    """The Markdown report of one run: warnings, means per row, each row against core, notes."""
    lines = [f"# {_stamp('Retrieval benchmark ' + run.run_id, run.degraded)}", ""]
    lines += _warnings_md(run.coverage_warnings + run.warnings)
    lines += [
        f"- started: {run.started_at:%Y-%m-%d %H:%M:%S} UTC; golden build {run.build_id}; "
        f"{run.n_queries} queries; corpus fingerprint `{run.corpus_fingerprint[:16]}`",
        f"- retriever: `{run.config_summary}`; depth {run.depth}; degraded: {'yes' if run.degraded else 'no'}"
        + (f"; down: {', '.join(run.down_components)}" if run.down_components else ""),
        f"- labels: golden build {run.labels_build_id if run.labels_build_id is not None else 'unknown'}"
        + (
            f"; {run.skipped_queries} golden query(ies) skipped (no label with grade >= 1)"
            if run.skipped_queries
            else ""
        ),
        "",
        "## Means per row",
        "",
        "| metric | " + " | ".join(f"{r}{' (deciding)' if r == DECIDING_ROW else ''}" for r in run.rows) + " |",
        "| --- | " + " | ".join("---:" for _ in run.rows) + " |",
    ]
    means = {row: run.means(row) for row in run.rows}
    lines += [
        f"| {metric_label(m, run.measures)} | " + " | ".join(fmt(means[r][m]) for r in run.rows) + " |"
        for m in run.metric_names + run.measures
    ]
    for comp in comps:
        lines += ["", f"## {comp.row} against core (paired t, B = {comp.row}, A = core)", ""] + _md_comparison(comp)
    if plot_name:
        lines += ["", f"![differences against core]({plot_name})"]
    lines += ["", "## Notes", ""] + [f"- {n}" for n in run.notes]
    lines += [
        "",
        "## Retriever configuration",
        "",
        "```json",
        json.dumps(run.retriever_config, indent=2, sort_keys=True),
        "```",
    ]
    return "\n".join(lines) + "\n"


def comparison_markdown(comp: Comparison, plot_name: str | None) -> str:
    """The Markdown report of `bench compare`."""
    lines = [f"# {_stamp(f'Benchmark comparison: {comp.b} vs {comp.a}', comp.degraded)}", ""]
    lines += _warnings_md(comp.coverage_lines + comp.warnings)
    lines += [f"- {line}" for line in _sides(comp)] + ([""] if comp.sides else [])
    method = comp.results[0].method if comp.results else "paired t"
    lines += [f"Row `{comp.row}`, {method}, n = {comp.n} queries both runs saw; B - A > 0 means B scored higher.", ""]
    lines += _md_comparison(comp)
    if plot_name:
        lines += ["", f"![differences]({plot_name})"]
    for label, side in zip(("A", "B"), comp.sides or (), strict=False):
        lines += [
            "",
            f"## Configuration of {label} ({side.run_id})",
            "",
            "```json",
            json.dumps(side.retriever_config, indent=2, sort_keys=True),
            "```",
        ]
    return "\n".join(lines) + "\n"


def write_run_report(run: BenchmarkRun, comps: Sequence[Comparison], out_dir: Path) -> Path:
    """Write report.md and differences.png for a run into out_dir; return the Markdown path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plot = (
        plot_differences(comps, out_dir / "differences.png", f"run {run.run_id}: rows against core") if comps else None
    )
    md = out_dir / "report.md"
    md.write_text(run_markdown(run, comps, plot.name if plot else None), encoding="utf-8")
    write_html_next_to(md, f"benchmark run {run.run_id}")  # report.html: the same report, to look at
    return md


def write_comparison_report(comp: Comparison, out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plot = plot_differences([comp], out_dir / "differences.png", f"{comp.b} vs {comp.a}")
    md = out_dir / "report.md"
    md.write_text(comparison_markdown(comp, plot.name), encoding="utf-8")
    write_html_next_to(md, f"{comp.b} vs {comp.a}")
    return md
