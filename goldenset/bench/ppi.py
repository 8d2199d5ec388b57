"""Prediction-powered estimates of a mean: many judge-made values corrected by a random human sample.

Angelopoulos, Bates, Fannjiang, Jordan and Zrnic (Science 2023). Per query there is a
*prediction* (the metric with the judge's labels filling what humans left open) for every
query of the population, and a *truth* (the metric with human labels) for the audited
queries, a uniform random sample of that population. The estimate is

    theta = mean(prediction over all N queries) - mean(prediction - truth over the n audited)

and the human-only estimate beside it is mean(truth over the n audited).

Decisions
---------
- **Design `finite` (the default).** The population is the N golden queries the benchmark
  measures, a fixed finite set; the audit drew n of them without replacement
  (`goldenset.labelling.audit`). The mean of the predictions over all N is then known
  exactly and the whole uncertainty is the sample's: the variance of theta is
  (1 - n/N) s_d^2 / n, with s_d^2 the sample variance (ddof 1) of d = prediction - truth,
  and the interval uses Student's t with n - 1 degrees of freedom (as the paired t of
  goldenset.bench.paired does). The human-only interval is the same with s_y^2, the
  sample variance of the truth. This is the difference estimator of survey sampling;
  its intervals cover the mean over the golden queries themselves, which is what the
  simulation (benchmarks/ppi_simulation.py) checks.
- **Design `independent`.** The model of the PPI paper and of `ppi-python`: the N
  predicted queries and the n audited ones are independent samples of an infinite
  population. Variance var0(prediction)/N + var0(d)/n (ddof 0), normal quantile;
  exactly `ppi_py.ppi_mean_ci(..., lam=1)` (tests/bench/test_ppi.py compares with
  ppi-python 0.2.3 run from a venv of its own, since its wheel installs a top-level `tests`
  package that shadows this project's, and keeps values recorded from it). Kept for that parity and for a population
  thought of as all future queries; it over-covers the golden set's own mean (it charges
  for the N predictions a variance they do not have).
- **No power tuning by default (lambda = 1).** Classical PPI: unbiased whatever the judge,
  and its variance is below the human-only one whenever var(d) < var(truth); a judge
  worse than useless shows as an effective-sample-size gain below 1. `power_tuning=True`
  (finite design only) is PPI++'s idea (Angelopoulos, Duchi and Zrnic 2023) for a mean:
  theta = lambda mean_N(f) + mean_n(y - lambda f) with lambda = cov_n(f, y) / var_n(f)
  (ddof 1) clipped to [0, 1] (0 when var_n(f) = 0): survey sampling's regression
  estimator, so its variance is the one that estimator has (Cochran, Sampling Techniques,
  3rd ed., section 7.3): (1 - n/N) s^2(y - lambda f) / n with n - 2 in the denominator
  of s^2 and Student's t with n - 2 degrees of freedom, since lambda is fitted on the same
  audit (n = 2 gives an unbounded interval). With n - 1, as first written, the interval
  covered 92.8% in the simulation (kappa 0.5, a paired difference, 40 queries): a lambda
  fitted to the sample makes the residuals look smaller than they are. Never much wider
  than the human-only interval, at the price of a lambda estimated from the audit itself
  (a bias of order 1/n). Not the default: on the simulated kappa-0.5 judge it narrows the
  interval of a mean by a point more than classical PPI (19.6% narrower than human-only
  against 18.5%), and no lambda can do much better there: the width ratio of the best
  fixed lambda is sqrt(1 - rho^2), rho the correlation of prediction and truth over the
  queries (0.801 for that judge). The simulation reports both, and the floor.
- **Effective sample size gain** = human-only variance / PPI variance on the same audit
  (the design factors cancel in `finite`: s_y^2 / s_d^2): how many times more audited
  queries the human-only estimate would need for the same width.
- **Edge cases.** n = 0: no estimate (`PpiEstimate` is not made; the caller says why).
  n = 1: no spread to estimate, interval (-inf, inf). A variance of 0 (every d equal):
  the interval is the point; the gain is inf when the human-only variance is not 0, and
  undefined (None) when both are 0. n = N: a census, width 0 in `finite`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from goldenset.bench.paired import normal_quantile, t_quantile
from goldenset.errors import UsageError

CONFIDENCE = 0.95
DESIGNS = ("finite", "independent")
DEFAULT_DESIGN = "finite"


@dataclass(frozen=True)
class PpiEstimate:
    """A prediction-powered estimate beside the human-only one on the same audited queries."""

    estimate: float
    lo: float
    hi: float
    variance: float
    human: float
    human_lo: float
    human_hi: float
    human_variance: float
    ess_gain: float | None
    n_audited: int
    n_population: int
    mean_prediction: float
    correction: float  # mean of (prediction - truth) over the audited queries
    design: str
    confidence: float
    lam: float = 1.0  # the power-tuning lambda; 1 is classical PPI

    @property
    def width(self) -> float:
        return self.hi - self.lo

    @property
    def human_width(self) -> float:
        return self.human_hi - self.human_lo

    def to_json(self, digits: int | None = None) -> dict[str, Any]:
        """Every field, floats rounded to `digits` when given; inf and nan as null (JSON has neither)."""
        out: dict[str, Any] = {}
        for key, value in asdict(self).items():
            if isinstance(value, float):
                value = None if not math.isfinite(value) else (round(value, digits) if digits is not None else value)
            out[key] = value
        return out


def _check(design: str, confidence: float) -> None:
    if design not in DESIGNS:
        raise UsageError(f"design {design!r} is not one of {', '.join(DESIGNS)}")
    if not 0.0 < confidence < 1.0:
        raise UsageError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def _interval(point: float, variance: float, quantile: float) -> tuple[float, float]:
    if math.isnan(variance):
        return -math.inf, math.inf
    half = quantile * math.sqrt(variance)
    return point - half, point + half


def ppi_mean(
    prediction: Sequence[float],
    audited_prediction: Sequence[float],
    audited_truth: Sequence[float],
    *,
    design: str = DEFAULT_DESIGN,
    confidence: float = CONFIDENCE,
    power_tuning: bool = False,
) -> PpiEstimate:
    """The PPI estimate of the population mean of the truth, and the human-only one beside it.

    `prediction`: one value per query of the population (the audited ones included);
    `audited_prediction[j]`, `audited_truth[j]`: the prediction and the truth of the j-th
    audited query. UsageError when the audited arrays differ in length, are empty, or
    hold more queries than the population.
    """
    _check(design, confidence)
    f_all = np.asarray(prediction, dtype=float)
    f = np.asarray(audited_prediction, dtype=float)
    y = np.asarray(audited_truth, dtype=float)
    big_n, n = len(f_all), len(y)
    if len(f) != n:
        raise UsageError(f"{len(f)} audited predictions against {n} audited truths; they must pair one to one")
    if n == 0:
        raise UsageError("no audited query: the estimate needs at least one query humans labelled in full")
    if n > big_n:
        raise UsageError(f"{n} audited queries out of a population of {big_n}; the audit is a sample of it")
    lam, ddof = 1.0, 1
    if power_tuning:
        if design != "finite":
            raise UsageError("power tuning is offered with the finite design only")
        # One more degree of freedom spent on lambda (the regression estimator's variance).
        lam, ddof = tuned_lambda(f, y), 2
    d = lam * f - y
    mean_f = lam * float(f_all.mean())
    correction = float(d.mean())
    point = mean_f - correction
    human = float(y.mean())
    if design == "finite":
        fpc = 1.0 - n / big_n
        var_d = float(d.var(ddof=ddof)) if n > ddof else math.nan
        var_y = float(y.var(ddof=1)) if n > 1 else math.nan
        variance, human_variance = fpc * var_d / n, fpc * var_y / n
        quantile = _t_quantile(confidence, n - ddof)
        human_quantile = _t_quantile(confidence, n - 1)
    else:
        variance = float(f_all.var()) / big_n + float(d.var()) / n
        human_variance = float(y.var()) / n
        quantile = human_quantile = normal_quantile(0.5 + confidence / 2)
    lo, hi = _interval(point, variance, quantile)
    human_lo, human_hi = _interval(human, human_variance, human_quantile)
    return PpiEstimate(
        estimate=point,
        lo=lo,
        hi=hi,
        variance=variance,
        human=human,
        human_lo=human_lo,
        human_hi=human_hi,
        human_variance=human_variance,
        ess_gain=_gain(human_variance, variance),
        n_audited=n,
        n_population=big_n,
        mean_prediction=mean_f,
        correction=correction,
        design=design,
        confidence=confidence,
        lam=lam,
    )


def _t_quantile(confidence: float, df: int) -> float:
    return t_quantile(0.5 + confidence / 2, df) if df > 0 else math.inf


def tuned_lambda(f: np.ndarray, y: np.ndarray) -> float:
    """PPI++'s lambda for a mean: cov(f, y) / var(f) on the audited queries (ddof 1), clipped to [0, 1]."""
    if len(f) < 2:
        return 1.0
    var = float(np.var(f, ddof=1))
    if var == 0.0:
        return 0.0
    cov = float(np.cov(f, y, ddof=1)[0, 1])
    return min(1.0, max(0.0, cov / var))


def _gain(human_variance: float, variance: float) -> float | None:
    if math.isnan(human_variance) or math.isnan(variance):
        return None
    if variance == 0.0:
        return None if human_variance == 0.0 else math.inf
    return human_variance / variance
