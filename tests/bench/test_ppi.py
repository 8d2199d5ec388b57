"""The PPI mean estimator, pinned to a hand derivation and to ppi-python (its mean estimator, lambda = 1)."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from goldenset.bench.ppi import ppi_mean
from goldenset.errors import UsageError

# Five queries; the audit drew queries 2, 4 and 5 (1-based).
PREDICTION = [0.2, 0.4, 0.6, 0.8, 1.0]
AUDITED_PREDICTION = [0.4, 0.8, 1.0]
AUDITED_TRUTH = [0.5, 0.5, 1.0]


def test_finite_design_matches_the_hand_derivation():
    # d = f - y = (-0.1, 0.3, 0); mean d = 1/15; mean f over five = 3/5; theta = 3/5 - 1/15 = 8/15.
    # s_d^2 (ddof 1) = ((1/6)^2 + (7/30)^2 + (1/15)^2) / 2 = 13/300; fpc = 1 - 3/5 = 2/5;
    # var = 2/5 * 13/300 / 3 = 13/2250. Human: mean y = 2/3, s_y^2 = 1/12, var = 2/5 * 1/12 / 3 = 1/90.
    # Gain = (1/90) / (13/2250) = 25/13. t(0.975, 2 df) = 4.302652729749464 (scipy's table value).
    est = ppi_mean(PREDICTION, AUDITED_PREDICTION, AUDITED_TRUTH)
    t2 = 4.302652729749464
    assert est.estimate == pytest.approx(float(F(8, 15)), abs=1e-12)
    assert est.variance == pytest.approx(float(F(13, 2250)), abs=1e-12)
    assert est.lo == pytest.approx(8 / 15 - t2 * math.sqrt(13 / 2250), abs=1e-9)
    assert est.hi == pytest.approx(8 / 15 + t2 * math.sqrt(13 / 2250), abs=1e-9)
    assert est.human == pytest.approx(2 / 3, abs=1e-12)
    assert est.human_variance == pytest.approx(1 / 90, abs=1e-12)
    assert est.human_lo == pytest.approx(2 / 3 - t2 * math.sqrt(1 / 90), abs=1e-9)
    assert est.ess_gain == pytest.approx(25 / 13, abs=1e-12)
    assert (est.n_audited, est.n_population) == (3, 5)


def test_independent_design_matches_the_hand_derivation():
    # var0(f over five) = 0.08, / 5 = 0.016; var0(d) = 13/450, / 3 = 13/1350; z = 1.959963984540054.
    est = ppi_mean(PREDICTION, AUDITED_PREDICTION, AUDITED_TRUTH, design="independent")
    var = 0.016 + 13 / 1350
    z = 1.959963984540054
    assert est.variance == pytest.approx(var, abs=1e-12)
    assert (est.lo, est.hi) == pytest.approx((8 / 15 - z * math.sqrt(var), 8 / 15 + z * math.sqrt(var)), abs=1e-9)
    assert est.human_variance == pytest.approx((1 / 18) / 3, abs=1e-12)  # var0(y) = 1/18


# ppi-python 0.2.3 on the sample below, recorded because its wheel installs a top-level `tests`
# package that shadows this project's own (so it cannot be a test dependency). To repeat, in a
# scratch virtual environment with `pip install ppi-python==0.2.3`:
#   ppi_py.ppi_mean_ci(truth[audit], prediction[audit], prediction, alpha=0.05, lam=1)   (lam=0: classical)
#   ppi_py.ppi_mean_pointestimate(truth[audit], prediction[audit], prediction, lam=1)
PPI_PYTHON_LAM1 = (0.5081335198788417, 0.44698223071988014, 0.5692848090378033)  # point, lo, hi
PPI_PYTHON_LAM0 = (0.5238144995814267, 0.43547847300528236, 0.612150526157571)
PPI_PYTHON_HAND_POINT = 0.5333333333333333  # the five-query example above, lam=1


def ppi_python_sample() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    truth = rng.random(300)
    prediction = np.clip(truth + rng.normal(0, 0.2, 300), 0, 1)
    audit = rng.choice(300, size=40, replace=False)
    return truth, prediction, audit


def test_independent_design_equals_ppi_python():
    truth, prediction, audit = ppi_python_sample()
    est = ppi_mean(prediction, prediction[audit], truth[audit], design="independent")
    assert (est.estimate, est.lo, est.hi) == pytest.approx(PPI_PYTHON_LAM1, abs=1e-12)
    # lam = 0 in ppi-python is the classical interval: the human-only one here.
    assert (est.human, est.human_lo, est.human_hi) == pytest.approx(PPI_PYTHON_LAM0, abs=1e-12)


def test_finite_point_estimate_equals_ppi_python():
    est = ppi_mean(PREDICTION, AUDITED_PREDICTION, AUDITED_TRUTH)
    assert est.estimate == pytest.approx(PPI_PYTHON_HAND_POINT, abs=1e-15)


def test_the_finite_design_narrows_the_independent_one_by_the_population_correction():
    truth, prediction, audit = ppi_python_sample()
    fin = ppi_mean(prediction, prediction[audit], truth[audit])
    d = prediction[audit] - truth[audit]
    assert fin.variance == pytest.approx((1 - 40 / 300) * d.var(ddof=1) / 40, rel=1e-12)


def test_a_perfect_judge_gives_a_point_interval_and_an_infinite_gain():
    est = ppi_mean([0.1, 0.5, 0.9, 0.3], [0.1, 0.9], [0.1, 0.9])
    assert (est.lo, est.estimate, est.hi) == pytest.approx((0.45, 0.45, 0.45))
    assert est.ess_gain == math.inf


def test_a_census_has_no_width_and_equals_the_human_mean():
    est = ppi_mean([0.2, 0.4], [0.2, 0.4], [0.0, 1.0])
    assert (est.lo, est.hi) == pytest.approx((0.5, 0.5))
    assert est.human == pytest.approx(0.5)


def test_one_audited_query_has_an_unbounded_interval():
    est = ppi_mean([0.2, 0.4, 0.6], [0.4], [1.0])
    assert (est.lo, est.hi) == (-math.inf, math.inf)
    assert est.ess_gain is None
    assert est.to_json()["lo"] is None


@pytest.mark.parametrize(
    ("prediction", "f", "y", "message"),
    [
        ([0.1], [], [], "no audited query"),
        ([0.1], [0.1, 0.2], [0.1], "must pair one to one"),
        ([0.1], [0.1, 0.2], [0.1, 0.2], "population of 1"),
    ],
)
def test_bad_samples_are_refused_with_a_reason(prediction, f, y, message):
    with pytest.raises(UsageError, match=message):
        ppi_mean(prediction, f, y)


def test_an_unknown_design_is_refused():
    with pytest.raises(UsageError, match="design 'bayes'"):
        ppi_mean([0.1, 0.2], [0.1, 0.2], [0.1, 0.2], design="bayes")


def test_power_tuning_matches_the_hand_derivation():
    # cov_n(f, y) = 1/15, var_n(f) = 7/75, lambda = 5/7; theta = 5/7 * 3/5 + (2/3 - 5/7 * 11/15) = 4/7.
    # d = lambda f - y = (-3/14, 1/14, -4/14); s_d^2 = 1/28; variance = 2/5 * (1/28) / 3 = 1/210.
    est = ppi_mean(PREDICTION, AUDITED_PREDICTION, AUDITED_TRUTH, power_tuning=True)
    assert est.lam == pytest.approx(5 / 7, abs=1e-12)
    assert est.estimate == pytest.approx(4 / 7, abs=1e-12)
    assert est.variance == pytest.approx(1 / 210, abs=1e-12)


def test_power_tuning_clips_lambda_to_0_and_1():
    # A prediction that moves against the truth gets lambda 0: the human-only estimate.
    est = ppi_mean([0.0, 1.0, 0.5, 0.5], [0.0, 1.0, 0.5], [1.0, 0.0, 0.5], power_tuning=True)
    assert est.lam == 0.0 and est.estimate == pytest.approx(est.human)


def test_power_tuning_needs_the_finite_design():
    with pytest.raises(UsageError, match="finite design only"):
        ppi_mean([0.1, 0.2], [0.1, 0.2], [0.1, 0.2], design="independent", power_tuning=True)
