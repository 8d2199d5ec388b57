"""Paired comparison: intervals, verdicts and the decided edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from goldenset.bench.paired import compare_paired, min_detectable_effect, verdict
from goldenset.errors import UsageError


def _runs(n=30, shift=0.1, noise=0.05, seed=1):
    rng = np.random.default_rng(seed)
    a = {f"q{i}": float(v) for i, v in enumerate(rng.uniform(0.2, 0.7, n))}
    b = {q: v + shift + float(rng.normal(0, noise)) for q, v in a.items()}
    return a, b


def test_identical_runs_are_indistinguishable_with_a_zero_width_interval():
    a, _ = _runs()
    p = compare_paired("ndcg@10", a, dict(a), 1)
    assert (p.diff, p.lo, p.hi) == (0.0, 0.0, 0.0)
    assert p.verdict == "indistinguishable"
    assert p.mde is None


def test_a_known_improvement_is_better_and_its_reverse_worse():
    a, b = _runs()
    assert compare_paired("recall@5", a, b, 1).verdict == "better"
    assert compare_paired("recall@5", b, a, 1).verdict == "worse"


def test_for_lower_is_better_metrics_a_rise_is_worse():
    a, b = _runs()
    assert compare_paired("noise@5", a, b, -1).verdict == "worse"
    assert compare_paired("hole@5", a, b, 0).verdict == "higher"


def test_interval_crossing_zero_is_indistinguishable_whatever_the_mean_says():
    a = {"q1": 0.5, "q2": 0.5, "q3": 0.5, "q4": 0.5}
    b = {"q1": 0.9, "q2": 0.2, "q3": 0.8, "q4": 0.3}
    p = compare_paired("map", a, b, 1)
    assert p.diff > 0 and p.lo < 0 < p.hi
    assert p.verdict == "indistinguishable"


def test_t_interval_matches_scipy_paired_t_test():
    a, b = _runs(n=12, noise=0.2)
    p = compare_paired("map", a, b, 1)
    qs = sorted(a)
    ci = stats.ttest_rel([b[q] for q in qs], [a[q] for q in qs]).confidence_interval(0.95)
    assert (p.lo, p.hi) == pytest.approx((ci.low, ci.high))
    assert p.n == 12


def test_only_queries_both_runs_saw_are_paired():
    a = {"q1": 0.1, "q2": 0.2, "q3": 0.3}
    b = {"q2": 0.4, "q3": 0.5, "q4": 0.9}
    p = compare_paired("map", a, b, 1)
    assert p.n == 2 and p.mean_a == pytest.approx(0.25) and p.mean_b == pytest.approx(0.45)


def test_no_common_query_is_a_usage_error():
    with pytest.raises(UsageError, match="no query in common"):
        compare_paired("map", {"q1": 1.0}, {"q2": 1.0}, 1)


def test_one_common_query_has_an_unbounded_interval():
    p = compare_paired("map", {"q1": 0.1}, {"q1": 0.9}, 1)
    assert math.isinf(p.lo) and math.isinf(p.hi) and p.verdict == "indistinguishable" and p.mde is None


def test_constant_nonzero_difference_is_decided_by_its_sign():
    a = {"q1": 0.0, "q2": 0.0, "q3": 0.0}
    b = {"q1": 1.0, "q2": 1.0, "q3": 1.0}
    p = compare_paired("recall@5", a, b, 1)
    assert (p.lo, p.hi, p.verdict) == (1.0, 1.0, "better")


def test_bootstrap_is_reproducible_with_its_seed_and_agrees_with_t_on_a_clear_effect():
    a, b = _runs()
    one = compare_paired("map", a, b, 1, bootstrap=2000, seed=7)
    two = compare_paired("map", a, b, 1, bootstrap=2000, seed=7)
    assert (one.lo, one.hi) == (two.lo, two.hi)
    assert one.lo < one.diff < one.hi and one.verdict == "better"
    assert "seed 7" in one.method


DIFFS = {"q1": 0.1, "q2": 0.3, "q3": 0.2, "q4": 0.4, "q5": 0.0, "q6": 0.25, "q7": -0.05}


@pytest.mark.parametrize(("resamples", "seed"), [(7, 3), (2000, 11)])
def test_bootstrap_interval_is_the_95_percent_percentile_interval_of_resampled_means(resamples, seed):
    # Independent of the code: the resampled means drawn with numpy, sorted, and the 2.5th and
    # 97.5th percentiles interpolated by hand (position p * (N - 1), linear between neighbours).
    # With N = 7 the positions are 0.15 and 5.85: a 90% interval (0.3, 5.7) or another
    # percentile method reads other numbers.
    a = {q: 0.5 for q in DIFFS}
    b = {q: 0.5 + d for q, d in DIFFS.items()}
    diffs = np.array([b[q] - a[q] for q in sorted(DIFFS)])
    idx = np.random.default_rng(seed).integers(0, len(diffs), size=(resamples, len(diffs)))
    means = sorted(float(sum(diffs[i] for i in row)) / len(row) for row in idx)

    def percentile(p):
        pos = p * (resamples - 1)
        k = math.floor(pos)
        return means[k] + (pos - k) * (means[min(k + 1, resamples - 1)] - means[k])

    p = compare_paired("map", a, b, 1, bootstrap=resamples, seed=seed)
    assert (p.lo, p.hi) == pytest.approx((percentile(0.025), percentile(0.975)), abs=1e-12)


def test_minimum_detectable_effect_is_the_paired_t_formula_at_95_percent_and_80_percent_power():
    # diffs 0.1, 0.3, 0.2, 0.4, 0.0: mean 0.2, sd sqrt(0.1 / 4) = 0.158114; from printed t tables
    # t(0.975, 4) = 2.7764 and t(0.80, 4) = 0.9410, so (2.7764 + 0.9410) * 0.158114 / sqrt(5).
    mde = min_detectable_effect(np.array([0.1, 0.3, 0.2, 0.4, 0.0]))
    assert mde == pytest.approx((2.7764 + 0.9410) * math.sqrt(0.025) / math.sqrt(5), rel=1e-4)
    assert mde == pytest.approx(0.26286, abs=1e-5)
    a = {q: 0.5 for q in DIFFS}
    assert compare_paired("map", a, {q: 0.5 + d for q, d in DIFFS.items()}, 1).mde == pytest.approx(
        (2.4469 + 0.9057) * float(np.std(list(DIFFS.values()), ddof=1)) / math.sqrt(7), rel=1e-4
    )


def test_minimum_detectable_effect_shrinks_with_more_queries():
    rng = np.random.default_rng(0)
    small = min_detectable_effect(rng.normal(0, 0.2, 10))
    large = min_detectable_effect(rng.normal(0, 0.2, 400))
    assert small > large > 0


@pytest.mark.parametrize(
    "lo, hi, direction, expected",
    [
        (0.01, 0.2, 1, "better"),
        (-0.2, -0.01, 1, "worse"),
        (-0.1, 0.1, 1, "indistinguishable"),
        (0.0, 0.2, 1, "indistinguishable"),
        (0.01, 0.2, -1, "worse"),
        (-0.2, -0.01, -1, "better"),
    ],
)
def test_verdict_reads_only_the_interval(lo, hi, direction, expected):
    assert verdict(lo, hi, direction) == expected
