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
- repeats: a pair scored N times is calibrated on the mean; per chosen cutoff
  (single, band low and high) the report counts how many repeats pass. A pair
  with 0 < passes < N at any of them is unstable and goes to review: it is never
  re-asked until it passes.
- outputs: `to_json` (the `--json` object; rates, shares and percentiles
  rounded to 4 decimals half away from zero, cutoffs and cost exact),
  `plot_rates` (PNG), `policy_manifest` / `write_policy` / `read_policy`, and
  `check_policy` (a stored policy re-measured on today's pairs; see PolicyCheck).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from goldenset.errors import GoldensetError, InputError, UsageError

PERCENTILES = (2.5, 25.0, 50.0, 75.0, 97.5)
AGAINST = ("human", "log")
NO_BAND_NEEDED = "no band needed"
NO_LOW = "no cutoff meets max-false-fail"
POLICY_VERSION = 1
_Q4 = Decimal("0.0001")


def round4(x: float) -> float:
    """Round to 4 decimals, half away from zero, on the decimal the float prints as."""
    return float(Decimal(repr(float(x))).quantize(_Q4, rounding=ROUND_HALF_UP))


def _r4(x: float | None) -> float | None:
    return None if x is None else round4(x)


def _dec(x: float) -> Fraction:
    # The value as the user typed it: 0.3 is 3/10, not the nearest binary double.
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
    def from_repeats(cls, query_id: str, doc_id: str, project: str, scores: Sequence[float], acceptable: bool,
                     labelled_at: datetime | None = None) -> ScoredPair:
        """A pair scored several times: calibrated on the mean, the scores kept for the stability report."""
        values = tuple(float(s) for s in scores)
        if not values:
            raise InputError(f"pair ({query_id}, {doc_id}) has no score; score it at least once")
        return cls(query_id, doc_id, project, float(np.mean(values)), acceptable, labelled_at, values)


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
        return (Fraction(self.false_passes, self.unacceptable) if self.unacceptable else Fraction(0),
                Fraction(self.false_fails, self.acceptable) if self.acceptable else Fraction(0))


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
    r = _dec(cost_ratio)
    i = _single_index(np.array([x.false_passes for x in rows]), np.array([x.false_fails for x in rows]), r)
    return Single(rows[i], _cost(rows[i].false_passes, rows[i].false_fails, r))


def choose_band(rows: Sequence[CutoffRow], scores: Sequence[float], max_false_pass: float, max_false_fail: float
                ) -> tuple[CutoffRow, CutoffRow | None, Band | None, str | None]:
    """(high row, low row or None, band or None, band_note) under 8.2's band rule.

    `rows` ascend with the None row last, as `cutoff_table` makes them.
    """
    a, b = _dec(max_false_pass), _dec(max_false_fail)
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


def bootstrap(pairs: Sequence[ScoredPair], single_cutoff: float | None, cost_ratio: float, resamples: int,
              seed: int) -> BootstrapResult:
    """N resamples with replacement: percentiles of both rates at `single_cutoff`, and how often the choice moves."""
    s = np.array([p.score for p in pairs], dtype=float)
    a = np.array([p.acceptable for p in pairs], dtype=bool)
    r = _dec(cost_ratio)
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
        resamples, seed,
        tuple(float(x) for x in np.percentile(fprs, PERCENTILES)),
        tuple(float(x) for x in np.percentile(ffrs, PERCENTILES)),
        other, (None if math.isinf(lo) else lo, None if math.isinf(hi) else hi),
    )


def _outside(c: float | None, interval: tuple[float | None, float | None]) -> bool:
    key = math.inf if c is None else c
    lo = math.inf if interval[0] is None else interval[0]
    hi = math.inf if interval[1] is None else interval[1]
    return key < lo or key > hi


# --------------------------------------------------------------------------- repeats
def stability(pairs: Sequence[ScoredPair], cutoffs: Sequence[tuple[str, float | None]]
              ) -> tuple[StabilityRow, ...]:
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
        rows.append(StabilityRow(p.query_id, p.doc_id, p.score, float(values.min()), float(values.max()),
                                 len(values), passes, dist))
    rows.sort(key=lambda x: (x.distance, x.query_id, x.doc_id))
    return tuple(rows)


