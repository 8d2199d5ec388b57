"""Showing an N-run comparison: the summary table, every comparison, the notes, JSON and the report.

The summary table is ranx's report: runs as rows (lettered a, b, c ... in table order),
metrics as columns, each mean followed by the superscript letters of the runs it is
significantly better than. The comparisons table lists every pair on every metric. The
lines printed, their order and the JSON keys are contract 16.6.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.table import Table

from goldenset.bench.compare_many import LETTERS, SUPERSCRIPTS, ManyComparison, PairTest
from goldenset.bench.plot_runs import RunMeans, runs_figure
from goldenset.bench.report import DEGRADED, fmt, fmt_signed, write_html_next_to

PLOT_NAME = "comparison.png"
TEST_NAMES = {"t": "Student's paired t test, two-sided", "randomization": "Fisher's randomization test"}


def _stamp(title: str, degraded: bool) -> str:
    return f"{DEGRADED} · {title}" if degraded else title


def marks(comp: ManyComparison, run_id: str, metric: str) -> str:
    """The superscript letters of the runs `run_id` is significantly better than on `metric`."""
    return "".join(SUPERSCRIPTS[LETTERS.index(x)] for x in comp.better_than(run_id, metric))


def fmt_p(p: float | None) -> str:
    """A p-value to four decimals; below 0.0001 as `<0.0001` (0.0000 would read as impossible)."""
    return "<0.0001" if p is not None and 0.0 <= p < 0.00005 else fmt(p)


def p_text(t: PairTest) -> str:
    """The raw p-value, with its Monte Carlo standard error for the randomization test."""
    return fmt_p(t.p) if t.mc_error is None else f"{fmt_p(t.p)} ± {fmt(t.mc_error)}"


def run_lines(comp: ManyComparison) -> list[str]:
    """`a RUN_ID: config · golden build N`, one per run, the baseline marked."""
    out = []
    for letter, r in zip(LETTERS, comp.runs, strict=False):
        labels = f" (labels of build {r.labels_build_id})" if r.labels_build_id not in (None, r.build_id) else ""
        base = " (baseline)" if r.run_id == comp.baseline else ""
        out.append(f"{letter} {r.run_id}{base}: {r.config} · golden build {r.build_id}{labels}")
    return out


def header(comp: ManyComparison) -> str:
    """The summary table's title: runs, row, queries, the test and the family."""
    return (
        f"{len(comp.runs)} runs · row {comp.row} · {comp.n} queries · {TEST_NAMES[comp.test]}, "
        f"{_correction_name(comp.correction)} over {comp.family_size} comparisons"
    )


def _correction_name(correction: str) -> str:
    return {"holm": "Holm", "bonferroni": "Bonferroni", "none": "no correction"}[correction]


def summary_table(comp: ManyComparison) -> Table:
    t = Table()
    t.add_column("#")
    t.add_column("run")
    for m in comp.metrics + comp.others:
        t.add_column(m if m in comp.metrics else f"{m} (ref)", justify="left")
    for letter, r in zip(LETTERS, comp.runs, strict=False):
        cells = [f"{fmt(comp.means[r.run_id][m][0])}{marks(comp, r.run_id, m)}" for m in comp.metrics + comp.others]
        t.add_row(letter, r.run_id, *cells)
    return t


COLUMNS: tuple[tuple[str, Literal["left", "right"]], ...] = (
    ("metric", "left"),
    ("A", "left"),
    ("B", "left"),
    ("mean A", "right"),
    ("mean B", "right"),
    ("B - A", "right"),
    ("95% CI", "right"),
    ("p", "right"),
    ("p corrected", "right"),
    ("verdict", "left"),
)


def _cells(comp: ManyComparison, t: PairTest) -> list[str]:
    return [
        t.metric,
        comp.letter(t.a),
        comp.letter(t.b),
        fmt(t.mean_a),
        fmt(t.mean_b),
        fmt_signed(t.diff),
        f"[{fmt_signed(t.lo)}, {fmt_signed(t.hi)}]",
        p_text(t),
        fmt_p(t.p_corrected),
        t.verdict_text(comp.alpha),
    ]


def comparisons_title(comp: ManyComparison) -> str:
    what = f"against the baseline {comp.baseline}" if comp.baseline else "every pair"
    return f"B - A, {what}, row {comp.row}:"


def comparisons_table(comp: ManyComparison) -> Table:
    t = Table()
    for name, justify in COLUMNS:
        t.add_column(name, justify=justify)
    for pt in comp.tests:
        t.add_row(*_cells(comp, pt))
    return t


def notes(comp: ManyComparison) -> list[str]:
    """The lines under the tables: the queries, the family, the test, the marks, the suffixes used."""
    pairs = len({(t.a, t.b) for t in comp.tests})
    out = [
        f"n = {comp.n} queries every run measured on row {comp.row}"
        + (f" ({comp.left_out} left out: not measured by every run)." if comp.left_out else "."),
        f"Family: {pairs} pair(s) x {len(comp.metrics)} deciding metric(s) = {comp.family_size} comparisons; "
        f"{_correction_name(comp.correction)} "
        + (
            "holds the chance of any false verdict among them at 5%."
            if comp.correction != "none"
            else "(each comparison at 5%: a false verdict somewhere is likely)."
        )
        + " A verdict reads the corrected p: significant below 0.05. 95% CI: each comparison's own paired t interval.",
    ]
    if comp.test == "randomization":
        out.append(
            f"p: Fisher's randomization test, {comp.permutations} sign flips, seed {comp.seed}; "
            "p = (1 + #{|S*| >= |S|}) / (1 + B) ± its Monte Carlo standard error sqrt(p(1 - p) / B)."
        )
    out.append("Superscripts: the runs a mean is significantly better than on that metric, after correction.")
    texts = " ".join(t.verdict_text(comp.alpha) for t in comp.tests)
    if "(after correction)" in texts:
        out.append(
            "(after correction): the interval excludes 0 for this comparison alone; across the family it is not "
            "significant."
        )
    if "(randomization test)" in texts:
        out.append("(randomization test): the verdict reads the permutation p-value; the interval is Student's.")
    if comp.others:
        out.append(
            "(reference), (named measure): compared beside the family, with no corrected p and no verdict; "
            "no gate reads them."
        )
    if comp.biased:
        out.append("(incomplete judgments): the verdict counts unjudged documents as misses (BIASED above).")
    return out


