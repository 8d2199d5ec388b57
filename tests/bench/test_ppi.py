"""The PPI mean estimator, pinned to a hand derivation and to ppi-python, run live from its own venv.

ppi-python's wheel installs a top-level `tests` package that would shadow this project's, so
it is not a test dependency: it lives in a virtual environment of its own,
GOLDENSET_PPI_VENV, else the checkout's var/ppi-venv (`.ci/run` creates it in the background;
by hand: `python -m venv var/ppi-venv && var/ppi-venv/bin/pip install ppi-python==0.2.3`).
The tests marked `ppi_python` send seeded samples to its mean estimator in a subprocess
(`python -I`: nothing of this checkout on its path) and compare; without the venv they skip
and say why, and under CI they fail. The values recorded from it below keep the parity
checked on a machine without the venv.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

from goldenset.bench.ppi import ppi_mean
from goldenset.errors import UsageError
from tests.helpers import running_under_ci, wait_for_venv

ROOT = Path(__file__).resolve().parents[2]
ENV_VENV = "GOLDENSET_PPI_VENV"
PPI_PYTHON_VERSION = "0.2.3"

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


# ppi-python 0.2.3 on the sample below, recorded so that the parity holds without its venv;
# test_the_recorded_values_are_what_ppi_python_returns checks them against the live package:
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
    # d = lambda f - y = (-3/14, 1/14, -4/14), mean -2/14; squared deviations sum to (1 + 9 + 4)/196 = 1/14;
    # over n - 2 = 1: s^2 = 1/14; variance = 2/5 * (1/14) / 3 = 1/105; t(0.975, 1 df) = 12.706204736174698.
    est = ppi_mean(PREDICTION, AUDITED_PREDICTION, AUDITED_TRUTH, power_tuning=True)
    t1 = 12.706204736174698
    assert est.lam == pytest.approx(5 / 7, abs=1e-12)
    assert est.estimate == pytest.approx(4 / 7, abs=1e-12)
    assert est.variance == pytest.approx(1 / 105, abs=1e-12)
    assert (est.lo, est.hi) == pytest.approx(
        (4 / 7 - t1 * math.sqrt(1 / 105), 4 / 7 + t1 * math.sqrt(1 / 105)), abs=1e-9
    )
    # The human-only interval beside it keeps n - 1: t(0.975, 2 df), variance 1/90.
    assert est.human_hi == pytest.approx(2 / 3 + 4.302652729749464 * math.sqrt(1 / 90), abs=1e-9)
    assert est.ess_gain == pytest.approx((1 / 90) / (1 / 105), abs=1e-12)


def test_power_tuning_on_two_audited_queries_has_an_unbounded_interval():
    # Two points fix a line: no degree of freedom is left to estimate the spread around it.
    est = ppi_mean([0.1, 0.5, 0.9], [0.1, 0.5], [0.2, 0.4], power_tuning=True)
    assert (est.lo, est.hi) == (-math.inf, math.inf)
    assert est.ess_gain is None
    assert est.human_lo > -math.inf


def test_power_tuning_clips_lambda_to_0_and_1():
    # A prediction that moves against the truth gets lambda 0: the human-only estimate.
    est = ppi_mean([0.0, 1.0, 0.5, 0.5], [0.0, 1.0, 0.5], [1.0, 0.0, 0.5], power_tuning=True)
    assert est.lam == 0.0 and est.estimate == pytest.approx(est.human)


def test_power_tuning_needs_the_finite_design():
    with pytest.raises(UsageError, match="finite design only"):
        ppi_mean([0.1, 0.2], [0.1, 0.2], [0.1, 0.2], design="independent", power_tuning=True)


# --------------------------------------------------------------------------- ppi-python, live

# Runs in ppi-python's venv: every case's point estimate and 95% interval at each lambda asked.
ORACLE = """
import json, sys
from importlib.metadata import version
import numpy as np
import ppi_py
out = {}
for name, case in json.load(sys.stdin).items():
    y, f, f_all = (np.asarray(case[k], dtype=float) for k in ("truth", "audited_prediction", "prediction"))
    rows = []
    for lam in case["lams"]:
        point = ppi_py.ppi_mean_pointestimate(y, f, f_all, lam=lam)
        lo, hi = ppi_py.ppi_mean_ci(y, f, f_all, alpha=0.05, lam=lam)
        rows.append([float(np.ravel(v)[0]) for v in (point, lo, hi)])
    out[name] = rows
