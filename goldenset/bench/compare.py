"""Comparing two stored runs (or two rows of one run) query by query."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from goldenset.bench import gates
from goldenset.bench.metrics import get_metric
from goldenset.bench.paired import Paired, compare_paired
from goldenset.bench.runs import DECIDING_ROW, BenchmarkRun


@dataclass
class Comparison:
    """B against A on one row, metric by metric, with the warnings to print first."""

    a: str
    b: str
    row: str
    results: list[Paired]
    warnings: list[str] = field(default_factory=list)
    degraded: bool = False

    @property
    def n(self) -> int:
        return max((p.n for p in self.results), default=0)


def _metrics(run_a: BenchmarkRun, run_b: BenchmarkRun, metrics: Sequence[str] | None) -> list[str]:
    if metrics:
        return [get_metric(m).name for m in metrics]
    return [m for m in run_a.metric_names if m in run_b.metric_names]


def compare_runs(run_a: BenchmarkRun, run_b: BenchmarkRun, *, row: str = DECIDING_ROW,
                 metrics: Sequence[str] | None = None, bootstrap: int | None = None,
                 seed: int = 0) -> Comparison:
    """Pair run B with run A on `row` (the deciding row by default) over the queries both saw."""
    names = _metrics(run_a, run_b, metrics)
    results = [
        compare_paired(m, run_a.per_query(row, m), run_b.per_query(row, m), get_metric(m).direction,
                       bootstrap=bootstrap, seed=seed)
        for m in names
    ]
    warnings = [w for w in (gates.fingerprint_warning([run_a, run_b]), gates.build_warning([run_a, run_b])) if w]
    for run in (run_a, run_b):
        if run.degraded:
            warnings.append(f"DEGRADED: run {run.run_id} ran with {', '.join(run.down_components)} down")
    return Comparison(run_a.run_id, run_b.run_id, row, results, warnings,
                      degraded=run_a.degraded or run_b.degraded)


def compare_rows(run: BenchmarkRun, *, base: str = DECIDING_ROW, metrics: Sequence[str] | None = None,
                 seed: int = 0) -> list[Comparison]:
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