# --------------------------------------------------------------------------- calibrate
def _check_pairs(pairs: Sequence[ScoredPair]) -> None:
    for p in pairs:
        if not isinstance(p.score, (int, float)) or isinstance(p.score, bool) or not math.isfinite(p.score):
            raise InputError(f"pair ({p.query_id}, {p.doc_id}) has score {p.score!r}; a score that is not a "
                             "finite number is an error pair, not a scored pair")


def _cut(d: date) -> datetime:
    return datetime.combine(d, time(0), tzinfo=UTC)


def _aware(t: datetime) -> datetime:
    # Warehouse timestamps are naive UTC.
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t


def calibrate(pairs: Sequence[ScoredPair], *, scorer: str, version: str, against: str = "human",
              errors: Sequence[ErrorPair] = (), costs: Costs | None = None, bootstrap_n: int | None = None,
              seed: int = 0, by_project: bool = False, traffic: Mapping[str, float] | None = None,
              holdout_after: date | None = None, near: int = 10) -> Calibration:
    """Choose the single cutoff and the band on the scored pairs, with the requested extras (8.2)."""
    costs = costs or Costs()
    if against not in AGAINST:
        raise UsageError(f"--against {against!r} is not known; use human or log")
    if bootstrap_n is not None and (isinstance(bootstrap_n, bool) or bootstrap_n < 1):
        raise UsageError(f"--bootstrap {bootstrap_n!r} is not a number of resamples; use a positive integer, e.g. 1000")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"--seed {seed!r} is not a seed; use an integer >= 0")
    _check_pairs(pairs)
    chosen_on = list(pairs)
    holdout_pairs: list[ScoredPair] = []
    undated = 0
    if holdout_after is not None:
        cut = _cut(holdout_after)
        undated = sum(1 for p in pairs if p.labelled_at is None)
        chosen_on = [p for p in pairs if p.labelled_at is not None and _aware(p.labelled_at) < cut]
        holdout_pairs = [p for p in pairs if p.labelled_at is not None and _aware(p.labelled_at) >= cut]
        if not chosen_on:
            raise GoldensetError(f"nothing to calibrate: no scored pair labelled before {holdout_after.isoformat()}; "
                                 "choose a later --holdout-after")
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
                    warnings.append(f"slice {name!r}: its own single cutoff {own} lies outside the global "
                                    f"cutoff's bootstrap interval [{lo}, {hi}]; give it its own policy or more labels")
    holdout = None
    if holdout_after is not None:
        hr = rates_at(holdout_pairs, c_star)
        holdout = Holdout(holdout_after, len(chosen_on), undated, len(holdout_pairs), sum(
            p.acceptable for p in holdout_pairs), sum(not p.acceptable for p in holdout_pairs),
            Single(hr, _cost(hr.false_passes, hr.false_fails, _dec(costs.cost_ratio))),
            _band_on(holdout_pairs, m.band))
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
    return Calibration(scorer, version, against, costs, m, tuple(errors), boot, slices, summary, holdout, stab,
                       max(n_rep, 1), tuple(warnings))


def _slice_summary(groups: Mapping[str, Sequence[ScoredPair]], cutoff: float | None,
                   traffic: Mapping[str, float] | None) -> dict[str, Any]:
    at = {name: rates_at(groups[name], cutoff) for name in sorted(groups)}
    weights = {name: float(traffic.get(name, 0)) if traffic is not None else float(len(groups[name]))
               for name in at}
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
        "traffic_weighted": {"false_pass_rate": weighted("false_pass_rate"),
                             "false_fail_rate": weighted("false_fail_rate")},
        "by_slice": {n: {"false_pass_rate": r.false_pass_rate, "false_fail_rate": r.false_fail_rate}
                     for n, r in at.items()},
    }


# --------------------------------------------------------------------------- JSON
def _row_json(r: CutoffRow) -> dict[str, Any]:
    return {"cutoff": r.cutoff, "false_passes": r.false_passes, "false_fails": r.false_fails,
            "false_pass_rate": round4(r.false_pass_rate), "false_fail_rate": round4(r.false_fail_rate)}


def _single_json(s: Single) -> dict[str, Any]:
    return {**_row_json(s.row), "cost": s.cost}


