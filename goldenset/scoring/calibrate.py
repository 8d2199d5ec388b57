"""Calibration of a score against labels (contract 8.2): cutoffs, single cutoff, review band, bootstrap, slices.

Everything here works on typed records (`ScoredPair`), never on the warehouse.

- Cutoffs: every distinct score ascending, then None (nothing passes). A pair
  passes at c when score >= c. false_passes(c) counts unacceptable pairs that
  pass, false_fails(c) acceptable pairs that fail; the rates divide by the
  number of unacceptable / acceptable pairs, 0 when that number is 0.
- single: the cutoff minimising cost = R x false_passes + false_fails; on a tie
  the higher cutoff (None is the highest). R, A and B are read as the decimals
  they print as (`Fraction(repr(x))`), so a rate of exactly 0.3 meets A = 0.3
  and costs tie exactly.
- band: high = the lowest cutoff whose false-pass rate <= A; low = the highest
  score cutoff whose false-fail rate <= B. When low < high (a None high is above
  every score) pairs with low <= score < high go to review. Note: with at
  least one scored pair the lowest score has false-fail rate 0, so for B >= 0
  some low always exists; `no cutoff meets max-false-fail` is kept for the
  contract's completeness and is reachable only through `choose_band` on a table.
- bootstrap: `default_rng(seed).integers(0, n, size=(N, n))`, drawn in ONE call,
  row b being resample b's indices into the scored pairs in input order. On
  each resample: both rates at the full sample's single cutoff, and the
  resample's own single cutoff (on its own distinct scores). Percentiles 2.5,
  25, 50, 75, 97.5 by numpy's default (linear) method. The *interval of the
  cutoff* is [lower, higher] of the resamples' own single cutoffs sorted (None
  above every score): the elements at index floor(0.025 (N-1)) and
  ceil(0.975 (N-1)), numpy's `lower` and `higher` percentile methods, so both
  ends are cutoffs some resample chose.
- slices: each project computed on its own pairs with the same rules; summaries
  are of the rates every slice gets at the *global* single cutoff (what one
  global policy does to each project): macro = unweighted mean over slices,
  traffic-weighted = weighted by the caller's traffic per project (serves),
  else by the slice's scored pairs. A slice whose own single cutoff lies
  outside the global cutoff's interval gets a warning (needs the bootstrap).
- holdout: with `holdout_after` D every choice is made on the pairs labelled
  before D 00:00 UTC; `holdout` reports the rates at those cutoffs on the pairs
  labelled on or after it. Pairs without a label time take part in neither.
- repeats: a pair scored N times is calibrated on the mean (correctly rounded
  from the exact values, so N equal scores average to that score); per chosen cutoff
  (single, band low and high) the report counts how many repeats pass. A pair
  with 0 < passes < N at any of them is unstable and goes to review: it is never
  re-asked until it passes.
- rounding: rates, shares and percentiles are printed rounded to 4 decimals
  half away from zero on the decimal the float prints as (`round4`); cutoffs
  and cost are exact.

The outputs live next door: `report` (the `--json` objects), `plot` (the PNG)
and `policy` (the manifest and `--check`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from goldenset.errors import GoldensetError, InputError, UsageError

PERCENTILES = (2.5, 25.0, 50.0, 75.0, 97.5)
AGAINST = ("human", "log")
NO_BAND_NEEDED = "no band needed"
NO_LOW = "no cutoff meets max-false-fail"
_Q4 = Decimal("0.0001")


def round4(x: float) -> float:
    """Round to 4 decimals, half away from zero, on the decimal the float prints as."""
    return float(Decimal(repr(float(x))).quantize(_Q4, rounding=ROUND_HALF_UP))


def exact_decimal(x: float) -> Fraction:
    """The value as the user typed it: 0.3 is 3/10, not the nearest binary double."""
    return Fraction(repr(float(x)))


# --------------------------------------------------------------------------- records
@dataclass(frozen=True)
class ScoredPair:
    """A labelled pair with its score; `repeats` holds every score when it was scored N > 1 times."""

    query_id: str
    doc_id: str
    project: str
    score: float
    acceptable: bool
    labelled_at: datetime | None = None
    repeats: tuple[float, ...] = ()

    @classmethod
    def from_repeats(
        cls,
        query_id: str,
        doc_id: str,
        project: str,
        scores: Sequence[float],
        acceptable: bool,
        labelled_at: datetime | None = None,
    ) -> ScoredPair:
        """A pair scored several times: calibrated on the mean, the scores kept for the stability report."""
        values = tuple(float(s) for s in scores)
        if not values:
            raise InputError(f"pair ({query_id}, {doc_id}) has no score; score it at least once")
        # The correctly rounded mean of the exact values: N equal scores average to that very score
        # (np.mean gives 0.10000000000000002 for three 0.1s, a cutoff no pair has).
        mean = float(sum(map(Fraction, values), Fraction(0)) / len(values))
        return cls(query_id, doc_id, project, mean, acceptable, labelled_at, values)


@dataclass(frozen=True)
class ErrorPair:
    """A pair that has no score, and why (a scorer error or an invalid answer)."""

    query_id: str
    doc_id: str
    reason: str


@dataclass(frozen=True)
class Costs:
    """R (cost of an escape over the cost of a review), A (max false-pass rate), B (max false-fail rate)."""

    cost_ratio: float = 1.0
    max_false_pass: float = 0.05
    max_false_fail: float = 0.05

    def __post_init__(self):
        if not (math.isfinite(self.cost_ratio) and self.cost_ratio >= 0):
            raise UsageError(f"--cost-ratio {self.cost_ratio!r} is not a cost ratio; use a number >= 0, e.g. 1")
        for flag, v in (("--max-false-pass", self.max_false_pass), ("--max-false-fail", self.max_false_fail)):
            if not (math.isfinite(v) and 0 <= v <= 1):
                raise UsageError(f"{flag} {v!r} is not a rate; use a number from 0 to 1, e.g. 0.05")


@dataclass(frozen=True)
class CutoffRow:
    """The counts at one cutoff (None: nothing passes) and the group sizes the rates divide by."""

    cutoff: float | None
    false_passes: int
    false_fails: int
    acceptable: int
    unacceptable: int

    @property
    def false_pass_rate(self) -> float:
        return _rate(self.false_passes, self.unacceptable)

    @property
    def false_fail_rate(self) -> float:
        return _rate(self.false_fails, self.acceptable)

    def exact_rates(self) -> tuple[Fraction, Fraction]:
        """(false-pass rate, false-fail rate) as exact fractions, for comparing with A and B."""
        return (
            Fraction(self.false_passes, self.unacceptable) if self.unacceptable else Fraction(0),
            Fraction(self.false_fails, self.acceptable) if self.acceptable else Fraction(0),
        )


@dataclass(frozen=True)
class Single:
    """The single cutoff: its row and cost = R x false_passes + false_fails (int when exact)."""

    row: CutoffRow
    cost: int | float


@dataclass(frozen=True)
class Band:
    """The review band [low, high): high None is above every score."""

    low: float
    high: float | None
    review: int
    review_share: float


@dataclass(frozen=True)
class Measurement:
    """Everything chosen on one set of pairs (the whole sample, a slice, or the holdout's choice set)."""

    pairs: int
    acceptable: int
    unacceptable: int
    cutoffs: tuple[CutoffRow, ...]
    single: Single
    high: CutoffRow
    low: CutoffRow | None
    band: Band | None
    band_note: str | None


@dataclass(frozen=True)
class BootstrapResult:
    """Percentiles of both rates at the full sample's single cutoff, over N resamples."""

    n: int
    seed: int
    false_pass_rate: tuple[float, ...]
    false_fail_rate: tuple[float, ...]
    other_cutoff_share: float
    cutoff_interval: tuple[float | None, float | None]


@dataclass(frozen=True)
class Holdout:
    """The rates of cutoffs chosen before a date, measured on pairs labelled on or after it."""

    after: date
    chosen_on: int
    undated: int
    pairs: int
    acceptable: int
    unacceptable: int
    single: Single
    band: Band | None


@dataclass(frozen=True)
class StabilityRow:
    """One pair scored N times: its spread and, per chosen cutoff, how many repeats pass."""

    query_id: str
    doc_id: str
    mean: float
    min: float
    max: float
    n: int
    passes: tuple[tuple[str, int], ...]
    distance: float

    @property
    def unstable(self) -> bool:
        return any(0 < k < self.n for _, k in self.passes)


@dataclass(frozen=True)
class Calibration:
    """The outcome of `calibrate`: what `to_json` prints and `policy_manifest` stores."""

    scorer: str
    version: str
    against: str
    costs: Costs
    measurement: Measurement
    errors: tuple[ErrorPair, ...]
    bootstrap: BootstrapResult | None = None
    slices: dict[str, Measurement] | None = None
    slice_summary: dict[str, Any] | None = None
    holdout: Holdout | None = None
    stability: tuple[StabilityRow, ...] | None = None
    repeats: int = 1
    warnings: tuple[str, ...] = field(default=())


# --------------------------------------------------------------------------- the rules
def _rate(k: int, n: int) -> float:
    return k / n if n else 0.0


def _split(scores: np.ndarray, acceptable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.sort(scores[acceptable]), np.sort(scores[~acceptable])


def _counts(sorted_acc: np.ndarray, sorted_unacc: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """false_passes and false_fails at each finite cutoff (arrays), by binary search."""
    fp = len(sorted_unacc) - np.searchsorted(sorted_unacc, cuts, side="left")
    ff = np.searchsorted(sorted_acc, cuts, side="left")
    return fp, ff


def _row(c: float | None, fp: int, ff: int, n_acc: int, n_unacc: int) -> CutoffRow:
    return CutoffRow(c, int(fp), int(ff), n_acc, n_unacc)


def cutoff_table(scores: Sequence[float], acceptable: Sequence[bool]) -> tuple[CutoffRow, ...]:
    """One row per distinct score ascending, then the None row (nothing passes)."""
    s = np.asarray(scores, dtype=float)
    a = np.asarray(acceptable, dtype=bool)
    sa, su = _split(s, a)
    cuts = np.unique(s)
    fp, ff = _counts(sa, su, cuts)
    rows = [_row(float(c), f, g, len(sa), len(su)) for c, f, g in zip(cuts, fp, ff, strict=True)]
    rows.append(_row(None, 0, len(sa), len(sa), len(su)))
    return tuple(rows)


def _cost(fp: int, ff: int, r: Fraction) -> int | float:
    c = r * fp + ff
    return int(c) if c.denominator == 1 else float(c)


def _single_index(fp: np.ndarray, ff: np.ndarray, r: Fraction) -> int:
    """Index of the cheapest cutoff; ties go to the last (highest) one."""
    p, q = r.numerator, r.denominator
    bound = (max(p, q) + 1) * (int(fp.max(initial=0)) + int(ff.max(initial=0)) + 1)
    # Costs are compared exactly, scaled by q: p*fp + q*ff. Python ints only when int64 could overflow.
    dtype: Any = np.int64 if bound < 2**62 else object
    costs = p * fp.astype(dtype) + q * ff.astype(dtype)
    best = min(costs.tolist()) if dtype is object else costs.min()
    return int(np.flatnonzero(costs == best)[-1])


def choose_single(rows: Sequence[CutoffRow], cost_ratio: float) -> Single:
    """The row minimising R x false_passes + false_fails; on a tie the higher cutoff."""
    r = exact_decimal(cost_ratio)
    i = _single_index(np.array([x.false_passes for x in rows]), np.array([x.false_fails for x in rows]), r)
    return Single(rows[i], _cost(rows[i].false_passes, rows[i].false_fails, r))


def choose_band(
    rows: Sequence[CutoffRow], scores: Sequence[float], max_false_pass: float, max_false_fail: float
) -> tuple[CutoffRow, CutoffRow | None, Band | None, str | None]:
    """(high row, low row or None, band or None, band_note) under 8.2's band rule.

    `rows` ascend with the None row last, as `cutoff_table` makes them.
    """
    a, b = exact_decimal(max_false_pass), exact_decimal(max_false_fail)
    # The None row passes nothing, so its false-pass rate is 0 <= A: a high always exists.
    high = next((x for x in rows if x.exact_rates()[0] <= a), rows[-1])
    lows = [(x, x.cutoff) for x in rows if x.cutoff is not None and x.exact_rates()[1] <= b]
    if not lows:
        return high, None, None, NO_LOW
    low, lo = lows[-1]
    if high.cutoff is None or lo < high.cutoff:
        s = np.asarray(scores, dtype=float)
        inside = (s >= lo) if high.cutoff is None else (s >= lo) & (s < high.cutoff)
        k = int(inside.sum())
        return high, low, Band(lo, high.cutoff, k, _rate(k, len(s))), None
    return high, low, None, NO_BAND_NEEDED


def measure(pairs: Sequence[ScoredPair], costs: Costs) -> Measurement:
    """Cutoff table, single cutoff and band of one set of pairs."""
    scores = [p.score for p in pairs]
    acc = [p.acceptable for p in pairs]
    rows = cutoff_table(scores, acc)
    single = choose_single(rows, costs.cost_ratio)
    high, low, band, note = choose_band(rows, scores, costs.max_false_pass, costs.max_false_fail)
    n_acc = sum(acc)
    return Measurement(len(pairs), n_acc, len(pairs) - n_acc, rows, single, high, low, band, note)


def rates_at(pairs: Sequence[ScoredPair], cutoff: float | None) -> CutoffRow:
    """Counts and rates of one fixed cutoff on a set of pairs (a cutoff chosen elsewhere)."""
    n_acc = sum(p.acceptable for p in pairs)
    n_unacc = len(pairs) - n_acc
    if cutoff is None:
        return _row(None, 0, n_acc, n_acc, n_unacc)
    fp = sum(1 for p in pairs if not p.acceptable and p.score >= cutoff)
    ff = sum(1 for p in pairs if p.acceptable and p.score < cutoff)
    return _row(cutoff, fp, ff, n_acc, n_unacc)


def _band_on(pairs: Sequence[ScoredPair], band: Band | None) -> Band | None:
    if band is None:
        return None
    k = sum(1 for p in pairs if p.score >= band.low and (band.high is None or p.score < band.high))
    return Band(band.low, band.high, k, _rate(k, len(pairs)))


# --------------------------------------------------------------------------- bootstrap
def draw_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    """The resamples' indices: `default_rng(seed).integers(0, n, size=(resamples, n))`, one call."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def bootstrap(
    pairs: Sequence[ScoredPair], single_cutoff: float | None, cost_ratio: float, resamples: int, seed: int
) -> BootstrapResult:
    """N resamples with replacement: percentiles of both rates at `single_cutoff`, and how often the choice moves."""
    s = np.array([p.score for p in pairs], dtype=float)
    a = np.array([p.acceptable for p in pairs], dtype=bool)
    r = exact_decimal(cost_ratio)
    idx = draw_indices(len(s), resamples, seed)
    fprs = np.empty(resamples)
    ffrs = np.empty(resamples)
    own: list[float] = []
    for b in range(resamples):
        rs, ra = s[idx[b]], a[idx[b]]
        sa, su = _split(rs, ra)
        if single_cutoff is None:
            fp, ff = 0, len(sa)
        else:
            fp = int((su >= single_cutoff).sum())
            ff = int((sa < single_cutoff).sum())
        fprs[b], ffrs[b] = _rate(fp, len(su)), _rate(ff, len(sa))
        cuts = np.unique(rs)
        cfp, cff = _counts(sa, su, cuts)
        i = _single_index(np.append(cfp, 0), np.append(cff, len(sa)), r)
        own.append(float(cuts[i]) if i < len(cuts) else math.inf)
    full = math.inf if single_cutoff is None else single_cutoff
    other = sum(1 for c in own if c != full) / resamples
    ordered = sorted(own)
    lo = ordered[math.floor(Fraction(25, 1000) * (resamples - 1))]
    hi = ordered[math.ceil(Fraction(975, 1000) * (resamples - 1))]
    return BootstrapResult(
        resamples,
        seed,
        tuple(float(x) for x in np.percentile(fprs, PERCENTILES)),
        tuple(float(x) for x in np.percentile(ffrs, PERCENTILES)),
        other,
        (None if math.isinf(lo) else lo, None if math.isinf(hi) else hi),
    )


def _outside(c: float | None, interval: tuple[float | None, float | None]) -> bool:
    key = math.inf if c is None else c
    lo = math.inf if interval[0] is None else interval[0]
    hi = math.inf if interval[1] is None else interval[1]
    return key < lo or key > hi


# --------------------------------------------------------------------------- repeats
def stability(pairs: Sequence[ScoredPair], cutoffs: Sequence[tuple[str, float | None]]) -> tuple[StabilityRow, ...]:
    """Per pair scored more than once: mean, min, max and the repeats passing each named cutoff.

    Rows are sorted by the distance of the mean to the nearest finite cutoff, then
    by (query_id, doc_id).
    """
    finite = [(name, c) for name, c in cutoffs if c is not None]
    rows = []
    for p in pairs:
        if len(p.repeats) < 2:
            continue
        values = np.asarray(p.repeats, dtype=float)
        passes = tuple((name, int((values >= c).sum())) for name, c in finite)
        dist = min((abs(p.score - c) for _, c in finite), default=math.inf)
        rows.append(
            StabilityRow(
                p.query_id, p.doc_id, p.score, float(values.min()), float(values.max()), len(values), passes, dist
            )
        )
    rows.sort(key=lambda x: (x.distance, x.query_id, x.doc_id))
    return tuple(rows)


# --------------------------------------------------------------------------- calibrate
def check_pairs(pairs: Sequence[ScoredPair]) -> None:
    """Refuse a scored pair whose score is not a finite number (it is an error pair)."""
    for p in pairs:
        if not isinstance(p.score, (int, float)) or isinstance(p.score, bool) or not math.isfinite(p.score):
            raise InputError(
                f"pair ({p.query_id}, {p.doc_id}) has score {p.score!r}; a score that is not a "
                "finite number is an error pair, not a scored pair"
            )


def _cut(d: date) -> datetime:
    return datetime.combine(d, time(0), tzinfo=UTC)


def aware(t: datetime) -> datetime:
    """A timestamp as an aware UTC one (warehouse timestamps are naive UTC)."""
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t


def calibrate(
    pairs: Sequence[ScoredPair],
    *,
    scorer: str,
    version: str,
    against: str = "human",
    errors: Sequence[ErrorPair] = (),
    costs: Costs | None = None,
    bootstrap_n: int | None = None,
    seed: int = 0,
    by_project: bool = False,
    traffic: Mapping[str, float] | None = None,
    holdout_after: date | None = None,
    near: int = 10,
) -> Calibration:
    """Choose the single cutoff and the band on the scored pairs, with the requested extras (8.2)."""
    costs = costs or Costs()
    if against not in AGAINST:
        raise UsageError(f"--against {against!r} is not known; use human or log")
    if bootstrap_n is not None and (isinstance(bootstrap_n, bool) or bootstrap_n < 1):
        raise UsageError(f"--bootstrap {bootstrap_n!r} is not a number of resamples; use a positive integer, e.g. 1000")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"--seed {seed!r} is not a seed; use an integer >= 0")
    check_pairs(pairs)
    chosen_on = list(pairs)
    holdout_pairs: list[ScoredPair] = []
    undated = 0
    if holdout_after is not None:
        cut = _cut(holdout_after)
        undated = sum(1 for p in pairs if p.labelled_at is None)
        chosen_on = [p for p in pairs if p.labelled_at is not None and aware(p.labelled_at) < cut]
        holdout_pairs = [p for p in pairs if p.labelled_at is not None and aware(p.labelled_at) >= cut]
        if not chosen_on:
            raise GoldensetError(
                f"nothing to calibrate: no scored pair labelled before {holdout_after.isoformat()}; "
                "choose a later --holdout-after"
            )
    if not chosen_on:
        raise GoldensetError("nothing to calibrate: no pair has a score; check error_pairs and the scorer")
    m = measure(chosen_on, costs)
    c_star = m.single.row.cutoff
    boot = bootstrap(chosen_on, c_star, costs.cost_ratio, bootstrap_n, seed) if bootstrap_n else None
    slices = summary = None
    warnings: list[str] = []
    if by_project:
        groups: dict[str, list[ScoredPair]] = {}
        for p in chosen_on:
            groups.setdefault(p.project, []).append(p)
        slices = {name: measure(groups[name], costs) for name in sorted(groups)}
        summary = _slice_summary(groups, c_star, traffic)
        if boot is not None:
            for name, sm in slices.items():
                own = sm.single.row.cutoff
                if _outside(own, boot.cutoff_interval):
                    lo, hi = boot.cutoff_interval
                    warnings.append(
                        f"slice {name!r}: its own single cutoff {own} lies outside the global "
                        f"cutoff's bootstrap interval [{lo}, {hi}]; give it its own policy or more labels"
                    )
    holdout = None
    if holdout_after is not None:
        hr = rates_at(holdout_pairs, c_star)
        holdout = Holdout(
            holdout_after,
            len(chosen_on),
            undated,
            len(holdout_pairs),
            sum(p.acceptable for p in holdout_pairs),
            sum(not p.acceptable for p in holdout_pairs),
            Single(hr, _cost(hr.false_passes, hr.false_fails, exact_decimal(costs.cost_ratio))),
            _band_on(holdout_pairs, m.band),
        )
    stab = None
    n_rep = max((len(p.repeats) for p in chosen_on), default=0)
    if n_rep > 1:
        named = [("single", c_star)]
        if m.band is not None:
            named += [("low", m.band.low), ("high", m.band.high)]
        rows = stability(chosen_on, named)
        unstable = [x for x in rows if x.unstable]
        stable = [x for x in rows if not x.unstable][:near]
        stab = tuple(sorted(unstable + stable, key=lambda x: (x.distance, x.query_id, x.doc_id)))
    return Calibration(
        scorer,
        version,
        against,
        costs,
        m,
        tuple(errors),
        boot,
        slices,
        summary,
        holdout,
        stab,
        max(n_rep, 1),
        tuple(warnings),
    )


def _slice_summary(
    groups: Mapping[str, Sequence[ScoredPair]], cutoff: float | None, traffic: Mapping[str, float] | None
) -> dict[str, Any]:
    at = {name: rates_at(groups[name], cutoff) for name in sorted(groups)}
    weights = {name: float(traffic.get(name, 0)) if traffic is not None else float(len(groups[name])) for name in at}
    total = sum(weights.values())

    def weighted(attr: str) -> float:
        if not total:
            return 0.0
        return sum(weights[n] * getattr(at[n], attr) for n in at) / total

    def macro(attr: str) -> float:
        return sum(getattr(r, attr) for r in at.values()) / len(at)

    return {
        "cutoff": cutoff,
        "weights": "traffic" if traffic is not None else "pairs",
        "macro": {"false_pass_rate": macro("false_pass_rate"), "false_fail_rate": macro("false_fail_rate")},
        "traffic_weighted": {
            "false_pass_rate": weighted("false_pass_rate"),
            "false_fail_rate": weighted("false_fail_rate"),
        },
        "by_slice": {
            n: {"false_pass_rate": r.false_pass_rate, "false_fail_rate": r.false_fail_rate} for n, r in at.items()
        },
    }
