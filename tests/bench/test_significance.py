"""The tests and corrections of `bench compare` with many runs, held to scipy, statsmodels and numpy.

Oracles: scipy's `ttest_rel` for the t test, statsmodels' `multipletests` for Holm and
Bonferroni, and for the randomization test two independent ones: the exact p-value over all
2^n sign patterns of a small sample, and a plain loop over permutations written here with
numpy's `choice`. The randomization p-value is random; it must land within its Monte Carlo
error (four standard errors) of theirs.
"""

from __future__ import annotations

import itertools
import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ttest_rel
from statsmodels.stats.multitest import multipletests

from goldenset.bench import significance as sig
from goldenset.errors import UsageError
from tests.helpers import examples

values = st.lists(st.sampled_from([0.0, 0.1, 0.2, 0.25, 1 / 3, 0.5, 0.75, 1.0]), min_size=2, max_size=40)


@settings(max_examples=examples(80), deadline=None)
@given(a=values, data=st.data())
def test_the_t_test_p_value_equals_scipys_ttest_rel(a, data):
    b = data.draw(st.lists(st.sampled_from([0.0, 0.2, 0.5, 2 / 3, 1.0]), min_size=len(a), max_size=len(a)))
    d = np.array(b) - np.array(a)
    expected = ttest_rel(b, a).pvalue
    if np.isnan(expected):  # every difference equal: scipy has no answer, contract 16.2 decides
        assert sig.t_test(d)[0] == (1.0 if d[0] == 0 else 0.0)
    else:
        assert sig.t_test(d)[0] == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_the_t_test_takes_one_comparison_per_column():
    rng = np.random.default_rng(3)
    a, b = rng.random((50, 6)), rng.random((50, 6))
    assert sig.t_test(b - a) == pytest.approx(ttest_rel(b, a).pvalue, rel=1e-12)


@pytest.mark.parametrize(
    ("diffs", "p"),
    [([0.25], 1.0), ([], 1.0), ([0.0, 0.0, 0.0], 1.0), ([0.25, 0.25, 0.25], 0.0), ([-0.5, -0.5], 0.0)],
)
def test_the_t_test_decides_where_scipy_says_nan(diffs, p):
    assert sig.t_test(np.array(diffs, dtype=float))[0] == p


pvalues = st.lists(
    st.sampled_from([0.0, 0.001, 0.01, 0.0125, 0.02, 0.025, 0.03, 0.04, 0.05, 0.2, 0.5, 0.9, 1.0])
    | st.floats(0.0, 1.0),
    min_size=1,
    max_size=30,
)


def statsmodels(p, method):
    # statsmodels' Holm calls gc.collect() every time (0.16 s in a test process); skipping it
    # changes no number, only the time the oracle takes.
    with mock.patch("gc.collect", lambda *args: 0):
        return multipletests(p, alpha=0.05, method=method)[1]


@pytest.mark.parametrize("method", ["holm", "bonferroni"])
@pytest.mark.parametrize(
    "p",
    [
        [0.01, 0.04, 0.03],
        [0.0125, 0.025, 0.025, 0.5, 0.0],
        [0.9, 0.01, 0.011, 0.012, 0.2, 0.04, 0.049, 0.05, 1.0, 0.001],
        [0.5],
    ],
)
def test_corrected_p_values_equal_statsmodels_multipletests(method, p):
    assert sig.adjust(p, method) == pytest.approx(statsmodels(p, method), rel=1e-12, abs=0)


@settings(max_examples=examples(100), deadline=None)
@given(p=pvalues)
def test_holm_equals_statsmodels_on_random_families(p):
    assert sig.adjust(p, "holm") == pytest.approx(statsmodels(p, "holm"), rel=1e-12, abs=0)


@settings(max_examples=examples(150), deadline=None)
@given(p=pvalues)
def test_bonferroni_equals_statsmodels_on_random_families(p):
    assert sig.adjust(p, "bonferroni") == pytest.approx(statsmodels(p, "bonferroni"), rel=1e-12, abs=0)


def test_no_correction_leaves_the_p_values_as_they_are():
    assert list(sig.adjust([0.5, 0.01, 0.04], "none")) == [0.5, 0.01, 0.04]


def test_holm_stops_at_the_first_kept_hypothesis():
    # Sorted: 0.01 x 3 = 0.03 (rejected), 0.03 x 2 = 0.06 (kept), then 0.04 x 1 = 0.04 alone would be
    # rejected, but the step-down stops at the first kept one: its corrected p is max(0.06, 0.04).
    corrected = sig.adjust([0.01, 0.04, 0.03], "holm")
    assert corrected == pytest.approx([0.03, 0.06, 0.06])
    assert [sig.significant(p) for p in corrected] == [True, False, False]


def test_tied_p_values_get_the_same_holm_correction_whatever_their_order():
    assert list(sig.adjust([0.25, 0.25], "holm")) == [0.5, 0.5]
    assert list(sig.adjust([0.75, 0.25, 0.25], "holm")) == [0.75, 0.75, 0.75]


def test_corrections_never_exceed_one():
    assert list(sig.adjust([0.5, 0.75], "bonferroni")) == [1.0, 1.0]
    assert list(sig.adjust([0.5, 0.75], "holm")) == [1.0, 1.0]


def test_a_corrected_p_of_exactly_alpha_is_not_significant():
    below, above = np.nextafter(0.05, 0.0), np.nextafter(0.05, 1.0)
    assert [sig.significant(x) for x in (below, 0.05, above)] == [True, False, False]
    # 0.025 x 2 is 0.05 exactly in floating point: Bonferroni over two keeps it.
    assert [sig.significant(x) for x in sig.adjust([0.025, 0.5], "bonferroni")] == [False, False]
    assert [sig.significant(x) for x in sig.adjust([np.nextafter(0.025, 0.0), 0.5], "bonferroni")] == [True, False]