def _band_json(b: Band | None) -> dict[str, Any] | None:
    return None if b is None else {"low": b.low, "high": b.high, "review_share": round4(b.review_share)}


def _rates_json(d: Mapping[str, float]) -> dict[str, float]:
    return {k: round4(v) for k, v in d.items()}


def to_json(cal: Calibration) -> dict[str, Any]:
    """The `--json` object of 8.2, keys in the contract's order; extras (holdout, ...) after them."""
    m = cal.measurement
    out: dict[str, Any] = {
        "scorer": cal.scorer, "version": cal.version, "against": cal.against, "pairs": m.pairs,
        "acceptable": m.acceptable, "unacceptable": m.unacceptable, "errors": len(cal.errors),
        "error_pairs": [{"query_id": e.query_id, "doc_id": e.doc_id, "reason": e.reason} for e in cal.errors],
        "cutoffs": [_row_json(r) for r in m.cutoffs],
        "single": _single_json(m.single),
        "band": _band_json(m.band), "band_note": m.band_note,
    }
    if cal.bootstrap is not None:
        b = cal.bootstrap
        out["bootstrap"] = {"n": b.n, "seed": b.seed, "single": {
            "false_pass_rate": [round4(x) for x in b.false_pass_rate],
            "false_fail_rate": [round4(x) for x in b.false_fail_rate],
            "other_cutoff_share": round4(b.other_cutoff_share),
            "cutoff_interval": list(b.cutoff_interval)}}
    if cal.slices is not None:
        out["slices"] = {name: {"pairs": s.pairs, "acceptable": s.acceptable, "unacceptable": s.unacceptable,
                                "single": _single_json(s.single), "band": _band_json(s.band),
                                "band_note": s.band_note} for name, s in cal.slices.items()}
        ss = cal.slice_summary or {}
        out["slice_summary"] = {"cutoff": ss["cutoff"], "weights": ss["weights"],
                                "macro": _rates_json(ss["macro"]),
                                "traffic_weighted": _rates_json(ss["traffic_weighted"]),
                                "by_slice": {n: _rates_json(v) for n, v in ss["by_slice"].items()}}
    if cal.holdout is not None:
        h = cal.holdout
        out["holdout"] = {"after": h.after.isoformat(), "chosen_on": h.chosen_on, "undated": h.undated,
                          "pairs": h.pairs, "acceptable": h.acceptable, "unacceptable": h.unacceptable,
                          "single": _single_json(h.single), "band": _band_json(h.band)}
    if cal.stability is not None:
        out["repeats"] = {"n": cal.repeats, "unstable": sum(1 for x in cal.stability if x.unstable), "pairs": [
            {"query_id": x.query_id, "doc_id": x.doc_id, "mean": x.mean, "min": x.min, "max": x.max,
             "passes": dict(x.passes), "of": x.n, "unstable": x.unstable} for x in cal.stability]}
    if cal.slices is not None or cal.warnings:
        out["warnings"] = list(cal.warnings)
    return out


# --------------------------------------------------------------------------- plot
def rates_figure(cal: Calibration):
    """Both rates against the cutoff, the single cutoff and the band marked (a matplotlib Figure, Agg)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    m = cal.measurement
    finite = [r for r in m.cutoffs if r.cutoff is not None]
    xs = [float(r.cutoff) for r in finite if r.cutoff is not None]
    top = max(xs)
    fig = Figure(figsize=(8, 5), dpi=100)
    FigureCanvasAgg(fig)  # no pyplot: nothing global, safe in a server or a test run
    ax = fig.add_subplot(1, 1, 1)
    # A cutoff between two distinct scores passes what the upper one passes: steps "pre".
    ax.step(xs, [r.false_pass_rate for r in finite], where="pre", marker="o", markersize=3,
            label="false-pass rate (unacceptable pairs passing)")
    ax.step(xs, [r.false_fail_rate for r in finite], where="pre", marker="s", markersize=3,
            label="false-fail rate (acceptable pairs failing)")
    single = m.single.row.cutoff
    if single is not None:
        ax.axvline(single, color="black", linestyle="--", label=f"single cutoff {single:.4g} (cost {m.single.cost})")
    else:
        ax.axvline(top, color="black", linestyle="--", label="single cutoff: none passes")
    if m.band is not None:
        right = m.band.high if m.band.high is not None else top
        high = f"{m.band.high:.4g}" if m.band.high is not None else "none"
        ax.axvspan(m.band.low, right, color="orange", alpha=0.2,
                   label=f"review band [{m.band.low:.4g}, {high}): {m.band.review_share:.1%} of pairs")
    ax.set_xlabel("cutoff (a pair passes when its score >= cutoff)")
    ax.set_ylabel("rate")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{cal.scorer} {cal.version} against {cal.against} labels: {m.pairs} pairs "
                 f"({m.acceptable} acceptable, {m.unacceptable} unacceptable)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    return fig


def plot_rates(cal: Calibration, path: str | Path) -> Path:
    """Write `rates_figure` as a PNG; the folder is created when missing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rates_figure(cal).savefig(path, format="png")
    return path


