"""The judge's gate weighs an active audit's queries by the design that drew them (contract 13.2).

The end-to-end world is world.py's three golden queries. Before any audit, ana labels every
pooled pair of Q1 and Q2 (so neither has a pair left to ask: their uncertainty u is 0) and the
judge (lines of kind judge) labels all fifteen, as test_gate_audit.py's table has it:

    query  ana                                     judge
    Q1     r1 d1 d2 relevant, d3 d4 irrelevant     the same
    Q2     a1 d5 relevant, d6 partial, d7 d8 irr   d6 irrelevant, the rest the same
    Q3     r3 d9 p1 p3 relevant, p2 partial        r3 relevant, d9 p1 p2 p3 irrelevant

`pool --audit 1 --seed 11` draws Q3 uniformly; then `pool --audit 1 --active --judge qwen
--seed 0` draws with pi = 1 x (1/2 x 1/3 + 1/2 x u(q) / U): 1/6 for Q1 and Q2 (u = 0) and
1/6 + 1/2 = 2/3 for Q3 (all of U), and its numbers take Q1 and Q3. ana then labels Q3's pairs.
The active audit's mean chance is n/N = 1/3, so its weights are (1/3)/(1/6) = 2 for Q1 and
(1/3)/(2/3) = 1/2 for Q3 (exact in doubles too: each is a power of two times the other).
"""

from __future__ import annotations

import contextlib
import io
import json
from fractions import Fraction as F

import pytest
from hypothesis import given
from hypothesis import strategies as st
from world import AUDIT_ANA, AUDIT_JUDGE, Q1, Q3, append_labels, label_line, rebuild

from goldenset.cli.app import main
from goldenset.errors import GoldensetError
from goldenset.labelling.judge_gate import JudgeGate, query_weights
from goldenset.warehouse import connect
from tests.helpers import db_rows

ANA, JUDGE = AUDIT_ANA, AUDIT_JUDGE

# --------------------------------------------------------------------------- the weights


def test_an_active_audits_weights_are_its_mean_chance_over_each_querys_chance():
    # An active audit of expected size 1 over 4 queries (mean chance 1/4) drew A with pi 1/2 and B with pi 1/4.
    draws = [("A", "active", 1, 4, 0.5, 7), ("B", "active", 1, 4, 0.25, 7)]
    assert query_weights(draws) == {"A": F(1, 2), "B": F(1)}


def test_a_uniform_audit_adds_one_to_the_queries_it_drew_however_many_drew_them():
    draws = [
        ("A", "active", 1, 4, 0.5, 7),
        ("B", "active", 1, 4, 0.25, 7),
        ("B", "uniform", 2, 4, 0.5, 3),
        ("B", "uniform", 1, 4, 0.25, 5),  # a second uniform audit drew B too: still 1, each pair once
        ("C", "uniform", 1, 4, 0.25, 5),
    ]
    assert query_weights(draws) == {"A": F(1, 2), "B": F(2), "C": F(1)}


def test_two_active_audits_that_drew_a_query_add_their_terms():
    # Audit 7: mean chance 2/5, pi 4/5 -> 1/2. Audit 9 (asked for more than the population: a census) -> 1.
    draws = [("A", "active", 2, 5, 0.8, 7), ("A", "active", 9, 5, 1.0, 9)]
    assert query_weights(draws) == {"A": F(0.4 / 0.8) + 1}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q3", "q4"]),
            st.integers(1, 9),
            st.integers(1, 9),
            st.integers(1, 5),
        ),
        max_size=12,
    )
)
def test_uniform_audits_alone_weigh_every_query_1(draws):
    rows = [(q, "uniform", n, big_n, min(n, big_n) / big_n, pool) for q, n, big_n, pool in draws]
    assert set(query_weights(rows).values()) <= {1}
    assert sorted(query_weights(rows)) == sorted({q for q, *_ in draws})


@pytest.mark.parametrize("inclusion", [0.0, None, 1.5])
def test_a_drawn_query_without_a_chance_in_0_1_is_refused_by_name(inclusion):
    with pytest.raises(GoldensetError, match=f"audit of pool 4 drew query 'A' with inclusion probability {inclusion}"):
        query_weights([("A", "active", 1, 4, inclusion, 4)])


# --------------------------------------------------------------------------- a build on an active audit


def pool(world, *args: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["pool", "--rankers", "fixed_rankers:ranker", *world.args(), *args, "--json"]) == 0
    return json.loads(out.getvalue())


def gate_figures(world) -> dict:
    con = connect(world.db, read_only=True)
    try:
        cur = con.execute(
            "SELECT sample, audits, n, queries, kappa, kappa_lo, kappa_hi, po, pe, prevalence, ac1 FROM build_judges "
            "WHERE build_id = (SELECT labels_build_id FROM golden_builds ORDER BY build_id DESC LIMIT 1)"
        )
        names = [d[0] for d in cur.description]
        (row,) = cur.fetchall()
    finally:
        con.close()
    return dict(zip(names, row, strict=True))


def exactly(*figures: F) -> tuple[float, ...]:
    return tuple(float(f) for f in figures)


@pytest.fixture
def drawn(tmp_path, worlds):
    """Both audits drawn (uniform: Q3; active: Q1 and Q3), ana's labels on every pair, the judge's on all."""
    before = [label_line(q, d, lab, "2026-11-30T09:00:00Z") for (q, d), lab in ANA.items() if q != Q3]
    judge = [
        label_line(q, d, lab, "2026-11-30T10:00:00Z", annotator="qwen", kind="judge") for (q, d), lab in JUDGE.items()
    ]
    world = worlds(tmp_path / "w", before + judge)
    assert pool(world, "--audit", "1", "--seed", "11")["audit"]["sample_size"] == 1
    assert pool(world, "--audit", "1", "--seed", "0", "--active", "--judge", "qwen")["audit"]["sample_size"] == 2
    append_labels(
        world.labels, [label_line(q, d, lab, "2026-11-30T11:00:00Z") for (q, d), lab in ANA.items() if q == Q3]
    )
    return world


