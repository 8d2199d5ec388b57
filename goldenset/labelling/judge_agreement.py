"""A judge against the human label (contract 13.2): kappa with its bootstrap interval over queries, and more.

The judge's gate reports, over its sample of pairs, Cohen's kappa (po, pe: 7.5's formula), a
95% interval for it, the prevalence of relevant pairs (the share whose human label has grade
>= 1) and Gwet's AC1, so that "kappa 0 at 81% agreement" explains itself: when nearly every
pair is irrelevant, chance agreement nears the observed one and kappa nears 0 however well the
judge agrees. The figures are `weighted_figures`, the weighted form of 7.5's kappa and of
Gwet's AC1 (goldenset.labelling.agreement's cohen_kappa and gwet_ac1, which equal it when
every weight is 1: a test holds them to each other).

Decisions
---------
- **The bootstrap** resamples queries, not pairs (a query's pairs are labelled together, by
  the same people, and are not independent): the m queries are sorted in code-point order;
  resample r (r = 1 .. B) is the next call `rng.integers(0, m, size=m)` of
  `rng = numpy.random.default_rng(seed)`, indices into that order, and takes every pair of
  each drawn query (a query drawn twice counts twice). Its kappa is computed exactly (two
  integers divided once, so correctly rounded). A resample on which both raters used one and
  the same label has no kappa (pe = 1) and is left out; the interval is numpy's linear
  percentiles 2.5 and 97.5 of the others. No interval (None) with fewer than 2 queries (every
  resample would be the sample itself), when the sample's own kappa is undefined, or when no
  resample has one.
- **Weights** (contract 13.2, an active audit): every pair of query q counts with q's weight
  w(q), a positive rational, in every figure: the confusion table is a table of summed
  weights instead of counts, and po, the label shares (so pe), kappa, AC1 and the prevalence
  are ratios of weighted sums (ratio estimators: the scale of the weights cancels, so equal
  weights give the unweighted figures exactly). `n` and `queries` stay counts. A resample
  carries each drawn query's weight (a query drawn twice counts twice), and its kappa is still
  computed exactly: the weights are put over a common denominator (integers a(q)), each a(q)
  is split into base-2**20 digits so the summed tables stay exact in int64, and the digits'
  sums are recombined as Python integers before the one division. With equal weights the
  integer path of the unweighted bootstrap runs unchanged.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

Unit = Sequence[tuple[Hashable, Hashable]]


def bootstrap_kappa(
    units: Sequence[Unit],
    resamples: int,
    seed: int,
    confidence: float = 0.95,
    weights: Sequence[Fraction] | None = None,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Cohen's kappa, resampling whole units (queries) with replacement.

    `units[u]` holds the (a, b) label pairs of unit u, units in the order the caller fixed
    (the gate: query_id in code-point order); `weights[u]` is unit u's weight (None: every
    unit weighs 1). Resample r is the r-th call `rng.integers(0, m, size=m)` of
    `rng = numpy.random.default_rng(seed)`; its kappa is computed exactly from the summed
    (weighted) tables of the units it drew and turned into the nearest double; resamples whose
    kappa is undefined (pe = 1) are left out; the bounds are numpy's linear percentiles
    100 x (1 - confidence) / 2 and 100 x (1 + confidence) / 2 of the others. None with fewer
    than 2 units, or when no resample has a kappa.
    """
    m = len(units)
    if m < 2:
        return None
    labels = sorted({x for unit in units for pair in unit for x in pair}, key=repr)
    index = {label: i for i, label in enumerate(labels)}
    size = len(labels)
    # Each unit's confusion counts, flattened: a resample's table is the sum of its units' tables.
    tables = np.zeros((m, size * size), dtype=np.int64)
    for u, unit in enumerate(units):
        for x, y in unit:
            tables[u, index[x] * size + index[y]] += 1
    digits = _weight_digits(weights, m)
    rng = np.random.default_rng(seed)
    kappas = []
    chunk = 256  # resamples summed at once: bounded memory (chunk x m counts) whatever m is
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        draws = np.stack([rng.integers(0, m, size=m) for _ in range(rows)])
        # How often each resample drew each unit.
        counts = np.bincount((np.arange(rows)[:, None] * m + draws).ravel(), minlength=rows * m).reshape(rows, m)
        if digits is None:
            summed = (counts @ tables).reshape(rows, size, size)
        else:
            summed = _weighted_tables(counts, tables, digits).reshape(rows, size, size)
        n = summed.sum(axis=(1, 2))
        agree = np.trace(summed, axis1=1, axis2=2)
        chance = (summed.sum(axis=2) * summed.sum(axis=1)).sum(axis=1)  # sum over labels of row x column totals
        numerator, denominator = n * agree - chance, n * n - chance
        defined = denominator != 0
        if digits is None:
            # Two integers below 2**53 divided once: the float nearest the exact kappa.
            kappas.append(numerator[defined].astype(np.float64) / denominator[defined].astype(np.float64))
        else:
            # Python integers of any size: int / int is the float nearest the exact quotient.
            kappas.append(np.array([a / b for a, b in zip(numerator[defined], denominator[defined], strict=True)]))
    values = np.concatenate(kappas)
    if values.size == 0:
        return None
    # In decimal arithmetic: 100 x (1 - 0.95) / 2 in floats is 2.5000000000000004, not the 2.5 documented.
    tail = float((1 - Fraction(str(confidence))) * 50)
    lo, hi = np.percentile(values, [tail, 100 - tail], method="linear")
    return float(lo), float(hi)


