"""The fifth gate: say when a verdict rests on documents nobody judged (contract section 10).

The golden set holds only what was served and what a pool returned, and every metric
scores an unjudged document as not relevant. A candidate that finds documents the log
never showed is therefore scored down for finding them. judged@k (metrics.py) measures
how much of each run's top k the golden set can see; this module turns it into the
warning `bench compare` and `bench run` print first.

Decisions
---------
- Coverage of a run at k is the mean of judged@k over the queries the comparison pairs
  (those both runs measured on the row compared); for `bench run` over the deciding
  row's queries.
- A comparison is BIASED at a cut-off k that both runs measured judged@k at when the two
  coverages differ by more than `max_gap` (default 0.10) or either is below `floor`
  (default 0.80). Strictly: a gap of exactly 0.10 or a coverage of exactly 0.80 passes.
- One BIASED line per flagged k, k ascending, naming the less-judged run first (B when
  both are equal); percentages rounded to whole numbers. Then the command that closes the
  gap, naming every run that is below the floor or the less judged at a flagged k (one
  `pool` replaces the queue, so one command): `goldenset pool --from-run RUN_ID
  [--from-run RUN_ID] --depth K --budget N`, K the largest flagged k.
- **The budget is sized to the gap** (contract 10.3, issue 38). Without one the command
  queued every unjudged pair of the runs' top K (14,107 pairs for 548 queries at depth 24),
  and the feedback strategy, which spends a budget where labels pay, never ran. Each label
  of a document in a run's top k raises that query's judged@k by 1/k (a query with k
  documents or more) and the mean by 1/(Q k), so a run at coverage c needs at least
  (t - c) Q k labels to reach the coverage t that passes: the floor, and for the less
  judged of two runs also the other's coverage less max_gap. N is the sum over the runs
  named of the largest such count over their flagged k, each rounded up (after rounding to
  6 decimals, so float noise never adds a pair): the fewest labels that can close the gap.
  The pool caps its pooled pairs at N, so the line says it queues at most N of them.
- Runs stored before judged@k existed have no coverage: no gate, and `coverage` is empty.
- The gate never changes a number or a verdict; it marks the verdicts as resting on
  incomplete judgments. `--fail-on-bias` makes it exit 5 (ComparisonBiased).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from goldenset.bench.metrics import judged_cutoffs
from goldenset.bench.runs import BenchmarkRun
from goldenset.errors import UsageError

DEFAULT_MAX_GAP = 0.10
DEFAULT_FLOOR = 0.80


@dataclass(frozen=True)
class Thresholds:
    """When coverage makes a comparison BIASED: a gap above max_gap, or a coverage below floor."""

    max_gap: float = DEFAULT_MAX_GAP
    floor: float = DEFAULT_FLOOR

    def __post_init__(self) -> None:
        for name, value, option in (
            ("max_gap", self.max_gap, "--coverage-max-gap"),
            ("floor", self.floor, "--coverage-floor"),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise UsageError(f"{option} must be a share between 0 and 1, got {value!r} ({name})")


@dataclass(frozen=True)
class CoverageCheck:
    """Coverage of each side at each k, the BIASED lines and the commands that close the gap."""

    coverage: dict[str, dict[str, float]]  # side label -> judged@k -> mean
    lines: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    @property
    def biased(self) -> bool:
        return bool(self.lines)

    @property
    def warning(self) -> str | None:
        """The BIASED lines and the commands, one text (what --json calls coverage_warning)."""
        return "\n".join(self.lines + self.commands) if self.lines else None


def is_biased(ca: float, cb: float, thresholds: Thresholds) -> bool:
    """10.3's rule for two coverages at one k: a gap above max_gap, or either below the floor (strict)."""
    return abs(ca - cb) > thresholds.max_gap or min(ca, cb) < thresholds.floor


def _pct(x: float) -> str:
    return f"{x:.0%}"


def _judged(run: BenchmarkRun, row: str, k: int, queries: Iterable[str] | None = None) -> list[float]:
    name = f"judged@{k}"
    if name not in run.metric_names or row not in run.values:
        return []
    per_query = run.per_query(row, name)
    keep = per_query.keys() if queries is None else [q for q in queries if q in per_query]
    return [per_query[q] for q in keep]


def mean_judged(run: BenchmarkRun, row: str, k: int, queries: Iterable[str] | None = None) -> float | None:
    """Mean judged@k of a run's row over `queries` (default: all it measured); None without any."""
    values = _judged(run, row, k, queries)
    return sum(values) / len(values) if values else None