def print_many(out: Console, comp: ManyComparison, report: Path | None = None) -> None:
    """BIASED and the closing command, the warnings, the runs, the summary, every comparison, the notes."""
    for w in comp.coverage_lines + comp.warnings + run_lines(comp):
        out.print(w, markup=False, highlight=False, soft_wrap=True)
    out.print(_stamp(header(comp), comp.degraded), markup=False, highlight=False, soft_wrap=True)
    out.print(summary_table(comp))
    out.print(comparisons_title(comp), markup=False, highlight=False, soft_wrap=True)
    out.print(comparisons_table(comp))
    for line in notes(comp):
        out.print(line, markup=False, highlight=False)
    if report is not None:
        out.print(f"report: {report}", markup=False, highlight=False)


def many_json(comp: ManyComparison) -> dict[str, Any]:
    """The `--json` object (contract 16.6)."""
    return {
        "runs": [
            {"letter": letter, **asdict(r), "baseline": r.run_id == comp.baseline}
            for letter, r in zip(LETTERS, comp.runs, strict=False)
        ],
        "row": comp.row,
        "baseline": comp.baseline,
        "test": comp.test,
        "permutations": comp.permutations,
        "seed": comp.seed,
        "correction": comp.correction,
        "alpha": comp.alpha,
        "family_size": comp.family_size,
        "n": comp.n,
        "queries_left_out": comp.left_out,
        "warnings": comp.warnings,
        "degraded": comp.degraded,
        "coverage": comp.coverage.coverage,
        "coverage_warning": comp.coverage.warning,
        "biased": comp.biased,
        "metrics": comp.metrics,
        "others": comp.others,
        "comparisons": [
            {
                **asdict(t),
                "interval_agrees": t.interval_agrees,
                "verdict_text": t.verdict_text(comp.alpha),
            }
            for t in comp.tests
        ],
        "summary": [
            {
                "letter": comp.letter(r.run_id),
                "run_id": r.run_id,
                "means": {m: comp.means[r.run_id][m][0] for m in comp.metrics + comp.others},
                "better_than": {m: comp.better_than(r.run_id, m) for m in comp.metrics},
            }
            for r in comp.runs
        ],
    }


# ---------------------------------------------------------------------------- Markdown + plot


def figure(comp: ManyComparison, fmt_: str = "png") -> bytes:
    """The summary as a picture (goldenset.bench.plot_runs): each run's means with their intervals."""
    runs = [RunMeans(f"{comp.letter(r.run_id)} {r.run_id}", comp.means[r.run_id]) for r in comp.runs]
    base = f"{comp.letter(comp.baseline)} {comp.baseline}" if comp.baseline else None
    return runs_figure(runs, comp.metrics + comp.others, baseline=base, title=f"row {comp.row}", fmt=fmt_)


def _md_table(header_: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str]) -> list[str]:
    def esc(cell: str) -> str:
        return cell.replace("|", "\\|")

    lines = ["| " + " | ".join(map(esc, header_)) + " |", "| " + " | ".join(align) + " |"]
    return lines + ["| " + " | ".join(map(esc, r)) + " |" for r in rows]


def many_markdown(comp: ManyComparison, plot_name: str | None) -> str:
    """The Markdown report of an N-run `bench compare`."""
    lines = [f"# {_stamp(f'Benchmark comparison of {len(comp.runs)} runs', comp.degraded)}", ""]
    warnings = comp.coverage_lines + comp.warnings
    lines += [f"> {w}" for w in warnings] + ([""] if warnings else [])
    lines += [f"- {line}" for line in run_lines(comp)] + ["", f"## {header(comp)}", ""]
    names = comp.metrics + comp.others
    lines += _md_table(
        ["#", "run", *(m if m in comp.metrics else f"{m} (ref)" for m in names)],
        [
            [
                comp.letter(r.run_id),
                r.run_id,
                *(f"{fmt(comp.means[r.run_id][m][0])}{marks(comp, r.run_id, m)}" for m in names),
            ]
            for r in comp.runs
        ],
        ["---", "---", *("---:" for _ in names)],
    )
    if plot_name:
        lines += ["", f"![means with their 95% intervals]({plot_name})"]
    lines += ["", f"## {comparisons_title(comp).rstrip(':')}", ""]
    lines += _md_table(
        [c for c, _ in COLUMNS],
        [_cells(comp, t) for t in comp.tests],
        ["---" if j == "left" else "---:" for _, j in COLUMNS],
    )
    lines += ["", "## Notes", ""] + [f"- {n}" for n in notes(comp)]
    return "\n".join(lines) + "\n"


def write_many_report(comp: ManyComparison, out_dir: Path) -> Path:
    """Write report.md, report.html and comparison.png for an N-run comparison; return the Markdown path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / PLOT_NAME).write_bytes(figure(comp))
    md = out_dir / "report.md"
    md.write_text(many_markdown(comp, PLOT_NAME), encoding="utf-8")
    write_html_next_to(md, f"comparison of {len(comp.runs)} runs")
    return md