def test_an_unknown_test_correction_or_permutation_count_is_a_usage_error():
    with pytest.raises(UsageError, match="--test 'wilcoxon' is not one of t, randomization"):
        sig.check_test("wilcoxon")
    with pytest.raises(UsageError, match="--correction 'fdr' is not one of holm, bonferroni, none"):
        sig.check_correction("fdr")
    for bad in (0, -5, True):
        with pytest.raises(UsageError, match="--permutations must be a whole number >= 1"):
            sig.check_permutations(bad)


# --------------------------------------------------------------------------- randomization test


def exact_p(d: np.ndarray) -> float:
    """The exact two-sided sign-flip p-value over all 2^n patterns (the observed one included)."""
    s = abs(d.sum())
    sums = [abs(np.dot(signs, d)) for signs in itertools.product((-1.0, 1.0), repeat=len(d))]
    return sum(1 for x in sums if x >= s - 1e-12) / len(sums)


def loop_p(d: np.ndarray, b: int, seed: int) -> float:
    """An independent Monte Carlo implementation: one permutation at a time, numpy's choice."""
    rng = np.random.default_rng(seed)
    s = abs(d.mean())
    hits = sum(1 for _ in range(b) if abs((rng.choice([-1.0, 1.0], size=len(d)) * d).mean()) >= s - 1e-12)
    return (1 + hits) / (1 + b)


SAMPLES = {
    "clear": np.array([0.25, 0.5, 0.0, 0.25, 0.75, 0.5, 0.25, -0.25, 0.5, 0.25, 0.0, 0.5]),
    "weak": np.array([0.25, -0.5, 0.0, 0.25, 0.75, -0.5, 0.25, -0.25, 0.5, 0.25, 0.0, -0.25]),
    "null": np.array([0.25, -0.25, 0.5, -0.5, 0.75, -0.75, 0.0, 0.25, -0.25, 0.5, -0.5, 0.0]),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_randomization_p_value_is_the_exact_one_within_its_monte_carlo_error(name):
    d = SAMPLES[name]
    p, se = sig.randomization_test(d, permutations=4000, seed=11)
    exact = exact_p(d)
    # The estimate (1 + #)/(1 + B) is the exact p up to sampling, within 4 standard errors of it.
    assert abs(p[0] - exact) <= 4 * math.sqrt(exact * (1 - exact) / 4000) + 1 / 4001
    assert se[0] == pytest.approx(math.sqrt(p[0] * (1 - p[0]) / 4000))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_randomization_p_value_matches_an_independent_numpy_loop(name):
    d = SAMPLES[name]
    ours, se = sig.randomization_test(d, permutations=3000, seed=5)
    theirs = loop_p(d, 3000, seed=99)
    assert abs(ours[0] - theirs) <= 4 * math.sqrt(2) * max(se[0], 1 / 3000)


def test_the_default_ten_thousand_permutations_on_225_queries():
    rng = np.random.default_rng(2007)
    d = rng.normal(0.02, 0.2, size=(225, 3))
    p, se = sig.randomization_test(d)  # the default B and seed
    t = ttest_rel(d, np.zeros_like(d)).pvalue
    assert np.all(se <= 0.005)  # sqrt(0.25 / 10000)
    # On 225 queries the permutation and t p-values agree closely (Smucker et al. 2007).
    assert np.abs(p - t) == pytest.approx(np.zeros(3), abs=0.02)


def test_the_p_value_follows_its_definition_on_the_documented_sign_matrix():
    d = np.array([0.5, 0.25, -0.25, 0.75, 0.0, 0.5])
    b, seed = 2500, 7
    rng = np.random.default_rng(seed)
    # Blocks of 1,000 rows, the last shorter, each rng.integers(0, 2, size=(rows, n)); 1 -> +1, 0 -> -1.
    signs = np.vstack([rng.integers(0, 2, size=(rows, len(d))) for rows in (1000, 1000, 500)]) * 2.0 - 1.0
    hits = int(np.sum(np.abs(signs @ d) >= abs(d.sum()) * (1 - 1e-9)))
    p, se = sig.randomization_test(d, permutations=b, seed=seed)
    assert p[0] == (1 + hits) / (1 + b)
    assert se[0] == math.sqrt(p[0] * (1 - p[0]) / b)


def test_the_randomization_test_is_reproducible_by_its_seed_and_never_zero():
    d = np.full(20, 0.25)  # every flip but none and all lowers |S|: only 2 of 2^20 patterns reach it
    p1, _ = sig.randomization_test(d, permutations=500, seed=1)
    p2, _ = sig.randomization_test(d, permutations=500, seed=1)
    assert p1[0] == p2[0] == 1 / 501
    assert sig.randomization_test(np.zeros(5), permutations=100)[0][0] == 1.0  # nothing differs: p = 1


def test_a_sum_equal_to_the_observed_one_in_another_order_counts():
    # Every sign pattern of (x, x) gives |S*| = 2x or 0; the observed 2x added as x + x must count
    # for the patterns (+, +) and (-, -) however rounding falls.
    d = np.array([0.1, 0.2, 0.3])  # 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1 in floating point
    assert exact_p(d) == 0.25
    p, _ = sig.randomization_test(d, permutations=20000, seed=0)
    assert abs(p[0] - 0.25) < 4 * math.sqrt(0.25 * 0.75 / 20000)
