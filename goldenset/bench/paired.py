"""Paired statistics: is B different from A on the queries both saw, and how sure are we.

The difference is always B - A per query (A the baseline, B the candidate). The
95% interval is Student's t on the per-query differences (`method="t"`), or a
paired percentile bootstrap with an explicit seed (`method="bootstrap"`). The
verdict reads only the interval: `better` or `worse` when it excludes zero
(direction taken from the metric), `indistinguishable` when it contains zero,
whatever the means say. For a metric with no better direction (hole@k) the
verdict is `higher` or `lower`.

Decided edge cases:
- no common query: UsageError (nothing to compare).
- one common query: no spread to estimate, interval (-inf, inf), indistinguishable.
- all differences equal (sd 0, identical runs included): the interval is that one
  value, [0, 0] for identical runs, so identical runs are indistinguishable; the
  minimum detectable effect is not defined (None, printed "n/a").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from goldenset.errors import UsageError

CONFIDENCE = 0.95
POWER = 0.80


@dataclass(frozen=True)
class Paired:
    """One metric compared on paired queries."""

    metric: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    lo: float
    hi: float
    method: str
    mde: float | None
    verdict: str


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile from scipy, imported here on first use: importing scipy.stats takes
    most of a second, and every build imports this module (the pool asset reads stored runs)."""
    from scipy import stats

    return float(stats.t.ppf(p, df))


def normal_quantile(p: float) -> float:
    """The standard normal quantile from scipy, imported on first use as t_quantile says."""
    from scipy import stats

    return float(stats.norm.ppf(p))


def t_interval(diffs: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Student's t interval of the mean difference; (-inf, inf) below two pairs."""
    n = len(diffs)
    if n < 2:
        return -math.inf, math.inf
    mean = float(np.mean(diffs))
    sd = float(np.std(diffs, ddof=1))
    if sd == 0.0:
        return mean, mean
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def bootstrap_interval(
    diffs: np.ndarray, resamples: int, seed: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Paired percentile bootstrap of the mean difference, resampling queries with replacement."""
    n = len(diffs)
    if n < 2:
        return -math.inf, math.inf
    if resamples < 1:
        raise UsageError(f"--bootstrap must be at least 1 resample, got {resamples}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    means = diffs[idx].mean(axis=1)
    alpha = 1 - confidence
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def min_detectable_effect(diffs: np.ndarray, confidence: float = CONFIDENCE, power: float = POWER) -> float | None:
    """Smallest true mean difference a paired t test on these n queries detects with 80% power.

    (t_{1-alpha/2, n-1} + t_{power, n-1}) * sd / sqrt(n), with sd the standard
    deviation of the observed differences. None below two pairs or when sd is 0.
    """
    n = len(diffs)
    if n < 2:
        return None
    sd = float(np.std(diffs, ddof=1))
    if sd == 0.0:
        return None
    t_a = t_quantile(0.5 + confidence / 2, n - 1)
    t_b = t_quantile(power, n - 1)
    return (t_a + t_b) * sd / math.sqrt(n)


def verdict(lo: float, hi: float, direction: int) -> str:
    """better / worse / indistinguishable from the interval and the metric's direction."""
    if lo <= 0.0 <= hi or math.isnan(lo) or math.isnan(hi):
        return "indistinguishable"
    up = lo > 0.0
    if direction == 0:
        return "higher" if up else "lower"
    return "better" if up == (direction > 0) else "worse"


def compare_paired(
    metric: str,
    a: Mapping[str, float],
    b: Mapping[str, float],
    direction: int,
    *,
    bootstrap: int | None = None,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Paired:
    """Compare B against A on the queries present in both (B - A per query)."""
    common = sorted(set(a) & set(b))
    if not common:
        raise UsageError(f"{metric}: the two runs have no query in common; nothing to compare")
    va = np.array([a[q] for q in common], dtype=float)
    vb = np.array([b[q] for q in common], dtype=float)
    diffs = vb - va
    if bootstrap:
        lo, hi = bootstrap_interval(diffs, bootstrap, seed, confidence)
        method = f"paired bootstrap ({bootstrap} resamples, seed {seed})"
    else:
        lo, hi = t_interval(diffs, confidence)
        method = "paired t"
    return Paired(
        metric=metric,
        n=len(common),
        mean_a=float(va.mean()),
        mean_b=float(vb.mean()),
        diff=float(diffs.mean()),
        lo=lo,
        hi=hi,
        method=method,
        mde=min_detectable_effect(diffs, confidence),
        verdict=verdict(lo, hi, direction),
    )
