"""Comparing many stored runs at once without fooling yourself (contract 16).

`bench compare RUN_1 ... RUN_k` pairs every two runs (A = the earlier in the command, B the
later; or, with `--baseline`, the baseline as A against every other run as B) on one row,
and tests each pair on each deciding metric. All those tests are one *family*: pairs x
deciding metrics, and the correction (Holm by default) holds the chance of any false
verdict among them at 5%.

Decisions
---------
- **Deciding metrics** are those a gate or verdict reads: not a reference metric (judged@k,
  the condensed ones) and not one without a better direction (hole@k). Only they are in
  the family and get a verdict. Reference metrics and named measures (`bench run --measure`)
  asked for with `--metric` are compared beside them (difference, interval, raw p) with no
  corrected p and no verdict: a verdict outside the corrected family is exactly the
  uncorrected look this command exists to avoid, and no gate reads a named measure.
- **One set of queries**: every comparison and every mean is over the queries all the runs
  measured on the row, so the summary table's means are comparable down a column (ranx
  asks the same); the queries some run lacks are counted and left out.
- **The interval** printed beside each difference is the raw 95% paired t interval, the
  two-run command's. The verdict reads the corrected p-value instead, so the two can
  disagree: with the t test only one way (a raw interval excluding 0 whose corrected p is
  0.05 or more: `indistinguishable (after correction)`); with the randomization test both
  ways (`(randomization test)`: the verdict reads the permutation p, the interval is
  Student's). A note says so under the table; the JSON carries `interval_agrees`.
- **Marks**: in the summary table a run's mean carries the letter of every run it is
  significantly better than on that metric (corrected, direction taken from the metric:
  lower noise is better), as ranx's report does with superscripts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from goldenset.bench import coverage as cov
from goldenset.bench import gates
from goldenset.bench import significance as sig
from goldenset.bench.compare import RunInfo
from goldenset.bench.metrics import get_metric
from goldenset.bench.paired import t_interval
from goldenset.bench.runs import DECIDING_ROW, BenchmarkRun
from goldenset.errors import UsageError

LETTERS = "abcdefghijklmnopqrstuvwxyz"
SUPERSCRIPTS = "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ۹ʳˢᵗᵘᵛʷˣʸᶻ"  # ranx's, q included
DECIDING, REFERENCE, MEASURE = "deciding", "reference", "measure"


@dataclass(frozen=True)
class PairTest:
    """One comparison: B against A on one metric (B - A per query)."""

    a: str
    b: str
    metric: str
    kind: str  # deciding (in the family), reference or measure (beside it)
    n: int
    mean_a: float
    mean_b: float
    diff: float
    lo: float  # raw 95% paired t interval
    hi: float
    p: float
    mc_error: float | None  # the randomization test's Monte Carlo standard error
    p_corrected: float | None  # None outside the family
    significant: bool | None
    verdict: str | None  # better / worse / indistinguishable; None outside the family
    incomplete_judgments: bool = False

    @property
    def interval_agrees(self) -> bool | None:
        """Whether the raw interval says what the verdict says (excludes 0 exactly when significant)."""
        if self.significant is None:
            return None
        return (self.lo > 0.0 or self.hi < 0.0) == self.significant

    def verdict_text(self, alpha: float = sig.ALPHA) -> str:
        """The verdict as printed, with the reason when it and the interval disagree (module docstring)."""
        if self.kind == REFERENCE:
            return "(reference)"
        if self.kind == MEASURE:
            return "(named measure)"
        text = str(self.verdict)
        if self.interval_agrees is False:
            after = not self.significant and self.p < alpha
            text += " (after correction)" if after else " (randomization test)"
        return text + (" (incomplete judgments)" if self.incomplete_judgments else "")


@dataclass
class ManyComparison:
    """Every comparison of one `bench compare` of several runs, the family's correction and the summary."""

    runs: list[RunInfo]
    row: str
    test: str
    correction: str
    baseline: str | None
    permutations: int | None
    seed: int | None
    metrics: list[str]  # deciding metrics: the family's
    others: list[str]  # reference metrics and named measures, compared beside
    queries: list[str]
    left_out: int  # queries some run did not measure on the row
    tests: list[PairTest]
    coverage: cov.RunsCoverage
    warnings: list[str] = field(default_factory=list)
    degraded: bool = False
    # run_id -> metric -> (mean, lo, hi): the 95% t interval of the run's mean over the queries
    means: dict[str, dict[str, tuple[float, float, float]]] = field(default_factory=dict)
    alpha: float = sig.ALPHA

    @property
    def family_size(self) -> int:
        return sum(1 for t in self.tests if t.kind == DECIDING)

    @property
    def n(self) -> int:
        return len(self.queries)

    @property
    def biased(self) -> bool:
        return self.coverage.biased

    @property
    def coverage_lines(self) -> list[str]:
        return self.coverage.lines + self.coverage.commands

    def letter(self, run_id: str) -> str:
        return LETTERS[[r.run_id for r in self.runs].index(run_id)]

    def better_than(self, run_id: str, metric: str) -> list[str]:
        """Letters of the runs `run_id` is significantly better than on `metric`, in table order."""
        beaten = set()
        for t in self.tests:
            if t.metric != metric or not t.significant:
                continue
            if t.verdict == "better" and t.b == run_id:
                beaten.add(t.a)
            elif t.verdict == "worse" and t.a == run_id:
                beaten.add(t.b)
        return [self.letter(r.run_id) for r in self.runs if r.run_id in beaten]