def labels_to_close(coverage: float, target: float, queries: int, k: int) -> int:
    """The fewest labels that lift a mean judged@k of `coverage` over `queries` to `target`:
    ceil((target - coverage) x queries x k), rounded to 6 decimals first; 0 when it is there."""
    return max(0, math.ceil(round((target - coverage) * queries * k, 6)))


def close_command(run_ids: Iterable[str], k: int, budget: int | None = None) -> str:
    """The one command that pools what the runs returned and the golden set never judged."""
    cmd = "goldenset pool " + " ".join(f"--from-run {r}" for r in run_ids) + f" --depth {k}"
    return cmd if budget is None else f"{cmd} --budget {budget}"


def _commands(needs: Mapping[str, tuple[int, int]]) -> list[str]:
    """`needs`: run_id -> (largest flagged k, labels it needs). One command for every run to pool:
    a second `pool` would replace the first one's queue."""
    if not needs:
        return []
    budget = max(1, sum(n for _, n in needs.values()))
    cmd = close_command(needs, max(k for k, _ in needs.values()), budget)
    return [
        f"To close it: `{cmd}` (it queues at most {budget} pooled pairs: the fewest labels that can close "
        "the gap), label the queue, `goldenset build`, then run the benchmark again."
    ]


def _need(needs: dict[str, tuple[int, int]], run_id: str, k: int, labels: int) -> None:
    before = needs.get(run_id, (0, 0))
    needs[run_id] = (max(before[0], k), max(before[1], labels))


def check_comparison(
    run_a: BenchmarkRun, run_b: BenchmarkRun, row: str, thresholds: Thresholds = Thresholds()
) -> CoverageCheck:
    """Coverage of A and B on `row` over the queries both measured; BIASED lines per flagged k."""
    ks = sorted(set(judged_cutoffs(run_a.metric_names)) & set(judged_cutoffs(run_b.metric_names)))
    if not ks or row not in run_a.values or row not in run_b.values:
        return CoverageCheck({"a": {}, "b": {}})
    both = sorted(set(run_a.values[row]) & set(run_b.values[row]))
    cov: dict[str, dict[str, float]] = {"a": {}, "b": {}}
    lines: list[str] = []
    needs: dict[str, tuple[int, int]] = {}
    for k in ks:
        ja, jb = _judged(run_a, row, k, both), _judged(run_b, row, k, both)
        if not ja or not jb:
            continue
        ca, cb = sum(ja) / len(ja), sum(jb) / len(jb)
        cov["a"][f"judged@{k}"], cov["b"][f"judged@{k}"] = ca, cb
        if not is_biased(ca, cb, thresholds):
            continue
        (low, low_run, cl, nl), (high, high_run, ch, nh) = (
            (("A", run_a, ca, len(ja)), ("B", run_b, cb, len(jb)))
            if ca < cb
            else (("B", run_b, cb, len(jb)), ("A", run_a, ca, len(ja)))
        )
        lines.append(
            f"BIASED: run {low}'s top {k} is {_pct(cl)} judged against {_pct(ch)} for run {high}; "
            "its unjudged documents count as misses."
        )
        target = max(thresholds.floor, ch - thresholds.max_gap)
        _need(needs, low_run.run_id, k, labels_to_close(cl, target, nl, k))
        if ch < thresholds.floor:
            _need(needs, high_run.run_id, k, labels_to_close(ch, thresholds.floor, nh, k))
    if run_a.run_id in needs and run_b.run_id in needs:
        # A first, as the sides are printed.
        needs = {run_a.run_id: needs[run_a.run_id], run_b.run_id: needs[run_b.run_id]}
    return CoverageCheck(cov, lines, _commands(needs))


def check_run(run: BenchmarkRun, row: str, floor: float = DEFAULT_FLOOR) -> CoverageCheck:
    """`bench run`'s warning: the deciding row's judged@k below the floor at any k."""
    cov: dict[str, float] = {}
    lines: list[str] = []
    needs: dict[str, tuple[int, int]] = {}
    for k in judged_cutoffs(run.metric_names):
        values = _judged(run, row, k)
        if not values:
            continue
        c = cov[f"judged@{k}"] = sum(values) / len(values)
        if c < floor:
            lines.append(
                f"BIASED: run {run.run_id}'s top {k} is {_pct(c)} judged, below the floor of {_pct(floor)}; "
                "its unjudged documents count as misses."
            )
            _need(needs, run.run_id, k, labels_to_close(c, floor, len(values), k))
    return CoverageCheck({"run": cov}, lines, _commands(needs))


