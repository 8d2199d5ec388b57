"""The active audit: golden queries drawn with probabilities that follow the judge's uncertainty.

Zrnic and Candes (Active Statistical Inference, ICML 2024): where the judge is unsure,
its prediction is more likely wrong, so people label there more often, and inverse-
probability weights (goldenset.bench.ppi) keep the estimate unbiased. `goldenset pool
--audit N --active --judge NAME` draws such a sample instead of the uniform one of
goldenset.labelling.audit; everything else (the pairs asked, the precedence, "audited")
is the uniform audit's.

Decisions
---------
- **The judge's uncertainty on a pair** is the variance r(1 - r) of a coin that is
  relevant with probability r, the chance that people call the pair relevant given what
  the judge said: r = (h_g + 1/2) / (m_g + 1) for the judge's current grade g on the pair,
  where m_g counts the pairs on which the judge's current grade is g and the golden set
  holds a human row (any version), h_g those of them with a human grade >= 1 (Jeffreys'
  estimate: 1/2 with no such pair). A pair the judge has not labelled gets r = 1/2 (the
  most uncertain); a pair a human row holds at the document's current version gets 0 (the
  audit does not ask it; its truth is known). The judge gives a grade per pair and nothing
  more (contract 8.3), so this is all it says about its own errors.
- **A query's uncertainty** u(q) = sqrt(sum of its pairs' r(1 - r)) over the pairs the
  pool returned for it: the standard deviation of the number of relevant documents among
  them, under those rates. Metric-agnostic: the audit serves every metric and every run.
- **Inclusion probabilities** pi(q) = n (s/N + (1 - s) u(q) / sum u), s = 1/2, the uniform
  share (a defensive mixture, Hesterberg 1995: every query keeps at least half its uniform
  chance, so a misleading uncertainty can at most double the variance of each term);
  uniform n/N when every u is 0. Probabilities above 1 are set to 1 and the excess is
  shared among the others in proportion to their probabilities, until none is above 1, so
  they sum to n exactly: the **expected** sample size. n >= N draws every query.
- **The draw** is Poisson sampling: `numpy.random.default_rng(seed).random(N)`, one number
  per query of the population in code-point order; a query is drawn when its number is
  below its probability. The sample's size is random, its expectation n. Every query's
  uncertainty and probability are stored (`audit_population`), so the draw can be repeated
  and checked from the warehouse and the seed alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from goldenset.connection import Connection
from goldenset.errors import UsageError

UNIFORM_SHARE = 0.5
UNLABELLED_RATE = 0.5

Pair = tuple[str, str]


@dataclass(frozen=True)
class JudgeRates:
    """Per grade of the judge: pairs shared with people (m) and those people called relevant (h)."""

    judge: str
    shared: dict[int, tuple[int, int]]  # grade -> (m, h)

    def rate(self, grade: int | None) -> float:
        """r: the chance people call a pair relevant given the judge's grade (Jeffreys), 1/2 unlabelled."""
        if grade is None:
            return UNLABELLED_RATE
        m, h = self.shared.get(grade, (0, 0))
        return (h + 0.5) / (m + 1.0)


def judge_rates(con: Connection, judge: str) -> tuple[JudgeRates, dict[Pair, int]]:
    """The judge's rates per grade and its current grade per pair; UsageError when it has no label."""
    grades = {
        (q, d): int(g)
        for q, d, g in con.execute(
            "SELECT query_id, doc_id, grade FROM current_labels WHERE kind = 'judge' AND annotator = ?", [judge]
        ).fetchall()
        if g is not None
    }
    if not grades:
        raise UsageError(
            f"judge {judge!r} has no label to draw an active audit from: run `goldenset judge label "
            f"--annotator {judge}` over the queue and `goldenset build`, or draw a uniform audit (no --active)"
        )
    human = con.execute("SELECT query_id, doc_id, max(grade) FROM golden_set WHERE source = 'human' GROUP BY ALL")
    shared: dict[int, tuple[int, int]] = {}
    for q, d, g in human.fetchall():
        grade = grades.get((q, d))
        if grade is None:
            continue
        m, h = shared.get(grade, (0, 0))
        shared[grade] = (m + 1, h + (g is not None and int(g) >= 1))
    return JudgeRates(judge, dict(sorted(shared.items()))), grades


def uncertainty(
    queries: Iterable[str],
    returned: Iterable[Pair],
    versions: Mapping[str, str],
    human: set[tuple[str, str, str]],
    rates: JudgeRates,
    grades: Mapping[Pair, int],
) -> dict[str, float]:
    """u(q) per query (module): sqrt of the sum of r(1 - r) over the pairs the pool returned for q."""
    total = dict.fromkeys(queries, 0.0)
    for qid, doc_id in returned:
        if qid not in total or (qid, doc_id, versions[doc_id]) in human:
            continue
        r = rates.rate(grades.get((qid, doc_id)))
        total[qid] += r * (1.0 - r)
    return {q: float(np.sqrt(v)) for q, v in total.items()}


def inclusion_probabilities(u: np.ndarray, n: int, share: float = UNIFORM_SHARE) -> np.ndarray:
    """pi per query (module): the defensive mixture, capped at 1, summing to min(n, N)."""
    big_n = len(u)
    if n >= big_n:
        return np.ones(big_n)
    total = float(u.sum())
    pi = n * (share / big_n + (1.0 - share) * u / total) if total > 0 else np.full(big_n, n / big_n)
    capped = np.zeros(big_n, dtype=bool)
    for _ in range(big_n):
        over = ~capped & (pi > 1.0)
        if not over.any():
            break
        capped |= over
        pi[capped] = 1.0
        free = ~capped
        # The capped queries' excess goes to the others, in proportion to what they have.
        pi[free] *= (n - int(capped.sum())) / float(pi[free].sum())
    return pi


@dataclass(frozen=True)
class ActiveDraw:
    """Every query of the population with its uncertainty and probability, and those drawn."""

    population: tuple[str, ...]  # code-point order
    uncertainty: tuple[float, ...]
    inclusion: tuple[float, ...]
    drawn: tuple[str, ...]  # population order


def draw_active(query_ids: Iterable[str], n: int, seed: int, u: Mapping[str, float]) -> ActiveDraw:
    """Poisson sampling with the inclusion probabilities of `u` (module's decisions)."""
    population = tuple(sorted(set(query_ids)))
    unc = np.array([u.get(q, 0.0) for q in population], dtype=float)
    pi = inclusion_probabilities(unc, n)
    numbers = np.random.default_rng(seed).random(len(population))
    drawn = tuple(q for q, x, p in zip(population, numbers, pi, strict=True) if x < p)
    return ActiveDraw(population, tuple(map(float, unc)), tuple(map(float, pi)), drawn)