_DIGIT_BITS = 20  # a digit times a summed count stays below 2**63 for resamples of up to 2**43 pairs


def _weight_digits(weights: Sequence[Fraction] | None, m: int) -> list[np.ndarray] | None:
    """The units' weights over a common denominator, as base-2**20 digits (least significant first);
    None when every weight is the same (kappa does not change when every weight is scaled alike)."""
    if weights is None:
        return None
    if len(weights) != m:
        raise ValueError(f"bootstrap_kappa needs one weight per unit, got {len(weights)} for {m} units")
    if any(w <= 0 for w in weights):
        raise ValueError(f"bootstrap_kappa needs positive weights, got {min(weights)}")
    if len(set(weights)) == 1:
        return None
    common = math.lcm(*(Fraction(w).denominator for w in weights))
    scaled = [int(Fraction(w) * common) for w in weights]
    divisor = math.gcd(*scaled)
    scaled = [a // divisor for a in scaled]
    mask = (1 << _DIGIT_BITS) - 1
    places = max(1, -(-max(scaled).bit_length() // _DIGIT_BITS))
    return [np.array([(a >> (_DIGIT_BITS * j)) & mask for a in scaled], dtype=np.int64) for j in range(places)]


def _weighted_tables(counts: np.ndarray, tables: np.ndarray, digits: list[np.ndarray]) -> np.ndarray:
    """Each resample's table of summed weights (over the common denominator), exact, as Python integers."""
    out = np.zeros((counts.shape[0], tables.shape[1]), dtype=object)
    for j, digit in enumerate(digits):
        out = out + (counts @ (digit[:, None] * tables)).astype(object) * (1 << (_DIGIT_BITS * j))
    return out


@dataclass(frozen=True)
class JudgeAgreement:
    """A judge against the human label on a sample of pairs (contract 13.2): every figure the gate reports.

    `kappa_lo`/`kappa_hi`: the bootstrap interval over queries (None: see `bootstrap_kappa`).
    Every figure is None when n = 0.
    """

    n: int
    queries: int
    po: Fraction | None
    pe: Fraction | None
    kappa: Fraction | None
    kappa_lo: float | None
    kappa_hi: float | None
    prevalence: Fraction | None
    ac1: Fraction | None


def judge_agreement(
    pairs: Iterable[tuple[str, Hashable, Hashable, bool]],
    resamples: int,
    seed: int,
    confidence: float = 0.95,
    weights: Mapping[str, Fraction] | None = None,
) -> JudgeAgreement:
    """Kappa with its bootstrap interval over queries, prevalence and AC1 of a judge against the human label.

    `pairs`: (query_id, judge's label, human label, human label's grade >= 1) per pair.
    `weights`: each query's weight (contract 13.2: an active audit's), None for every query 1;
    every figure is then the ratio of weighted sums of the module's decisions.
    """
    by_query: dict[str, list[tuple[Hashable, Hashable, bool]]] = defaultdict(list)
    for query_id, judge, human, is_relevant in pairs:
        by_query[query_id].append((judge, human, bool(is_relevant)))
    order = sorted(by_query)
    if not order:
        return JudgeAgreement(0, 0, None, None, None, None, None, None, None)
    weight = {q: Fraction(1) if weights is None else Fraction(weights[q]) for q in order}
    if any(w <= 0 for w in weight.values()):
        raise ValueError(f"judge_agreement needs positive weights, got {min(weight.values())}")
    cells: dict[tuple[Hashable, Hashable], Fraction] = defaultdict(Fraction)
    relevant = Fraction(0)
    for q in order:
        # A query's counts first, then its weight once per cell: few Fraction operations however many pairs.
        for cell, count in Counter((j, h) for j, h, _ in by_query[q]).items():
            cells[cell] += weight[q] * count
        relevant += weight[q] * sum(1 for *_, is_relevant in by_query[q] if is_relevant)
    po, pe, kappa, ac1 = weighted_figures(cells)
    interval = None
    if kappa is not None:
        units = [[(j, h) for j, h, _ in by_query[q]] for q in order]
        interval = bootstrap_kappa(
            units, resamples, seed, confidence, None if weights is None else [weight[q] for q in order]
        )
    return JudgeAgreement(
        n=sum(len(by_query[q]) for q in order),
        queries=len(order),
        po=po,
        pe=pe,
        kappa=kappa,
        kappa_lo=None if interval is None else interval[0],
        kappa_hi=None if interval is None else interval[1],
        prevalence=relevant / sum(cells.values()),
        ac1=ac1,
    )


def weighted_figures(
    cells: Mapping[tuple[Hashable, Hashable], Fraction],
) -> tuple[Fraction, Fraction, Fraction | None, Fraction]:
    """po, pe, kappa (None when pe = 1) and Gwet's AC1 of a table of summed weights, exact (contract 13.2).

    `cells[(a, b)]`: the total weight of the items rater a labels `a` and rater b labels `b`
    (with every weight 1, the counts: then these are cohen_kappa's and gwet_ac1's figures).
    With W the total: po = sum over L of cells[(L, L)] / W; p_a(L), p_b(L) the rows' and the
    columns' totals over W; pe = sum over L of p_a(L) p_b(L); kappa = (po - pe) / (1 - pe);
    AC1's pi(L) = (p_a(L) + p_b(L)) / 2, Q = the labels either rater used (at least 2),
    pe1 = sum over L of pi(L) (1 - pi(L)) / (Q - 1), AC1 = (po - pe1) / (1 - pe1).
    """
    total = sum(cells.values(), Fraction(0))
    if total <= 0:
        raise ValueError("weighted_figures needs a table with a positive total weight")
    rows: dict[Hashable, Fraction] = defaultdict(Fraction)
    columns: dict[Hashable, Fraction] = defaultdict(Fraction)
    agree = Fraction(0)
    for (a, b), w in cells.items():
        rows[a] += w
        columns[b] += w
        if a == b:
            agree += w
    po = agree / total
    pe = sum((rows[x] * columns[x] for x in rows if x in columns), Fraction(0)) / (total * total)
    kappa = None if pe == 1 else (po - pe) / (1 - pe)
    used = set(rows) | set(columns)
    shares = [(rows.get(x, Fraction(0)) + columns.get(x, Fraction(0))) / (2 * total) for x in used]
    pe1 = sum((p * (1 - p) for p in shares), Fraction(0)) / (max(2, len(used)) - 1)
    return po, pe, kappa, (po - pe1) / (1 - pe1)