@dataclass(frozen=True)
class RunsCoverage:
    """The fifth gate over the pairs of an N-run comparison (contract 16.4): each pair by 10.3's rule,
    each flagged run printed once."""

    coverage: dict[str, dict[str, float]]  # run_id -> judged@k -> mean over the compared queries
    biased_pairs: frozenset[tuple[str, str]]  # (A, B) run ids of every BIASED pair
    lines: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    @property
    def biased(self) -> bool:
        return bool(self.biased_pairs)

    @property
    def warning(self) -> str | None:
        return "\n".join(self.lines + self.commands) if self.lines else None


def check_runs(
    runs: Sequence[BenchmarkRun],
    row: str,
    pairs: Sequence[tuple[int, int]],
    queries: Iterable[str],
    thresholds: Thresholds = Thresholds(),
) -> RunsCoverage:
    """Coverage of every run on `row` over `queries`; each pair (A, B) = (runs[i], runs[j]) checked at each k.

    A BIASED pair flags its less-judged run (B when both are equal) at that k, and the other one too
    when it is below the floor. Each flagged run gets one line, its flagged k ascending: against the
    best-judged run that flagged it, or below the floor when only the floor did.
    """
    keep = sorted(set(queries))
    common = [set(judged_cutoffs(r.metric_names)) for r in runs]
    ks = sorted(set.intersection(*common)) if common else []
    cov: dict[str, dict[str, float]] = {r.run_id: {} for r in runs}
    for r in runs:
        for k in ks:
            c = mean_judged(r, row, k, keep)
            if c is not None:
                cov[r.run_id][f"judged@{k}"] = c
    biased: set[tuple[str, str]] = set()
    flags: dict[int, dict[int, int | None]] = {}  # run index -> k -> best-judged run against it (None: floor)
    for i, j in pairs:
        for k in ks:
            ci, cj = cov[runs[i].run_id].get(f"judged@{k}"), cov[runs[j].run_id].get(f"judged@{k}")
            if ci is None or cj is None or not is_biased(ci, cj, thresholds):
                continue
            biased.add((runs[i].run_id, runs[j].run_id))
            low, high = (i, j) if ci < cj else (j, i)
            _flag(flags, cov, runs, low, k, high)
            if max(ci, cj) < thresholds.floor:
                flags.setdefault(high, {}).setdefault(k, None)
    lines = [_run_line(runs[i], flags[i], cov, runs, thresholds) for i in sorted(flags)]
    needs: dict[str, tuple[int, int]] = {}
    for i in sorted(flags):  # the budget of 10.3, each flagged k against what flagged it
        for k, against in flags[i].items():
            c = cov[runs[i].run_id][f"judged@{k}"]
            target = thresholds.floor
            if against is not None:
                target = max(target, cov[runs[against].run_id][f"judged@{k}"] - thresholds.max_gap)
            n = len(_judged(runs[i], row, k, keep))
            _need(needs, runs[i].run_id, k, labels_to_close(c, target, n, k))
    return RunsCoverage(cov, frozenset(biased), lines, _commands(needs))


def _flag(
    flags: dict[int, dict[int, int | None]],
    cov: Mapping[str, Mapping[str, float]],
    runs: Sequence[BenchmarkRun],
    low: int,
    k: int,
    against: int,
) -> None:
    by_k = flags.setdefault(low, {})
    before = by_k.get(k)
    name = f"judged@{k}"
    if before is None or cov[runs[against].run_id][name] > cov[runs[before].run_id][name]:
        by_k[k] = against


def _run_line(
    run: BenchmarkRun,
    by_k: Mapping[int, int | None],
    cov: Mapping[str, Mapping[str, float]],
    runs: Sequence[BenchmarkRun],
    thresholds: Thresholds,
) -> str:
    parts = []
    for k in sorted(by_k):
        mine = f"top {k} is {_pct(cov[run.run_id][f'judged@{k}'])} judged"
        other = by_k[k]
        if other is None:
            parts.append(f"{mine}, below the floor of {_pct(thresholds.floor)}")
        else:
            parts.append(f"{mine} against {_pct(cov[runs[other].run_id][f'judged@{k}'])} for run {runs[other].run_id}")
    return f"BIASED: run {run.run_id}'s " + "; its ".join(parts) + "; its unjudged documents count as misses."