# --------------------------------------------------------------------------- policy
@dataclass(frozen=True)
class PolicyCheckItem:
    """One test a stored policy must still pass: the measured value, its limit, whether it holds."""

    name: str
    measured: float | str | None
    limit: float | str | None
    holds: bool


@dataclass(frozen=True)
class PolicyCheck:
    """A stored policy re-measured on today's pairs.

    It *holds* when every item holds: the false-pass rate at high <= A, the
    false-fail rate at low <= B, and, when the policy stored a bootstrap, both
    rates at the single cutoff no higher than the stored 97.5th percentile
    (rounded to 4 decimals, as stored). Rates that got better never fail it. A
    scorer version other than the policy's fails it too: the cutoffs belong to
    the version they were chosen on.
    """

    holds: bool
    pairs: int
    acceptable: int
    unacceptable: int
    single: CutoffRow
    high: CutoffRow
    low: CutoffRow | None
    checks: tuple[PolicyCheckItem, ...]


def policy_manifest(cal: Calibration, *, config: Mapping[str, Any], build_id: int | None,
                    created_at: datetime | None = None) -> dict[str, Any]:
    """The versioned policy (JSON object) of a calibration: what was chosen, on what, at what cost."""
    m = cal.measurement
    created = _aware(created_at) if created_at is not None else datetime.now(UTC)
    boot = None
    if cal.bootstrap is not None:
        b = cal.bootstrap
        boot = {"n": b.n, "seed": b.seed, "false_pass_rate": [round4(x) for x in b.false_pass_rate],
                "false_fail_rate": [round4(x) for x in b.false_fail_rate],
                "cutoff_interval": list(b.cutoff_interval)}
    return {
        "policy_version": POLICY_VERSION,
        "scorer": cal.scorer, "version": cal.version, "config": dict(config), "against": cal.against,
        "cutoffs": {"single": m.single.row.cutoff,
                    "band": None if m.band is None else {"low": m.band.low, "high": m.band.high},
                    "high": m.high.cutoff, "low": None if m.low is None else m.low.cutoff},
        "costs": {"cost_ratio": cal.costs.cost_ratio, "max_false_pass": cal.costs.max_false_pass,
                  "max_false_fail": cal.costs.max_false_fail},
        "chosen_on": {"build_id": build_id, "pairs": m.pairs, "acceptable": m.acceptable,
                      "unacceptable": m.unacceptable, "errors": len(cal.errors),
                      "holdout_after": None if cal.holdout is None else cal.holdout.after.isoformat()},
        "rates": {"single": {"false_pass_rate": round4(m.single.row.false_pass_rate),
                             "false_fail_rate": round4(m.single.row.false_fail_rate)},
                  "high": {"false_pass_rate": round4(m.high.false_pass_rate)},
                  "low": None if m.low is None else {"false_fail_rate": round4(m.low.false_fail_rate)}},
        "bootstrap": boot,
        "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def write_policy(manifest: Mapping[str, Any], path: str | Path) -> Path:
    """Write a policy manifest as indented JSON (one file per policy; a new choice is a new file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return path


def _cutoff_value(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))


def validate_policy(policy: Any, where: str = "policy") -> dict[str, Any]:
    """Check a manifest's shape; InputError naming the first problem."""
    def bad(problem: str) -> InputError:
        return InputError(f"{where}: {problem}; write the policy again with `goldenset calibrate`")

    if not isinstance(policy, dict):
        raise bad(f"expected a JSON object, got {type(policy).__name__}")
    if policy.get("policy_version") != POLICY_VERSION:
        raise bad(f"policy_version is {policy.get('policy_version')!r}, this goldenset reads {POLICY_VERSION}")
    for key in ("scorer", "version", "config", "cutoffs", "costs", "created_at"):
        if key not in policy:
            raise bad(f"missing key {key!r}")
    cut, costs = policy["cutoffs"], policy["costs"]
    if not isinstance(cut, dict) or not all(k in cut and _cutoff_value(cut[k]) for k in ("single", "high", "low")):
        raise bad(f"cutoffs {cut!r} must hold single, high and low (numbers or null)")
    if not isinstance(costs, dict):
        raise bad(f"costs {costs!r} must be an object")
    for k in ("max_false_pass", "max_false_fail"):
        v = costs.get(k)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 1:
            raise bad(f"costs.{k} is {v!r}, not a rate from 0 to 1")
    boot = policy.get("bootstrap")
    if boot is not None:
        for k in ("false_pass_rate", "false_fail_rate"):
            v = boot.get(k) if isinstance(boot, dict) else None
            if not (isinstance(v, list) and len(v) == len(PERCENTILES)):
                raise bad(f"bootstrap.{k} must list {len(PERCENTILES)} percentiles, got {v!r}")
    return policy


def read_policy(path: str | Path) -> dict[str, Any]:
    """Read and validate a policy manifest file."""
    path = Path(path)
    try:
        policy = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"policy {path} does not exist; pass the file `calibrate --policy` wrote") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"policy {path} is unreadable: {exc}; write it again with `goldenset calibrate`") from exc
    return validate_policy(policy, f"policy {path}")


