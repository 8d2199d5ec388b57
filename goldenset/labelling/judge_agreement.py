"""A judge against the human label (contract 13.2): kappa with its bootstrap interval over queries, and more.

The judge's gate reports, over its sample of pairs, Cohen's kappa (po, pe: 7.5's formula, in
goldenset.labelling.agreement), a 95% interval for it, the prevalence of relevant pairs (the
share whose human label has grade >= 1) and Gwet's AC1 (agreement.gwet_ac1), so that "kappa 0
at 81% agreement" explains itself: when nearly every pair is irrelevant, chance agreement
nears the observed one and kappa nears 0 however well the judge agrees.

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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from goldenset.labelling.agreement import cohen_kappa, gwet_ac1

Unit = Sequence[tuple[Hashable, Hashable]]


def bootstrap_kappa(
    units: Sequence[Unit], resamples: int, seed: int, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Cohen's kappa, resampling whole units (queries) with replacement.

    `units[u]` holds the (a, b) label pairs of unit u, units in the order the caller fixed
    (the gate: query_id in code-point order). Resample r is the r-th call
    `rng.integers(0, m, size=m)` of `rng = numpy.random.default_rng(seed)`; resamples whose
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
    rng = np.random.default_rng(seed)
    kappas = []
    chunk = 256  # resamples summed at once: bounded memory (chunk x m counts) whatever m is
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        draws = np.stack([rng.integers(0, m, size=m) for _ in range(rows)])
        # How often each resample drew each unit.
        weights = np.bincount((np.arange(rows)[:, None] * m + draws).ravel(), minlength=rows * m).reshape(rows, m)
        summed = (weights @ tables).reshape(rows, size, size)
        n = summed.sum(axis=(1, 2))
        agree = np.trace(summed, axis1=1, axis2=2)
        chance = (summed.sum(axis=2) * summed.sum(axis=1)).sum(axis=1)  # sum over labels of row x column totals
        numerator, denominator = n * agree - chance, n * n - chance
        defined = denominator != 0
        # Two integers below 2**53 divided once: the float nearest the exact kappa.
        kappas.append(numerator[defined].astype(np.float64) / denominator[defined].astype(np.float64))
    values = np.concatenate(kappas)
    if values.size == 0:
        return None
    # In decimal arithmetic: 100 x (1 - 0.95) / 2 in floats is 2.5000000000000004, not the 2.5 documented.
    tail = float((1 - Fraction(str(confidence))) * 50)
    lo, hi = np.percentile(values, [tail, 100 - tail], method="linear")
    return float(lo), float(hi)


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
    pairs: Iterable[tuple[str, Hashable, Hashable, bool]], resamples: int, seed: int, confidence: float = 0.95
) -> JudgeAgreement:
    """Kappa with its bootstrap interval over queries, prevalence and AC1 of a judge against the human label.

    `pairs`: (query_id, judge's label, human label, human label's grade >= 1) per pair.
    """
    by_query: dict[str, list[tuple[Hashable, Hashable]]] = defaultdict(list)
    relevant = 0
    for query_id, judge, human, is_relevant in pairs:
        by_query[query_id].append((judge, human))
        relevant += bool(is_relevant)
    flat = [pair for q in sorted(by_query) for pair in by_query[q]]
    if not flat:
        return JudgeAgreement(0, 0, None, None, None, None, None, None, None)
    agreement = cohen_kappa([j for j, _ in flat], [h for _, h in flat])
    interval = None
    if agreement.kappa is not None:
        interval = bootstrap_kappa([by_query[q] for q in sorted(by_query)], resamples, seed, confidence)
    return JudgeAgreement(
        n=len(flat),
        queries=len(by_query),
        po=agreement.po,
        pe=agreement.pe,
        kappa=agreement.kappa,
        kappa_lo=None if interval is None else interval[0],
        kappa_hi=None if interval is None else interval[1],
        prevalence=Fraction(relevant, len(flat)),
        ac1=gwet_ac1([j for j, _ in flat], [h for _, h in flat]),
    )
