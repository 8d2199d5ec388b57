"""Significance across a family of paired comparisons: the tests, the corrections, the decision.

`bench compare` with more than two runs (contract 16) tests every comparison of one command
at once, so a 5% error per comparison would make a false verdict likely somewhere (ten
comparisons: about 40%). This module holds the arithmetic, vectorised over comparisons
(columns of an n x C matrix of per-query differences B - A):

- **Student's paired t test**, two-sided: t = mean(d) / sqrt(var(d, ddof=1) / n), p = 2 x
  sf_t(|t|, n - 1), as scipy's `ttest_rel`. Decided where scipy returns nan: below two pairs
  p = 1; all differences equal: p = 1 when they are 0, p = 0 otherwise (the paired interval
  is then that one value, so the two-run verdict is `better` or `worse`: the same decision).
- **Fisher's randomization test** (paired sign flips; Smucker, Allan and Carterette, CIKM
  2007): S = sum(d); B sign vectors e_b in {-1, +1}^n, drawn by numpy's
  `default_rng(seed).integers(0, 2, size=(block, n))` (1 -> +1, 0 -> -1) in blocks of
  BLOCK rows, the last block shorter; S*_b = sum(e_b x d). The p-value is
  (1 + #{b : |S*_b| >= |S| (1 - 1e-9)}) / (1 + B): the observed labelling counts as one of
  the permutations, so p is never 0 and the test is valid at any B; the 1e-9 keeps a
  permutation whose sum equals S, added up in another order, from being lost to rounding.
  Its Monte Carlo standard error is sqrt(p (1 - p) / B). One sign matrix serves every
  comparison of a command, so each comparison's p depends only on its differences, B and
  the seed.
- **Corrections** of m p-values: `none`; `bonferroni`, min(1, m p); `holm` (the default),
  step-down: sort ascending (ties kept in input order), p_(i) -> min(1, max_{j <= i} (m - j
  + 1) p_(j)). The running maximum is Holm's stopping rule: once one hypothesis is kept,
  every larger p is kept too. These equal statsmodels' `multipletests(..., method=...)`.
- **The decision**: significant when the corrected p is strictly below ALPHA (0.05). A
  corrected p of exactly 0.05 is not significant; that is the paired interval's rule too (a
  95% interval ending at 0 contains 0), so with `--correction none` and the t test the
  verdict equals the two-run command's. statsmodels' and ranx's `reject` use p <= alpha
  instead; they differ only at p exactly 0.05.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from goldenset.errors import UsageError

ALPHA = 0.05
TESTS = ("t", "randomization")
CORRECTIONS = ("holm", "bonferroni", "none")
DEFAULT_TEST = "t"
DEFAULT_CORRECTION = "holm"
DEFAULT_PERMUTATIONS = 10_000
# Sign vectors drawn per block: bounds the memory of a block to BLOCK x n values whatever B is.
BLOCK = 1_000
TIE_TOLERANCE = 1e-9


def _columns(diffs: np.ndarray | Sequence[float]) -> np.ndarray:
    d = np.asarray(diffs, dtype=float)
    return d[:, None] if d.ndim == 1 else d


def t_test(diffs: np.ndarray | Sequence[float]) -> np.ndarray:
    """Two-sided paired t test p-value of each column of an n x C matrix of differences (or of one vector)."""
    from scipy import stats

    d = _columns(diffs)
    n, c = d.shape
    p = np.ones(c)
    if n < 2:
        return p
    mean = d.mean(axis=0)
    var = d.var(axis=0, ddof=1)
    constant = var == 0.0
    p[constant & (mean != 0.0)] = 0.0
    ok = ~constant
    t = mean[ok] / np.sqrt(var[ok] / n)
    p[ok] = 2.0 * stats.t.sf(np.abs(t), n - 1)
    return p


def check_permutations(permutations: int) -> int:
    """The number of sign vectors, checked: a whole number >= 1."""
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations < 1:
        raise UsageError(f"--permutations must be a whole number >= 1, got {permutations!r}; the default is 10000")
    return permutations


def randomization_test(
    diffs: np.ndarray | Sequence[float], permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Fisher's paired randomization test of each column: (p-values, their Monte Carlo standard errors)."""
    b = check_permutations(permutations)
    d = _columns(diffs)
    n, c = d.shape
    observed = np.abs(d.sum(axis=0)) * (1.0 - TIE_TOLERANCE)
    count = np.zeros(c, dtype=np.int64)
    rng = np.random.default_rng(seed)
    done = 0
    while done < b:
        rows = min(BLOCK, b - done)
        signs = rng.integers(0, 2, size=(rows, n)).astype(float) * 2.0 - 1.0
        count += (np.abs(signs @ d) >= observed).sum(axis=0)
        done += rows
    p = (1.0 + count) / (1.0 + b)
    return p, np.sqrt(p * (1.0 - p) / b)


def adjust(pvalues: Sequence[float] | np.ndarray, correction: str = DEFAULT_CORRECTION) -> np.ndarray:
    """The corrected p-values of one family (module docstring), in the order given."""
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    if correction == "none" or m == 0:
        return p.copy()
    if correction == "bonferroni":
        return np.minimum(1.0, m * p)
    if correction == "holm":
        order = np.argsort(p, kind="stable")
        stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
        out = np.empty(m)
        out[order] = np.minimum(1.0, stepped)
        return out
    raise UsageError(f"--correction {correction!r} is not one of {', '.join(CORRECTIONS)}")


def significant(p_corrected: float, alpha: float = ALPHA) -> bool:
    """Whether a corrected p-value rejects: strictly below alpha (0.05 itself does not)."""
    return not math.isnan(p_corrected) and p_corrected < alpha


def check_test(test: str) -> str:
    if test not in TESTS:
        raise UsageError(f"--test {test!r} is not one of {', '.join(TESTS)}; t is Student's paired t test")
    return test


def check_correction(correction: str) -> str:
    if correction not in CORRECTIONS:
        raise UsageError(f"--correction {correction!r} is not one of {', '.join(CORRECTIONS)}; holm is the default")
    return correction
