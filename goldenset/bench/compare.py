"""Comparing two stored runs (or two rows of one run) query by query."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from goldenset.bench import coverage as cov
from goldenset.bench import gates
from goldenset.bench.estimate import RowEstimate, compare_estimates
from goldenset.bench.metrics import get_metric
from goldenset.bench.paired import Paired, compare_paired
from goldenset.bench.runs import DECIDING_ROW, BenchmarkRun


@dataclass(frozen=True)
class RunInfo:
    """Which run a side of a comparison is: its retriever, its configuration, its labels."""

    run_id: str
    retriever: str
    config: str  # short: runs.config_summary
    retriever_config: dict[str, Any]  # full, as stored
    build_id: int
    labels_build_id: int | None

    @classmethod
    def of(cls, run: BenchmarkRun) -> RunInfo:
        return cls(
            run.run_id, run.retriever, run.config_summary, run.retriever_config, run.build_id, run.labels_build_id
        )


@dataclass
class Comparison:
    """B against A on one row, metric by metric, with the warnings to print first."""

    a: str
    b: str
    row: str
    results: list[Paired]
    warnings: list[str] = field(default_factory=list)
    degraded: bool = False
    # Two stored runs: what each one was; None when comparing rows of one run.
    sides: tuple[RunInfo, RunInfo] | None = None
    # `key: A -> B` for each configuration value that differs between runs of one retriever.
    config_differences: list[str] = field(default_factory=list)
    # `--estimate ppi`: the prediction-powered difference per metric (contract 12.2).
    estimates: list[RowEstimate] = field(default_factory=list)
    # The fifth gate: judged@k of each side and, when BIASED, its lines and the closing command.
    coverage: cov.CoverageCheck | None = None
    # Named measures (`bench run --measure`) among the results: no direction, never deciding (16.5).
    measures: frozenset[str] = frozenset()

    @property
    def coverage_lines(self) -> list[str]:
        """The BIASED lines and the command that closes the gap; printed before everything else."""
        return self.coverage.lines + self.coverage.commands if self.coverage else []

    @property
    def n(self) -> int:
        return max((p.n for p in self.results), default=0)

    @property
    def biased(self) -> bool:
        return self.coverage is not None and self.coverage.biased

    def incomplete(self, metric: str) -> bool:
        """Whether the verdict on `metric` rests on incomplete judgments (BIASED, a deciding metric)."""
        if metric in self.measures:
            return False
        return self.biased and get_metric(metric).deciding

    def verdict_text(self, p: Paired) -> str:
        """The verdict as printed: marked (reference), (named measure) or (incomplete judgments) where it applies."""
        if p.metric in self.measures:
            return f"{p.verdict} (named measure)"
        if get_metric(p.metric).reference:
            return f"{p.verdict} (reference)"
        return f"{p.verdict} (incomplete judgments)" if self.incomplete(p.metric) else p.verdict


def _metrics(run_a: BenchmarkRun, run_b: BenchmarkRun, metrics: Sequence[str] | None) -> list[str]:
    if metrics:
        return [m if m in run_a.measures and m in run_b.measures else get_metric(m).name for m in metrics]
    return [m for m in run_a.metric_names if m in run_b.metric_names]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for k in sorted(value):
            out.update(_flatten(value[k], f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): value}


def config_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """`key: A -> B` for every value of two stored retriever configs that differs, keys dotted and sorted.

    When both hold the retriever's own `config()` (`retriever`), the options given
    (`options`) are left out: they are already in it, with the defaults filled in.
    """
    if "retriever" in a and "retriever" in b:
        a = {k: v for k, v in a.items() if k != "options"}
        b = {k: v for k, v in b.items() if k != "options"}
    fa, fb = _flatten(a), _flatten(b)
    return [
        f"{k}: {_show(fa, k)} -> {_show(fb, k)}"
        for k in sorted(set(fa) | set(fb))
        if (k in fa, fa.get(k)) != (k in fb, fb.get(k))
    ]


def _show(flat: Mapping[str, Any], key: str) -> str:
    return json.dumps(flat[key], sort_keys=True) if key in flat else "(unset)"


def compare_runs(
    run_a: BenchmarkRun,
    run_b: BenchmarkRun,
    *,
    row: str = DECIDING_ROW,
    metrics: Sequence[str] | None = None,
    bootstrap: int | None = None,
    seed: int = 0,
    thresholds: cov.Thresholds | None = None,
    estimate: str | None = None,
    judge: str | None = None,
    ppi_lambda: float | None = None,
) -> Comparison:
    """Pair run B with run A on `row` (the deciding row by default) over the queries both saw.

    The coverage gate's lines (BIASED, the command that closes it) are in `coverage`, printed
    before `warnings` and before any verdict. `estimate="ppi"` adds the prediction-powered
    difference of each metric, from the runs' stored estimates (both made with `--estimate
    ppi`, with `judge` when given), lambda tuned on the differences unless `ppi_lambda` fixes it.
    """
    names = _metrics(run_a, run_b, metrics)
    ppi = (
        compare_estimates(run_a.estimates, run_b.estimates, (run_a.run_id, run_b.run_id), row, names, judge, ppi_lambda)
        if estimate == "ppi"
        else []
    )
    named = frozenset(m for m in names if m in run_a.measures)
    results = [
        compare_paired(
            m,
            run_a.per_query(row, m),
            run_b.per_query(row, m),
            0 if m in named else get_metric(m).direction,
            bootstrap=bootstrap,
            seed=seed,
        )
        for m in names
    ]
    coverage = cov.check_comparison(run_a, run_b, row, thresholds or cov.Thresholds())
    warnings = [w for w in (gates.fingerprint_warning([run_a, run_b]), gates.build_warning([run_a, run_b])) if w]
    for run in (run_a, run_b):
        if run.degraded:
            warnings.append(f"DEGRADED: run {run.run_id} ran with {', '.join(run.down_components)} down")
    diffs = (
        config_differences(run_a.retriever_config, run_b.retriever_config) if run_a.retriever == run_b.retriever else []
    )
    return Comparison(
        run_a.run_id,
        run_b.run_id,
        row,
        results,
        warnings,
        degraded=run_a.degraded or run_b.degraded,
        sides=(RunInfo.of(run_a), RunInfo.of(run_b)),
        config_differences=diffs,
        coverage=coverage,
        estimates=ppi,
        measures=named,
    )


def compare_rows(
    run: BenchmarkRun, *, base: str = DECIDING_ROW, metrics: Sequence[str] | None = None, seed: int = 0
) -> list[Comparison]:
    """Each other row of one run against its deciding row (paired t), for the run report."""
    names = _metrics(run, run, metrics)
    out = []
    for row in run.rows:
        if row == base or not run.values.get(row) or not run.values.get(base):
            continue
        results = [
            compare_paired(m, run.per_query(base, m), run.per_query(row, m), get_metric(m).direction, seed=seed)
            for m in names
        ]
        out.append(Comparison(f"{run.run_id} {base}", f"{run.run_id} {row}", row, results, [], run.degraded))
    return out