def check_policy(policy: Mapping[str, Any], pairs: Sequence[ScoredPair], *,
                 scorer_version: str | None = None) -> PolicyCheck:
    """Re-measure a stored policy's cutoffs on today's pairs and say whether its rates still hold."""
    policy = validate_policy(dict(policy))
    _check_pairs(pairs)
    cut, costs = policy["cutoffs"], policy["costs"]
    single, high = rates_at(pairs, cut["single"]), rates_at(pairs, cut["high"])
    low = None if cut["low"] is None else rates_at(pairs, cut["low"])
    a, b = _dec(costs["max_false_pass"]), _dec(costs["max_false_fail"])
    items = [PolicyCheckItem("false_pass_rate_at_high", round4(high.false_pass_rate), costs["max_false_pass"],
                             high.exact_rates()[0] <= a)]
    if low is not None:
        items.append(PolicyCheckItem("false_fail_rate_at_low", round4(low.false_fail_rate),
                                     costs["max_false_fail"], low.exact_rates()[1] <= b))
    boot = policy.get("bootstrap")
    if boot is not None:
        for name, measured, stored in (
            ("false_pass_rate_at_single", single.false_pass_rate, boot["false_pass_rate"]),
            ("false_fail_rate_at_single", single.false_fail_rate, boot["false_fail_rate"]),
        ):
            top = stored[-1]
            items.append(PolicyCheckItem(name, round4(measured), top, round4(measured) <= top))
    if scorer_version is not None:
        items.append(PolicyCheckItem("scorer_version", scorer_version, policy["version"],
                                     scorer_version == policy["version"]))
    n_acc = sum(p.acceptable for p in pairs)
    return PolicyCheck(all(i.holds for i in items), len(pairs), n_acc, len(pairs) - n_acc, single, high, low,
                       tuple(items))


def check_to_json(check: PolicyCheck) -> dict[str, Any]:
    """`calibrate --check POLICY --json`: whether it holds, each test, today's rates at the stored cutoffs."""
    return {
        "holds": check.holds, "pairs": check.pairs, "acceptable": check.acceptable,
        "unacceptable": check.unacceptable,
        "checks": [{"name": i.name, "measured": i.measured, "limit": i.limit, "holds": i.holds} for i in check.checks],
        "single": _row_json(check.single), "high": _row_json(check.high),
        "low": None if check.low is None else _row_json(check.low),
    }