@pytest.mark.slow  # two pools and two builds of its own world, about 3 CPU s
def test_the_gate_weighs_an_active_audits_queries_by_the_inverse_of_their_chance(drawn):
    chances = db_rows(
        drawn.db,
        "SELECT s.design, q.query_id, q.inclusion FROM audit_queries q JOIN audit_samples s USING (pool_id) "
        "ORDER BY q.pool_id, q.query_id",
    )
    assert sorted(chances) == sorted([("uniform", Q3, 1 / 3), ("active", Q1, 1 / 6), ("active", Q3, 2 / 3)])

    # The active audit alone (--judge-audits 1): Q1 weighs 2, Q3 1/2, as 4 to 1. Summed weights (judge/human):
    # rel/rel 3 x 4 + 1 = 13, irr/irr 2 x 4 = 8, irr/rel 3, irr/part 1; total 25. po = 21/25; the judge's totals
    # rel 13, irr 12; the human's rel 16, irr 8, part 1; pe = (13 x 16 + 12 x 8)/625 = 304/625; kappa =
    # (525 - 304)/(625 - 304) = 221/321. Relevant share (16 + 1)/25. AC1: pi = 29/50, 20/50, 1/50 (Q = 3),
    # pe1 = (29 x 21 + 20 x 30 + 1 x 49)/2500/2 = 629/2500, AC1 = (2100 - 629)/(2500 - 629) = 1471/1871.
    # The interval: Q1 alone has kappa 1, Q3 alone (po 1/5, pe 4/25) 1/21, so [1/21, 1] at any weights.
    # Unweighted, the ten pairs would give kappa 1/3 and a relevant share 8/10.
    rebuild(drawn, judge_gate=JudgeGate(min_pairs=10, audits=1))
    row = gate_figures(drawn)
    assert (row["sample"], row["audits"], row["n"], row["queries"]) == ("audit", 1, 10, 2)
    assert (row["kappa"], row["po"], row["pe"], row["prevalence"], row["ac1"]) == exactly(
        F(221, 321), F(21, 25), F(304, 625), F(17, 25), F(1471, 1871)
    )
    assert (row["kappa_lo"], row["kappa_hi"]) == exactly(F(1, 21), F(1))

    # Every audit (the default): the uniform audit adds 1 to Q3, which weighs 1 + 1/2 = 3/2 against Q1's 2
    # (4 to 3). rel/rel 12 + 3 = 15, irr/irr 8, irr/rel 9, irr/part 3; total 35. po = 23/35; the judge's
    # totals rel 15, irr 20; the human's rel 24, irr 8, part 3; pe = (360 + 160)/1225; kappa = (161 - 104)/
    # (245 - 104) = 19/47. Relevant share 27/35. AC1: pi = 39/70, 28/70, 3/70; pe1 = 1293/4900; AC1 = 1927/3607.
    rebuild(drawn, judge_gate=JudgeGate(min_pairs=10))
    row = gate_figures(drawn)
    assert (row["sample"], row["audits"], row["n"], row["queries"]) == ("audit", 2, 10, 2)
    assert (row["kappa"], row["po"], row["pe"], row["prevalence"], row["ac1"]) == exactly(
        F(19, 47), F(23, 35), F(104, 245), F(27, 35), F(1927, 3607)
    )
    assert (row["kappa_lo"], row["kappa_hi"]) == exactly(F(1, 21), F(1))


@pytest.mark.slow  # its own world, one pool and one build (the library's, as `goldenset build` runs it), about 2 CPU s
def test_a_build_on_an_audited_query_without_a_chance_stops_with_exit_1_naming_it(tmp_path, worlds):
    # Every pair labelled by ana and the judge, one audit drawn (Q3) and so audited; then its design is made active
    # with an inclusion probability of 0, which no `pool` writes: the gate cannot weigh Q3, and says how to recover.
    # The error's class carries the exit code the CLI maps it to in one place (goldenset.errors).
    lines = [label_line(q, d, lab, "2026-11-30T09:00:00Z") for (q, d), lab in ANA.items()] + [
        label_line(q, d, lab, "2026-11-30T10:00:00Z", annotator="qwen", kind="judge") for (q, d), lab in JUDGE.items()
    ]
    world = worlds(tmp_path / "w", lines)
    assert pool(world, "--audit", "1", "--seed", "11")["audit"]["sample_size"] == 1
    con = connect(world.db)
    try:
        ((pool_id, query_id, population),) = con.execute(
            "SELECT pool_id, query_id, population FROM audit_queries JOIN audit_samples USING (pool_id)"
        ).fetchall()
        con.execute("UPDATE audit_samples SET design = 'active'")
        con.execute("UPDATE audit_queries SET inclusion = 0.0")
        builds = con.execute("SELECT count(*) FROM golden_builds").fetchall()
    finally:
        con.close()
    with pytest.raises(GoldensetError) as raised:
        rebuild(world)
    assert (type(raised.value), raised.value.exit_code) == (GoldensetError, 1)
    assert str(raised.value) == (
        f"audit of pool {pool_id} drew query '{query_id}' with inclusion probability 0.0 (population {population}): "
        "the judge's gate cannot weigh it; draw the audit again (goldenset pool --audit N --active --judge NAME)"
    )
    con = connect(world.db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM golden_builds").fetchall() == builds  # nothing published
    finally:
        con.close()
