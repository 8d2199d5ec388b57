"""The active audit (contract 12.1, 12.2): the judge's uncertainty, the inclusion probabilities, the Poisson draw,
what is stored, and the estimates that weigh by it.

The world is pool_rankers.py's (golden queries Q1 and Q2, rankers FIRST and SECOND at depth 5); the
uncertainties below are worked out by hand from its table and the labels each test adds.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "bench"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from label_lines import label_line, write_and_ingest  # noqa: E402
from pool_rankers import DAY, FIRST, Q1, Q2, SECOND, World  # noqa: E402

from goldenset import warehouse  # noqa: E402
from goldenset.bench.estimate import estimate_labels, estimate_rows, query_values  # noqa: E402
from goldenset.bench.metrics import get_metric  # noqa: E402
from goldenset.build import build_golden_set  # noqa: E402
from goldenset.cli.pool import app as pool_app  # noqa: E402
from goldenset.errors import UsageError  # noqa: E402
from goldenset.labelling.active_audit import JudgeRates, draw_active, inclusion_probabilities  # noqa: E402
from goldenset.labelling.audit import check_active, check_audit, latest_audit  # noqa: E402
from goldenset.labelling.pool import PoolReport, run_pool  # noqa: E402

POOLED_AT = datetime(2026, 11, 30, 8, 0, 0)
runner = CliRunner()

# --------------------------------------------------------------------------- the probabilities and the draw


@pytest.mark.parametrize(
    ("u", "n", "expected"),
    [
        # n (1/2 1/N + 1/2 u / sum u): 1/6 + (0, 1/8, 3/8).
        ([0.0, 1.0, 3.0], 1, [1 / 6, 1 / 6 + 1 / 8, 1 / 6 + 3 / 8]),
        # 2 (1/8 + 1/2 (0, 0, 1/4, 3/4)): the last exactly 1, at the cap, kept.
        ([0.0, 0.0, 1.0, 3.0], 2, [0.25, 0.25, 0.5, 1.0]),
        # 2 (1/8 + 1/2 (0, 0, 0, 1)) = (1/4, 1/4, 1/4, 5/4): the last capped at 1, its 1/4 shared: 1/3 each.
        ([0.0, 0.0, 0.0, 1.0], 2, [1 / 3, 1 / 3, 1 / 3, 1.0]),
        ([0.0, 0.0, 0.0], 2, [2 / 3, 2 / 3, 2 / 3]),  # no uncertainty anywhere: uniform
        ([0.5, 0.25, 0.0], 3, [1.0, 1.0, 1.0]),  # n = N: a census
        ([0.5, 0.25, 0.0], 4, [1.0, 1.0, 1.0]),  # n > N: a census
    ],
)
def test_inclusion_probabilities_are_the_defensive_mixture_capped_at_1(u, n, expected):
    pi = inclusion_probabilities(np.array(u), n)
    assert pi.tolist() == pytest.approx(expected, abs=1e-15)
    assert float(pi.sum()) == pytest.approx(min(n, len(u)), abs=1e-12)


@pytest.mark.parametrize(("requested", "expected"), [(58, 58), (59, 59), (60, 59), (70, 59)])
def test_the_printed_expected_size_is_n_capped_at_the_population(requested, expected):
    # With N >= N_pop every probability is 1: they sum to N_pop, the expected size, whatever N was asked.
    audit = {"design": "active", "judge": "jj", "requested": requested, "population": 59, "sample_size": expected}
    report = PoolReport(
        1, ("a",), 5, 59, {"a": 0}, {"a": 0}, (), 0, 0, 0, 0, 0, 0, {"audit": 0}, audit=audit | {"seed": 0, "pairs": 0}
    )
    assert (
        f"audit: {expected} of 59 golden queries drawn actively by judge jj's uncertainty, {expected} expected (seed 0), 0 pairs asked"
        in report.lines()
    )


def test_a_cap_that_pushes_another_query_over_1_caps_that_one_too():
    # 3 (1/10 + 1/2 u / 10) = (0.3, 0.3, 0.3, 0.75, 1.35): the last capped, the other four share the 2 left in
    # proportion (times 2 / 1.65), which leaves the fourth at 0.909, below 1.
    pi = inclusion_probabilities(np.array([0.0, 0.0, 0.0, 3.0, 7.0]), 3)
    assert pi[4] == 1.0 and float(pi.sum()) == pytest.approx(3.0, abs=1e-12)
    assert pi[:4].tolist() == pytest.approx([0.3 * 2 / 1.65] * 3 + [0.75 * 2 / 1.65], abs=1e-12)
    # 3 (1/8 + 1/2 u / 4) = (0.375, 0.375, 0.825, 1.425): capping the last lifts the third to 0.825 * 2 / 1.575 =
    # 1.048, which is capped in turn; the two left share 1: 1/2 each.
    pi = inclusion_probabilities(np.array([0.0, 0.0, 1.2, 2.8]), 3)
    assert pi.tolist() == pytest.approx([0.5, 0.5, 1.0, 1.0], abs=1e-12) and (pi[2], pi[3]) == (1.0, 1.0)


def test_the_draw_is_the_documented_poisson_sample_over_sorted_ids():
    ids = [f"{i:016x}" for i in (9, 3, 7, 1, 5)]
    u = dict(zip(ids, (0.5, 0.0, 2.0, 1.0, 0.25), strict=True))
    got = draw_active(ids, 2, seed=11, u=u)
    population = sorted(ids)
    pi = inclusion_probabilities(np.array([u[q] for q in population]), 2)
    numbers = np.random.default_rng(11).random(5)
    assert got.population == tuple(population) and got.inclusion == tuple(pi)
    assert got.drawn == tuple(q for q, x, p in zip(population, numbers, pi, strict=True) if x < p)
    assert draw_active(list(reversed(ids)), 2, 11, u) == got


def test_each_query_is_drawn_with_its_probability_and_the_sample_size_is_n_on_average():
    ids = [f"{i:016x}" for i in range(6)]
    u = dict(zip(ids, (0.0, 0.5, 1.0, 1.5, 2.0, 5.0), strict=True))
    pi = inclusion_probabilities(np.array([u[q] for q in ids]), 2)
    draws = [draw_active(ids, 2, seed, u).drawn for seed in range(4000)]
    seen = Counter(q for d in draws for q in d)
    for q, p in zip(ids, pi, strict=True):
        assert stats.binomtest(seen[q], 4000, p).pvalue > 0.001, (q, seen[q], p)
    assert np.mean([len(d) for d in draws]) == pytest.approx(2.0, abs=0.1)


@pytest.mark.parametrize(("shared", "grade", "rate"), [({}, 1, 0.5), ({1: (1, 0)}, 1, 0.25), ({0: (3, 1)}, 0, 0.375)])
def test_the_judge_s_rate_per_grade_is_jeffreys_estimate(shared, grade, rate):
    assert JudgeRates("jj", shared).rate(grade) == rate
    assert JudgeRates("jj", shared).rate(None) == 0.5  # a pair the judge has not labelled


@pytest.mark.parametrize(
    ("active", "judge", "audit", "message"),
    [
        (True, None, 2, "--active needs --judge NAME"),
        (False, "jj", 2, "--judge only applies to an active audit"),
        (True, "jj", None, "--active draws an audit: add --audit N"),
    ],
)
def test_half_an_active_audit_is_a_usage_error(active, judge, audit, message):
    with pytest.raises(UsageError, match=message):
        check_audit(audit, 0, check_active(active, judge))


# --------------------------------------------------------------------------- the pool


@pytest.fixture
def world(tmp_path, pool_worlds) -> World:
    return pool_worlds(tmp_path / "w")


def judged_world(world: World) -> World:
    """Ben calls (Q2, k) irrelevant; judge jj calls it partial, (Q1, a) partial and (Q1, g) irrelevant."""
    con = warehouse.connect(world.db)
    try:
        lines = [
            label_line(Q2, "k", "v1", 0, "ben", "2026-11-29T09:00:00Z"),
            label_line(Q2, "k", "v1", 1, "jj", "2026-11-29T09:00:01Z", kind="judge"),
            label_line(Q1, "a", "v1", 1, "jj", "2026-11-29T09:00:02Z", kind="judge"),
            label_line(Q1, "g", "v1", 0, "jj", "2026-11-29T09:00:03Z", kind="judge"),
        ]
        write_and_ingest(con, world.db.parent / "labels", DAY, "labels.jsonl", lines)
        build_golden_set(con, now=datetime(2026, 11, 29, 12, 0, 0))
    finally:
        con.close()
    return world


def pool(world: World, **kw):
    con = warehouse.connect(world.db)
    try:
        return run_pool(con, rankers=(FIRST, SECOND), depth=5, index_dir=world.index_dir, now=POOLED_AT, **kw)
    finally:
        con.close()


def test_an_active_audit_draws_by_the_judge_s_uncertainty_and_stores_its_design(world):
    # Rates: (Q2, k) is shared, jj grade 1 against ben's 0: r_1 = (0 + 1/2) / (1 + 1) = 1/4, r(1 - r) = 3/16;
    # grade 0 has no shared pair (r 1/2), nor has an unlabelled pair: 1/4. Q1 returns a g h c2 b m j d2: a is
    # jj's grade 1, the seven others 1/4: u^2 = 3/16 + 7/4 = 31/16. Q2 returns k i f2 n e2: k holds ben's
    # label at its current version (0), the four others 1/4: u^2 = 1.
    judged_world(world)
    result = pool(world, audit=1, seed=5, active_judge="jj")
    u1, u2 = math.sqrt(31 / 16), 1.0
    pi = [0.25 + 0.5 * u1 / (u1 + u2), 0.25 + 0.5 * u2 / (u1 + u2)]
    numbers = np.random.default_rng(5).random(2)
    population = sorted([Q1, Q2])
    chance = dict(zip([Q1, Q2], pi, strict=True))
    drawn = [q for q, x in zip(population, numbers, strict=True) if x < chance[q]]
    con = warehouse.connect(world.db, read_only=True)
    try:
        sample = con.execute(
            "SELECT design, judge, uniform_share, population, requested, sample_size, seed FROM audit_samples"
        ).fetchall()
        rows = con.execute(
            "SELECT query_id, uncertainty, inclusion, drawn FROM audit_population ORDER BY query_id"
        ).fetchall()
        queries = con.execute("SELECT query_id, draw, inclusion FROM audit_queries ORDER BY draw").fetchall()
        audit = latest_audit(con)
    finally:
        con.close()
    assert sample == [("active", "jj", 0.5, 2, 1, len(drawn), 5)]
    expected_u = {Q1: u1, Q2: u2}
    assert [(q, pytest.approx(u), pytest.approx(p), d) for q, u, p, d in rows] == [
        (q, expected_u[q], chance[q], q in drawn) for q in population
    ]
    assert [(q, i) for q, i, _ in queries] == [(q, i) for i, q in enumerate(drawn, start=1)]
    assert [p for *_, p in queries] == pytest.approx([chance[q] for q in drawn])
    assert audit.active and audit.inclusion() == pytest.approx({q: chance[q] for q in drawn})
    report = result.report.to_json()["audit"]
    assert (report["design"], report["judge"], report["requested"]) == ("active", "jj", 1)
    assert "actively by judge jj's uncertainty, 1 expected" in "\n".join(result.report.lines())


def test_an_active_audit_needs_a_judge_with_labels(world):
    with pytest.raises(UsageError, match="judge 'nobody' has no label to draw an active audit from"):
        pool(world, audit=1, active_judge="nobody")


def test_the_pool_command_refuses_half_an_active_audit(world):
    result = runner.invoke(pool_app, ["--db", str(world.db), "--audit", "1", "--active"])
    assert isinstance(result.exception, UsageError) and "--active needs --judge NAME" in str(result.exception)


@pytest.mark.slow
def test_estimates_of_an_active_audit_weigh_each_audited_query_by_its_chance(world):
    judged_world(world)
    pool(world, audit=2, seed=0, active_judge="jj")  # n = N: every query drawn, with chance 1
    con = warehouse.connect(world.db)
    try:
        asked = con.execute("SELECT query_id, doc_id, doc_version FROM audit_pairs ORDER BY ALL").fetchall()
        lines = [label_line(q, d, v, 1, "ben", f"2026-11-30T09:00:{i:02d}Z") for i, (q, d, v) in enumerate(asked)]
        write_and_ingest(con, world.db.parent / "labels", DAY, "audit.jsonl", lines)
        build_golden_set(con, now=datetime(2026, 11, 30, 12, 0, 0))
        labels = estimate_labels(con, "jj")
    finally:
        con.close()
    assert labels.audit.active and set(labels.audit.audited) == {Q1, Q2}
    ranked = {"core": {Q1: ["a", "g"], Q2: ["k", "i"]}}
    (v,) = query_values(ranked, {"core": [Q1, Q2]}, labels, [get_metric("precision@2")])
    assert v.inclusion == {Q1: 1.0, Q2: 1.0}
    (e,) = estimate_rows([v])
    assert e.estimate is not None and e.estimate.sampling == "active"
    # A census weighs nothing: the estimate is the truth's mean, with no width.
    assert (e.estimate.estimate, e.estimate.lo, e.estimate.hi) == pytest.approx((np.mean(list(v.truth.values())),) * 3)