def pairs_of(run_ids: Sequence[str], baseline: str | None) -> list[tuple[int, int]]:
    """(A, B) indices: every two runs in command order, or the baseline against each other run."""
    if baseline is None:
        return [(i, j) for i in range(len(run_ids)) for j in range(i + 1, len(run_ids))]
    base = list(run_ids).index(baseline)
    return [(base, j) for j in range(len(run_ids)) if j != base]


def order_runs(run_ids: Sequence[str], baseline: str | None) -> list[str]:
    """The runs in table order, checked: two or more, distinct, at most 26; a baseline not named is put first."""
    ids = list(run_ids)
    if baseline is not None and baseline not in ids:
        ids.insert(0, baseline)
    dup = sorted({r for r in ids if ids.count(r) > 1})
    if dup:
        raise UsageError(f"run {dup[0]!r} is named twice; name each run once")
    if len(ids) < 2:
        raise UsageError("bench compare needs two runs or more (`goldenset bench list` shows them)")
    if len(ids) > len(LETTERS):
        raise UsageError(f"{len(ids)} runs is more than the {len(LETTERS)} the summary table can letter; compare fewer")
    return ids


def resolve_metrics(runs: Sequence[BenchmarkRun], names: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """(deciding metrics, others) to compare: those asked for, or every deciding metric all runs measured."""
    if not names:
        first = runs[0].metric_names
        shared = [m for m in first if _kind(m) == DECIDING and all(m in r.metric_names for r in runs)]
        if not shared:
            raise UsageError("the runs share no deciding metric to compare; name one with --metric")
        return shared, []
    deciding: list[str] = []
    others: list[str] = []
    for name in names:
        resolved = name if all(name in r.measures for r in runs) else _metric_name(runs, name)
        for r in runs:
            if resolved not in r.metric_names and resolved not in r.measures:
                raise UsageError(
                    f"run {r.run_id} did not measure {name!r}; it measured {', '.join(r.metric_names + r.measures)}"
                )
        target = deciding if _kind(resolved, runs[0]) == DECIDING else others
        if resolved not in target:
            target.append(resolved)
    return deciding, others


def _metric_name(runs: Sequence[BenchmarkRun], name: str) -> str:
    """The canonical name of a metric goldenset computes; else the run lacking `name` as a named measure."""
    try:
        return get_metric(name).name
    except UsageError:
        run = next(r for r in runs if name not in r.measures)
        raise UsageError(
            f"run {run.run_id} did not measure {name!r}; it measured {', '.join(run.metric_names + run.measures)} "
            f"(a named measure is stored by `bench run --measure {name}`)"
        ) from None


def _kind(metric: str, run: BenchmarkRun | None = None) -> str:
    if run is not None and metric in run.measures:
        return MEASURE
    return DECIDING if get_metric(metric).deciding else REFERENCE


def common_queries(runs: Sequence[BenchmarkRun], row: str) -> tuple[list[str], int]:
    """The queries every run measured on `row`, sorted, and how many others some run measured."""
    for r in runs:
        if row not in r.values:
            raise UsageError(f"run {r.run_id} has no row {row!r}; it has {', '.join(r.rows)}")
    sets = [set(r.values[row]) for r in runs]
    both = set.intersection(*sets)
    if not both:
        raise UsageError(f"the runs have no query in common on row {row!r}; nothing to compare")
    return sorted(both), len(set.union(*sets) - both)


def compare_many(
    runs: Sequence[BenchmarkRun],
    *,
    row: str = DECIDING_ROW,
    metrics: Sequence[str] | None = None,
    baseline: str | None = None,
    test: str = sig.DEFAULT_TEST,
    correction: str = sig.DEFAULT_CORRECTION,
    permutations: int = sig.DEFAULT_PERMUTATIONS,
    seed: int = 0,
    thresholds: cov.Thresholds | None = None,
) -> ManyComparison:
    """Every pair of `runs` (in table order, see order_runs) on `row`: tests, corrections, verdicts, summary."""
    sig.check_test(test)
    sig.check_correction(correction)
    if test == "randomization":
        sig.check_permutations(permutations)
    ids = [r.run_id for r in runs]
    pairs = pairs_of(ids, baseline)
    queries, left_out = common_queries(runs, row)
    deciding, others = resolve_metrics(runs, metrics)
    values = {(r.run_id, m): np.array([r.values[row][q][m] for q in queries]) for r in runs for m in deciding + others}
    plan = [(i, j, m) for m in deciding for i, j in pairs] + [(i, j, m) for m in others for i, j in pairs]
    diffs = np.column_stack([values[ids[j], m] - values[ids[i], m] for i, j, m in plan])
    if test == "t":
        p, mc = sig.t_test(diffs), None
    else:
        p, mc = sig.randomization_test(diffs, permutations, seed)
    family = len(deciding) * len(pairs)
    corrected = sig.adjust(p[:family], correction)
    gate = cov.check_runs(runs, row, pairs, queries, thresholds or cov.Thresholds())
    tests = []
    for c, (i, j, m) in enumerate(plan):
        lo, hi = t_interval(diffs[:, c])
        kind = DECIDING if c < family else _kind(m, runs[0])
        decided = c < family
        significant = sig.significant(float(corrected[c]), sig.ALPHA) if decided else None
        diff = float(diffs[:, c].mean())
        tests.append(
            PairTest(
                a=ids[i],
                b=ids[j],
                metric=m,
                kind=kind,
                n=len(queries),
                mean_a=float(values[ids[i], m].mean()),
                mean_b=float(values[ids[j], m].mean()),
                diff=diff,
                lo=lo,
                hi=hi,
                p=float(p[c]),
                mc_error=None if mc is None else float(mc[c]),
                p_corrected=float(corrected[c]) if decided else None,
                significant=significant,
                verdict=_verdict(significant, diff, get_metric(m).direction) if decided else None,
                incomplete_judgments=decided and (ids[i], ids[j]) in gate.biased_pairs,
            )
        )
    warnings = [w for w in (gates.fingerprint_warning(runs), gates.build_warning(runs)) if w]
    warnings += [f"DEGRADED: run {r.run_id} ran with {', '.join(r.down_components)} down" for r in runs if r.degraded]
    return ManyComparison(
        runs=[RunInfo.of(r) for r in runs],
        row=row,
        test=test,
        correction=correction,
        baseline=baseline,
        permutations=permutations if test == "randomization" else None,
        seed=seed if test == "randomization" else None,
        metrics=deciding,
        others=others,
        queries=queries,
        left_out=left_out,
        tests=tests,
        coverage=gate,
        warnings=warnings,
        degraded=any(r.degraded for r in runs),
        means={r.run_id: {m: _mean_interval(values[r.run_id, m]) for m in deciding + others} for r in runs},
    )


def _verdict(significant: bool | None, diff: float, direction: int) -> str:
    if not significant or diff == 0.0:
        return "indistinguishable"
    return "better" if (diff > 0) == (direction > 0) else "worse"


def _mean_interval(values: np.ndarray) -> tuple[float, float, float]:
    lo, hi = t_interval(values)
    mean = float(values.mean())
    return mean, (mean if math.isinf(lo) else lo), (mean if math.isinf(hi) else hi)
