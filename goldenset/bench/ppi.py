"""Prediction-powered estimates of a mean: many judge-made values corrected by a random human sample.

Angelopoulos, Bates, Fannjiang, Jordan and Zrnic (Science 2023); power tuning from
Angelopoulos, Duchi and Zrnic (PPI++, 2023); unequal inclusion probabilities from Zrnic and
Candes (Active Statistical Inference, ICML 2024). Per query there is a *prediction* p (the
metric with the judge's labels filling what humans left open) for every query of the
population, and a *truth* t (the metric with human labels) for the audited queries. With a
weight lambda on the prediction the estimate is

    theta(lambda) = lambda mean_N(p) - mean_n(lambda p - t)

and the human-only estimate beside it is theta(0) = mean_n(t). The exact rules are contract
section 12.2; docs/concepts/estimates.md derives them.

Decisions
---------
- **Design `finite` (the default).** The population is the N queries the benchmark
  measures, a fixed finite set; the audit drew n of them without replacement. mean_N(p) is
  then known exactly and the whole uncertainty is the sample's: Var theta(lambda) =
  (1 - n/N) S^2(t - lambda p) / n, Student's t. Its intervals cover the mean over the golden
  queries themselves (benchmarks/ppi_simulation.py checks it).
- **Lambda tuned by default (PPI++).** S^2(t - lambda p) = S_t^2 - 2 lambda S_pt + lambda^2
  S_p^2 is a convex parabola in lambda, least at lambda* = S_pt / S_p^2; estimated on the
  audit by s_pt / s_p^2 (sample covariance over sample variance, the same ddof in both), and
  clipped to [0, 1] (the minimum of a convex parabola over an interval is its vertex clipped
  into it). With lambda inside (0, 1) the estimate is survey sampling's regression estimator
  (Cochran, Sampling Techniques, 3rd ed., 7.3), so its variance takes n - 2 in the
  denominator of s^2 and Student's t with n - 2 degrees of freedom: lambda was fitted on the
  same audit. At the clip (lambda exactly 0 or 1, or s_p^2 = 0, which gives 0) the estimate
  *is* a fixed-lambda one, human-only or classical PPI, and takes that one's interval (n - 1):
  PPI++ at lambda 0 is never wider than the human-only interval it equals. Fewer than 2
  audited queries: lambda 1 (nothing to fit on). A fixed lambda (`lam=1` is classical PPI)
  stays available: its interval takes n - 1.
- **Design `independent`.** The model of the PPI paper and of `ppi-python`: the N predicted
  queries and the n audited ones are independent samples of an infinite population.
  Variance lambda^2 var0(p over N)/N + var0(t - lambda p)/n (ddof 0), normal quantile. Its
  tuned lambda is ppi-python's (`_calc_lam_glm` for the mean): cov0(t, p over the n) /
  ((1 + n/N) var1(p over the n audited and the N, concatenated)), clipped to [0, 1];
  exactly `ppi_py.ppi_mean_ci(t, p_audited, p, alpha, lam=None)` (tests/bench/test_ppi.py
  runs ppi-python 0.2.3 from a venv of its own). One difference: when every prediction is
  equal ppi-python divides 0 by 0 (lambda nan, interval nan); here lambda is 0 (a constant
  prediction carries nothing, and every lambda gives the same point).
- **Active audits** (`inclusion` given: the probability with which the audit drew each
  audited query, Poisson sampling). The estimate is the generalised regression estimator
  (Sarndal, Swensson and Wretman, Model Assisted Survey Sampling, 1992, ch. 6) with the
  prediction as its one auxiliary variable:

      theta = lambda mean_N(p) + c + (1/N) sum_audited (t_i - lambda p_i - c) / pi_i

  unbiased for every fixed (lambda, c) by inverse-probability weighting. Its variance under
  Poisson sampling is (1/N^2) sum_population (1 - pi_i)/pi_i e_i^2, e = t - lambda p - c,
  estimated by (1/N^2) n/(n - k) sum_audited (1 - pi_i)/pi_i^2 (g_i e_i)^2, with k = 1 (c
  fitted) or 2 (lambda fitted too), g_i the regression estimator's g-weights (the weighted
  residual technique of Sarndal, Swensson and Wretman, Biometrika 1989: without them the
  interval covered 89.8% to 93.0% at 20 audited queries in the simulation, since a Poisson
  sample that drew few queries looks surer than it is; with them 92.8% to 95.7%) and
  Student's t with n - k degrees of freedom. (lambda, c) are
  the weighted least-squares fit of t on p over the audited queries with the weights
  w_i = (1 - pi_i)/pi_i^2 that minimise that estimated variance, lambda clipped to [0, 1] as
  above and c = the w-weighted mean of t - lambda p. With every pi_i = n/N it is the uniform
  design's estimate exactly (c cancels), and its variance too when only c is fitted (then
  every g_i = 1); the uniform design keeps Cochran's variance, without g-weights. A fitted
  (lambda, c) costs a bias of order 1/n, as PPI++'s lambda does in the uniform design.
- **Effective sample size gain** = human-only variance / PPI variance on the same audit: how
  many times more audited queries the human-only estimate would need for the same width.
- **Clipping to the metric's range** (`bounds`): the point and both ends of each interval
  are clamped into [lo, hi]. The mean being estimated lies in that range, so clamping an
  interval's ends loses no coverage (the true mean is in the interval exactly when it is in
  its clamped version) and clamping the point never moves it away from the true mean.
- **Roundoff** (`ROUNDOFF` = 1e-12). The per-query values are doubles, so a sum that is 0 in
  exact arithmetic can come out as 1e-35, and a slope that is exactly 1 as 0.9999999999999997:
  that flipped k (n - 2 for n - 1, an unbounded interval at n = 2), printed a gain of 1.8e31x
  instead of `inf`, and put a verdict on an interval [-2.8e-17, 2.8e-18]. Every per-query value
  lies in [-1, 1] (a metric, or the difference of two), so the tolerance is absolute: each
  deviation from a mean that enters a sum of squares or products (p - pbar and t - tbar in
  lambda's fit, the residuals of the variance) is 0 when |x| <= 1e-12; a tuned lambda within
  1e-12 of 0 or 1 is 0 or 1; the point within 1e-12 of 0 is 0 (the interval is then around it).
  Exact rational arithmetic on the doubles would not do: 1/12 - 1/24 is not 1/8 - 1/12 once
  each is a double, so the residuals of a perfect judge still differ. No value a real
  benchmark produces is moved by more than 1e-12, far below the 4 decimals printed.
- **Negative zero** never reaches a reader: every float printed or stored is x + 0.0 (which
  turns -0.0 into 0.0 and leaves every other value), `--ppi-lambda -0` included.
- **Edge cases.** n = 0: no estimate (`PpiEstimate` is not made; the caller says why).
  Too few audited queries for the degrees of freedom: interval (-inf, inf), clamped to the
  bounds when given. A variance of 0: the interval is the point; the gain is inf when the
  human-only variance is not 0, undefined (None) when both are 0. n = N: a census, width 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from goldenset.bench.paired import normal_quantile, t_quantile
from goldenset.errors import UsageError

CONFIDENCE = 0.95
DESIGNS = ("finite", "independent")
DEFAULT_DESIGN = "finite"
TUNED = "tuned"  # --ppi-lambda's default: PPI++
INF = "inf"  # how JSON writes an infinite gain (contract 12.2)
# Contract 12.2, roundoff: a deviation, lambda's distance to 0 or 1, or a point within this of 0 is exactly that.
ROUNDOFF = 1e-12
# Keys stored unrounded (contract 12.2): ess_gain = human_variance / variance must be rebuilt from them.
UNROUNDED = frozenset({"variance", "human_variance"})

Bounds = tuple[float, float]


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
    mean_prediction: float  # lambda mean_N(p)
    correction: float  # mean_prediction minus the unclamped estimate
    design: str
    confidence: float
    lam: float = 1.0  # the weight on the prediction: 1 is classical PPI, 0 the human-only estimate
    lam_rule: str = "fixed"  # "tuned" (PPI++) or "fixed"
    sampling: str = "uniform"  # "uniform" or "active" (inclusion probabilities given)

    @property
    def width(self) -> float:
        return self.hi - self.lo

    @property
    def human_width(self) -> float:
        return self.human_hi - self.human_lo

    @property
    def method(self) -> str:
        """How a person reads it: PPI++ when lambda was tuned, PPI at a fixed lambda."""
        return "PPI++" if self.lam_rule == TUNED else "PPI"

    def to_json(self, digits: int | None = None) -> dict[str, Any]:
        """Contract 12.2's keys; floats rounded to `digits` when given, an infinite bound as null, an infinite
        gain as the string "inf" (null is kept for a gain that is undefined)."""
        out: dict[str, Any] = {}
        for key in _JSON_FLOATS:
            out[key] = json_number(getattr(self, key), None if key in UNROUNDED else digits)
        gain = self.ess_gain
        out["ess_gain"] = INF if gain is not None and math.isinf(gain) else json_number(gain, digits)
        out |= {
            "n_audited": self.n_audited,
            "n_population": self.n_population,
            "mean_prediction": json_number(self.mean_prediction, digits),
            "correction": json_number(self.correction, digits),
            "design": self.design,
            "confidence": self.confidence,
            "lambda": json_number(self.lam, digits),
            "lambda_rule": self.lam_rule,
            "sampling": self.sampling,
        }
        return out


_JSON_FLOATS = ("estimate", "lo", "hi", "variance", "human", "human_lo", "human_hi", "human_variance")


def json_number(value: float | None, digits: int | None) -> float | None:
    """A float as JSON holds it: rounded half to even to `digits` (None: as it is), never -0.0; None when not
    finite."""
    if value is None or not math.isfinite(value):
        return None
    return (round(value, digits) if digits is not None else value) + 0.0


def shown(x: float, digits: int) -> str:
    """x printed with `digits` decimals as a person reads it: never `-0.0000` (x rounds to 0 from below)."""
    return f"{round(x, digits) + 0.0:.{digits}f}"


def snap(x: np.ndarray) -> np.ndarray:
    """Deviations within ROUNDOFF of 0 made exactly 0 (contract 12.2, roundoff)."""
    return np.where(np.abs(x) <= ROUNDOFF, 0.0, x)


def snap_point(x: float) -> float:
    """A point within ROUNDOFF of 0 made exactly 0."""
    return 0.0 if abs(x) <= ROUNDOFF else x


def snap_lambda(lam: float) -> float:
    """A tuned lambda within ROUNDOFF of 0 or 1 made exactly 0 or 1, so k and the interval do not rest on it (the
    clip to [0, 1] is the caller's)."""
    if -ROUNDOFF <= lam <= ROUNDOFF:
        return 0.0
    if 1.0 - ROUNDOFF <= lam <= 1.0 + ROUNDOFF:
        return 1.0
    return lam


def check_lambda(value: str | float | None) -> float | None:
    """`--ppi-lambda`: None for `tuned` (or None), else a number in [0, 1]; UsageError quoting anything else."""
    if value is None or (isinstance(value, str) and value.strip().lower() == TUNED):
        return None
    try:
        lam = float(value)
    except (TypeError, ValueError):
        lam = math.nan
    if not 0.0 <= lam <= 1.0:  # nan fails too
        raise UsageError(
            f"--ppi-lambda {value!r} is neither `tuned` nor a number in [0, 1]; use --ppi-lambda tuned (PPI++) "
            "or --ppi-lambda 1 (classical PPI)"
        )
    return lam + 0.0  # `-0` is 0


def check_design(design: str) -> str:
    """`--design`: finite or independent; UsageError quoting anything else."""
    if design not in DESIGNS:
        raise UsageError(f"design {design!r} is not one of {', '.join(DESIGNS)}; use --design finite or independent")
    return design


def _check(design: str, confidence: float) -> None:
    check_design(design)
    if not 0.0 < confidence < 1.0:
        raise UsageError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


@dataclass(frozen=True)
class _Sample:
    """The arrays an estimate reads, checked."""

    f_all: np.ndarray  # prediction over the population
    f: np.ndarray  # prediction of the audited
    y: np.ndarray  # truth of the audited
    pi: np.ndarray  # inclusion probability of each audited query (n/N for a uniform audit)
    active: bool

    @property
    def n(self) -> int:
        return len(self.y)

    @property
    def big_n(self) -> int:
        return len(self.f_all)


def _sample(prediction, audited_prediction, audited_truth, inclusion) -> _Sample:
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
    if inclusion is None:
        return _Sample(f_all, f, y, np.full(n, n / big_n), active=False)
    pi = np.asarray(inclusion, dtype=float)
    if len(pi) != n:
        raise UsageError(f"{len(pi)} inclusion probabilities against {n} audited queries; give one per audited query")
    bad = [float(x) for x in pi if not 0.0 < x <= 1.0]
    if bad:
        raise UsageError(f"inclusion probability {bad[0]!r} is outside (0, 1]; the audit's design stored it wrong")
    return _Sample(f_all, f, y, pi, active=True)


def ppi_mean(
    prediction: Sequence[float],
    audited_prediction: Sequence[float],
    audited_truth: Sequence[float],
    *,
    design: str = DEFAULT_DESIGN,
    confidence: float = CONFIDENCE,
    lam: float | None = None,
    inclusion: Sequence[float] | None = None,
    bounds: Bounds | None = None,
) -> PpiEstimate:
    """The prediction-powered estimate of the population mean of the truth, and the human-only one beside it.

    `prediction`: one value per query of the population (the audited ones included);
    `audited_prediction[j]`, `audited_truth[j]`: the prediction and the truth of the j-th
    audited query; `lam`: None tunes lambda (PPI++), a number in [0, 1] fixes it;
    `inclusion[j]`: the probability with which an active audit drew the j-th audited
    query (None: a uniform audit); `bounds`: the metric's range, into which the point and
    the intervals are clamped. UsageError when the audited arrays differ in length, are
    empty, or hold more queries than the population, or an active audit is asked of the
    independent design.
    """
    _check(design, confidence)
    s = _sample(prediction, audited_prediction, audited_truth, inclusion)
    if lam is not None:
        lam = check_lambda(lam)
    if design == "independent":
        if s.active:
            raise UsageError("an active audit has the finite design only; estimate it with --design finite")
        return _independent(s, lam, confidence, bounds)
    return _finite(s, lam, confidence, bounds)


@dataclass(frozen=True)
class _Fit:
    point: float  # unclamped
    variance: float
    df: int


def _weighted_fit(s: _Sample, lam: float | None) -> tuple[float, float, int]:
    """(lambda, c, k): the weighted least-squares fit of t on p minimising the estimated variance (module)."""
    w = (1.0 - s.pi) / s.pi**2
    if lam is None:
        lam = tune_weighted(s.f, s.y, w) if s.n >= 2 else 1.0
        k = 2 if 0.0 < lam < 1.0 else 1
    else:
        k = 1
    total = float(w.sum())
    c = float(np.sum(w * (s.y - lam * s.f)) / total) if total > 0 else 0.0
    return lam, c, k


def tune_weighted(f: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """The weighted slope of y on f, sum w (f - fbar)(y - ybar) / sum w (f - fbar)^2, clipped to [0, 1]; 0 when
    f does not vary (under weight). Equal weights give PPI++'s s_pt / s_p^2 of the uniform finite design."""
    total = float(w.sum())
    if total <= 0.0:  # a census: every query drawn for sure, nothing to weigh
        w = np.ones_like(f)
        total = float(len(f))
    fc = snap(f - float(np.sum(w * f)) / total)
    yc = snap(y - float(np.sum(w * y)) / total)
    den = float(np.sum(w * fc * fc))
    if den <= 0.0:
        return 0.0
    return snap_lambda(min(1.0, max(0.0, float(np.sum(w * fc * yc)) / den)))


def difference_estimate(
    f_all: np.ndarray,
    f: np.ndarray,
    y: np.ndarray,
    pi: np.ndarray,
    lam: float,
    c: float,
    g: np.ndarray | None = None,
) -> tuple[float, float]:
    """At fixed (lambda, c): the estimate lambda mean_N(p) + c + (1/N) sum (t - lambda p - c)/pi over the audited,
    and (1/N^2) sum (1 - pi)/pi^2 (g (t - lambda p - c))^2. With g = 1 (None) the latter is the unbiased
    estimate of the estimate's variance under Poisson sampling; `g` are calibration factors (_g_factors). The
    residuals of the variance are snapped (contract 12.2, roundoff); the point's are not."""
    big_n = len(f_all)
    e = y - lam * f - c
    ge = snap(e) if g is None else g * snap(e)
    point = lam * float(f_all.mean()) + c + float(np.sum(e / pi)) / big_n
    return point, float(np.sum((1.0 - pi) / pi**2 * ge * ge)) / big_n**2


def _g_factors(s: _Sample, k: int) -> np.ndarray:
    """The regression estimator's g-weights (Sarndal, Swensson and Wretman, Biometrika 1989): g_i = 1 + (t_x -
    that_x)' T^-1 x_i q_i with x = (1, p)[:k], q_i = (1 - pi_i)/pi_i, T = sum_i q_i x_i x_i' / pi_i, t_x the
    population totals of x and that_x their inverse-probability estimates. They scale each residual by how far
    the sample's weighted totals miss the known ones (a Poisson sample that drew few queries: g > 1)."""
    q = (1.0 - s.pi) / s.pi
    x = np.column_stack([np.ones(s.n), s.f])[:, :k]
    gap = np.array([float(s.big_n), float(s.f_all.sum())])[:k] - (x / s.pi[:, None]).sum(axis=0)
    t = (x * (q / s.pi)[:, None]).T @ x
    solution = np.linalg.lstsq(t, gap, rcond=None)[0]  # least norm when T is singular (every pi 1)
    return 1.0 + (x @ solution) * q


def _finite_fit(s: _Sample, lam: float, c: float, k: int) -> _Fit:
    """Point and estimated variance of the regression estimator at (lambda, c), k coefficients fitted: the
    second value of difference_estimate times n/(n - k), which makes it the uniform design's s^2 with n - k;
    an active audit's residuals carry their g-weights."""
    g = _g_factors(s, k) if s.active else None
    point, weighted = difference_estimate(s.f_all, s.f, s.y, s.pi, lam, c, g)
    if s.n <= k:
        return _Fit(point, math.nan, s.n - k)
    return _Fit(point, max(s.n / (s.n - k) * weighted, 0.0), s.n - k)


def _finite(s: _Sample, lam: float | None, confidence: float, bounds: Bounds | None) -> PpiEstimate:
    rule = TUNED if lam is None else "fixed"
    lam, c, k = _weighted_fit(s, lam)
    fit = _finite_fit(s, lam, c, k)
    _, c0, _ = _weighted_fit(s, 0.0)
    human = _finite_fit(s, 0.0, c0, 1)
    return _result(s, fit, human, lam, rule, "finite", confidence, bounds, normal=False)


def tune_independent(f: np.ndarray, y: np.ndarray, f_all: np.ndarray) -> float:
    """ppi-python's power-tuned lambda for a mean (`_calc_lam_glm`, optim_mode "overall", clip=True):
    cov0(y, f) / ((1 + n/N) var1(concat(f, f_all))), clipped to [0, 1]; 0 when the predictions do not vary."""
    n, big_n = len(f), len(f_all)
    both = np.concatenate([f, f_all])
    var = float(np.sum(snap(both - both.mean()) ** 2)) / (n + big_n - 1) if n + big_n > 1 else 0.0
    if var == 0.0:
        return 0.0
    cov = float(np.mean(snap(y - y.mean()) * snap(f - f.mean())))
    return snap_lambda(min(1.0, max(0.0, cov / ((1.0 + n / big_n) * var))))


def _var0(x: np.ndarray) -> float:
    """The variance with denominator len(x) (numpy's var, ddof 0) of snapped deviations."""
    return float(np.mean(snap(x - x.mean()) ** 2))


def _independent(s: _Sample, lam: float | None, confidence: float, bounds: Bounds | None) -> PpiEstimate:
    rule = TUNED if lam is None else "fixed"
    if lam is None:
        lam = tune_independent(s.f, s.y, s.f_all)
    point = lam * float(s.f_all.mean()) + float(np.mean(s.y - lam * s.f))
    variance = _var0(lam * s.f_all) / s.big_n + _var0(s.y - lam * s.f) / s.n
    human = _Fit(float(s.y.mean()), _var0(s.y) / s.n, 0)
    return _result(s, _Fit(point, variance, 0), human, lam, rule, "independent", confidence, bounds, normal=True)


def _result(
    s: _Sample,
    fit: _Fit,
    human: _Fit,
    lam: float,
    rule: str,
    design: str,
    confidence: float,
    bounds: Bounds | None,
    *,
    normal: bool,
) -> PpiEstimate:
    def quantile(df: int) -> float:
        if normal:
            return normal_quantile(0.5 + confidence / 2)
        return t_quantile(0.5 + confidence / 2, df) if df > 0 else math.inf

    point, lo, hi = _interval(fit.point, fit.variance, quantile(fit.df), bounds)
    h_point, h_lo, h_hi = _interval(human.point, human.variance, quantile(human.df), bounds)
    mean_f = lam * float(s.f_all.mean())
    return PpiEstimate(
        estimate=point,
        lo=lo,
        hi=hi,
        variance=fit.variance,
        human=h_point,
        human_lo=h_lo,
        human_hi=h_hi,
        human_variance=human.variance,
        ess_gain=_gain(human.variance, fit.variance),
        n_audited=s.n,
        n_population=s.big_n,
        mean_prediction=mean_f,
        correction=mean_f - snap_point(fit.point),
        design=design,
        confidence=confidence,
        lam=lam,
        lam_rule=rule,
        sampling="active" if s.active else "uniform",
    )


def _interval(point: float, variance: float, quantile: float, bounds: Bounds | None) -> tuple[float, float, float]:
    """(point, lo, hi): the point within ROUNDOFF of 0 made 0, the interval around it, each clamped into `bounds`
    when given; (-inf, inf) around a variance that is nan."""
    point = snap_point(point)
    if math.isnan(variance) or math.isinf(quantile):
        lo, hi = -math.inf, math.inf
    else:
        half = quantile * math.sqrt(variance)
        lo, hi = point - half, point + half
    if bounds is None:
        return point, lo, hi
    return clamp(point, bounds), clamp(lo, bounds), clamp(hi, bounds)


def clamp(x: float, bounds: Bounds) -> float:
    """x clamped into [bounds[0], bounds[1]] (infinite x included), never -0.0."""
    return min(bounds[1], max(bounds[0], x)) + 0.0


def _gain(human_variance: float, variance: float) -> float | None:
    if math.isnan(human_variance) or math.isnan(variance):
        return None
    if variance == 0.0:
        return None if human_variance == 0.0 else math.inf
    return human_variance / variance