json.dump({"version": version("ppi-python"), "cases": out}, sys.stdout)
"""


def oracle_cases() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Seeded samples, as (prediction over the population, audited indices, truth of the audited)."""
    cases = {}
    truth, prediction, audit = ppi_python_sample()
    cases["continuous, n=40 of 300"] = (prediction, audit, truth[audit])
    # Per-query metrics as a benchmark makes them: many 0s and 1s, ties, a judge that errs both ways.
    rng = np.random.default_rng(24)
    truth = np.round(rng.beta(0.6, 0.6, 225), 2)
    noise = rng.normal(0, 0.25, 225) * (rng.random(225) < 0.6)
    prediction = np.clip(np.round(truth + noise, 2), 0, 1)
    audit = rng.choice(225, size=40, replace=False)
    cases["ndcg-like, n=40 of 225"] = (prediction, audit, truth[audit])
    # A binary metric (success@k) under a judge that flips one verdict in five.
    truth = (rng.random(120) < 0.55).astype(float)
    prediction = np.where(rng.random(120) < 0.2, 1 - truth, truth)
    audit = rng.choice(120, size=20, replace=False)
    cases["binary, n=20 of 120"] = (prediction, audit, truth[audit])
    # A judge biased upwards and uncorrelated with the truth; a small audit.
    truth = rng.random(30)
    prediction = np.clip(rng.random(30) + 0.3, 0, 1)
    audit = rng.choice(30, size=5, replace=False)
    cases["useless judge, n=5 of 30"] = (prediction, audit, truth[audit])
    cases["the five-query hand example"] = (np.array(PREDICTION), np.array([1, 3, 4]), np.array(AUDITED_TRUTH))
    return cases


def ppi_python_venv() -> Path:
    return Path(os.environ.get(ENV_VENV) or ROOT / "var" / "ppi-venv")


@pytest.fixture(scope="module")
def ppi_python(tmp_path_factory) -> dict:
    """ppi-python's answers for every oracle case, at lambda 1, 0 and goldenset's power-tuned lambda.

    Module-scoped, so it reads GOLDENSET_PPI_VENV before each test's isolated_home clears it.
    """
    venv = ppi_python_venv()
    wait_for_venv(venv)
    python = venv / "bin" / "python"
    if not python.exists():
        why = (
            f"no ppi-python venv at {venv}: create it with `python -m venv {venv} && "
            f"{venv}/bin/pip install ppi-python=={PPI_PYTHON_VERSION}` or set {ENV_VENV}"
        )
        if running_under_ci():
            pytest.fail("CI must run the ppi-python tests: " + why, pytrace=False)
        pytest.skip(why)
    payload = {}
    for name, (prediction, audit, truth) in oracle_cases().items():
        tuned = ppi_mean(prediction, prediction[audit], truth, power_tuning=True).lam
        payload[name] = {
            "truth": truth.tolist(),
            "audited_prediction": prediction[audit].tolist(),
            "prediction": prediction.tolist(),
            "lams": [1.0, 0.0, tuned],
        }
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        [str(python), "-I", "-c", ORACLE],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path_factory.mktemp("ppi-python"),
        env=env,
    )
    if proc.returncode != 0:
        pytest.fail(f"ppi-python exited with {proc.returncode}: {proc.stderr[-2000:]}", pytrace=False)
    return json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.ppi_python
def test_the_oracle_is_the_pinned_ppi_python(ppi_python):
    assert ppi_python["version"] == PPI_PYTHON_VERSION


@pytest.mark.ppi_python
@pytest.mark.parametrize("case", list(oracle_cases()))
def test_independent_design_equals_live_ppi_python(ppi_python, case):
    prediction, audit, truth = oracle_cases()[case]
    est = ppi_mean(prediction, prediction[audit], truth, design="independent")
    lam1, lam0, _ = ppi_python["cases"][case]
    assert (est.estimate, est.lo, est.hi) == pytest.approx(lam1, abs=1e-12)
    # lambda = 0 is ppi-python's classical interval: the human-only one.
    assert (est.human, est.human_lo, est.human_hi) == pytest.approx(lam0, abs=1e-12)


@pytest.mark.ppi_python
@pytest.mark.parametrize("case", list(oracle_cases()))
def test_finite_point_estimates_equal_live_ppi_python(ppi_python, case):
    # The point estimate is the same formula in both designs, at any lambda; only the variance differs.
    # goldenset's tuned lambda is its own (cov/var on the audit, the finite design's optimum; ppi-python
    # optimises the independent design's variance), so it is sent to ppi-python, not compared with its.
    prediction, audit, truth = oracle_cases()[case]
    lam1, lam0, tuned = ppi_python["cases"][case]
    classical = ppi_mean(prediction, prediction[audit], truth)
    power = ppi_mean(prediction, prediction[audit], truth, power_tuning=True)
    assert classical.estimate == pytest.approx(lam1[0], abs=1e-12)
    assert classical.human == pytest.approx(lam0[0], abs=1e-12)
    assert power.estimate == pytest.approx(tuned[0], abs=1e-12)


@pytest.mark.ppi_python
def test_the_recorded_values_are_what_ppi_python_returns(ppi_python):
    lam1, lam0, _ = ppi_python["cases"]["continuous, n=40 of 300"]
    assert lam1 == pytest.approx(PPI_PYTHON_LAM1, abs=1e-15)
    assert lam0 == pytest.approx(PPI_PYTHON_LAM0, abs=1e-15)
    assert ppi_python["cases"]["the five-query hand example"][0][0] == pytest.approx(PPI_PYTHON_HAND_POINT, abs=1e-15)
