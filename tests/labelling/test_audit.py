"""The audit sample (contract 12.1): uniform, seeded, reproducible, stored, and its place in the queue.

The world is pool_rankers.py's (golden queries Q1 and Q2, rankers FIRST and SECOND at depth 5);
the reasons below are worked out by hand from its table.
"""

from __future__ import annotations

import sys
from collections import Counter
from datetime import datetime
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "bench"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from label_lines import label_line, write_and_ingest  # noqa: E402
from pool_rankers import DAY, FIRST, Q1, Q2, SECOND, World  # noqa: E402

from goldenset import warehouse  # noqa: E402
from goldenset.build import build_golden_set  # noqa: E402
from goldenset.errors import GoldensetError, UsageError  # noqa: E402
from goldenset.labelling.audit import check_audit, draw, latest_audit  # noqa: E402
from goldenset.labelling.pool import queue_summary, run_pool  # noqa: E402

POOLED_AT = datetime(2026, 11, 30, 8, 0, 0)

# By hand from pool_rankers.py: the pairs each query's rankers returned, and what the pool makes of them.
RETURNED = {
    Q1: {"a", "g", "h", "c2", "b", "m", "j", "d2"},
    Q2: {"k", "i", "f2", "n", "e2"},
}
STALE_OR_SUCCESSOR = {(Q1, "b"): "stale", (Q1, "c2"): "successor", (Q1, "d2"): "successor", (Q2, "e2"): "successor"}


@pytest.fixture
def world(tmp_path, pool_worlds) -> World:
    return pool_worlds(tmp_path / "w")


def pool(world: World, **kw):
    con = warehouse.connect(world.db)
    try:
        return run_pool(con, rankers=(FIRST, SECOND), depth=5, index_dir=world.index_dir, now=POOLED_AT, **kw)
    finally:
        con.close()


def reasons(world: World) -> dict[tuple[str, str], str]:
    con = warehouse.connect(world.db, read_only=True)
    try:
        return {(q, d): r for q, d, r in con.execute("SELECT query_id, doc_id, reason FROM labelling_queue").fetchall()}
    finally:
        con.close()


# --------------------------------------------------------------------------- the draw


def test_the_draw_is_the_documented_numpy_choice_over_sorted_ids():
    ids = [f"{i:016x}" for i in (9, 3, 7, 1, 5)]
    design = draw(ids, 3, seed=11)
    population = sorted(ids)
    expected = [population[i] for i in np.random.default_rng(11).choice(5, size=3, replace=False)]
    assert list(design.queries) == expected
    assert (design.population, design.requested, design.sample_size, design.seed) == (5, 3, 3, 11)


def test_the_draw_is_reproducible_and_ignores_the_order_the_ids_come_in():
    ids = [f"{i:016x}" for i in range(40)]
    assert draw(ids, 10, 3) == draw(list(reversed(ids)), 10, 3)
    assert draw(ids, 10, 3).queries != draw(ids, 10, 4).queries


def test_every_subset_of_the_population_is_equally_likely():
    # Simple random sampling: each of the C(5, 2) = 10 subsets has probability 1/10.
    ids = [f"{i:016x}" for i in range(5)]
    seen = Counter(frozenset(draw(ids, 2, seed).queries) for seed in range(5000))
    subsets = [frozenset(c) for c in combinations(ids, 2)]
    assert set(seen) == set(subsets)
    assert stats.chisquare([seen[s] for s in subsets]).pvalue > 0.001


def test_asking_for_more_queries_than_exist_draws_them_all():
    design = draw(["b", "a"], 5, seed=0)
    assert sorted(design.queries) == ["a", "b"] and design.requested == 5 and design.sample_size == 2


@pytest.mark.parametrize(
    ("n", "seed", "message"),
    [(0, None, "--audit must be an integer >= 1"), (2, -1, "--seed must be an integer >= 0")],
)
def test_bad_audit_options_are_usage_errors(n, seed, message):
    with pytest.raises(UsageError, match=message):
        check_audit(n, seed)


def test_without_a_seed_one_is_drawn_and_recorded():
    n, seed = check_audit(4, None)
    assert n == 4 and 0 <= seed < 2**63


def test_a_seed_without_an_audit_draws_nothing():
    # The pool's --seed also seeds its strategies, so it alone asks for no audit.
    assert check_audit(None, 3) is None


# --------------------------------------------------------------------------- the queue


def test_an_audit_of_every_query_asks_for_every_returned_pair_no_human_labelled(world):
    result = pool(world, audit=2, seed=0)
    got = reasons(world)
    for qid, docs in RETURNED.items():
        for d in docs:
            # Stale and successor keep their reason; the rest, log-labelled or not, is asked by the audit.
            assert got[(qid, d)] == STALE_OR_SUCCESSOR.get((qid, d), "audit"), (qid, d)
    assert result.report.queue == {"stale": 1, "successor": 5, "audit": 9, "pooled": 0}
    # Of the 13 distinct returned pairs each is counted under the reason it is queued with: the audit took the
    # pooled pairs and the log-labelled ones (a, k, n ... would otherwise be already labelled).
    lines = result.report.lines()
    assert (
        "of these: 0 already labelled (golden set row at the current version) + 1 queued as stale "
        "+ 3 queued as successor + 9 queued as audit + 0 pooled = 13"
    ) in lines
    assert (
        "queue: 1 stale (1 a ranker returned) + 5 successor (3 a ranker returned) + 9 audit (9 a ranker returned) + 0 pooled = 15 pairs"
        in lines
    )
    assert result.report.to_json()["audit"] == {
        "unit": "query",
        "population": 2,
        "requested": 2,
        "sample_size": 2,
        "seed": 0,
        "design": "uniform",
        "judge": None,
        "uniform_share": None,
        "pairs": 9,
    }


def test_audit_pairs_come_after_successors_and_before_pooled_pairs(world):
    # Seed 1 draws one query; the other's pooled pairs stay pooled, after the audit's. The
    # successors of documents judged not relevant (c2, m2: contract 7.4) come after them all.
    result = pool(world, audit=1, seed=1)
    (drawn,) = draw([Q1, Q2], 1, 1).queries
    order = [r.reason if r.doc_id not in ("c2", "m2") else "late successor" for r in result.queue]
    assert order == sorted(order, key=["stale", "successor", "audit", "pooled", "late successor"].index)
    assert order[-2:] == ["late successor", "late successor"]
    audit_queries = {r.query_id for r in result.queue if r.reason == "audit"}
    assert audit_queries == {drawn}
    assert any(r.reason == "pooled" for r in result.queue)


def test_a_pair_a_human_labelled_at_the_current_version_is_not_asked(world):
    con = warehouse.connect(world.db)
    try:
        write_and_ingest(con, world.db.parent / "labels", DAY, "ben.jsonl", [human(Q2, "k", "v1", 0, 1)])
        build_golden_set(con, now=datetime(2026, 11, 29, 12, 0, 0))
    finally:
        con.close()
    pool(world, audit=2, seed=0)
    got = reasons(world)
    assert (Q2, "k") not in got  # human-labelled: already labelled, not asked
    assert got[(Q2, "n")] == "audit"  # log-labelled only: asked


def test_the_design_the_queries_and_the_pairs_are_stored_with_the_pool_run(world):
    result = pool(world, audit=1, seed=1)
    con = warehouse.connect(world.db, read_only=True)
    try:
        sample = con.execute(
            "SELECT pool_id, build_id, drawn_at, unit, population, requested, sample_size, seed, design, judge "
            "FROM audit_samples"
        ).fetchall()
        queries = con.execute("SELECT pool_id, query_id, draw, inclusion FROM audit_queries").fetchall()
        pairs = con.execute("SELECT query_id, doc_id, doc_version FROM audit_pairs ORDER BY ALL").fetchall()
        audit = latest_audit(con)
    finally:
        con.close()
    (drawn,) = draw([Q1, Q2], 1, 1).queries
    assert sample == [(result.pool_id, result.build_id, POOLED_AT, "query", 2, 1, 1, 1, "uniform", None)]
    assert queries == [(result.pool_id, drawn, 1, 0.5)]  # one of two: drawn with chance 1/2
    assert pairs == sorted((r.query_id, r.doc_id, r.doc_version) for r in result.queue if r.reason == "audit")
    assert audit.audited == () and audit.pending == (drawn,)


def test_a_later_pool_without_an_audit_queues_the_audits_pending_pairs_again(world):
    first = pool(world, audit=1, seed=1)
    asked = {(r.query_id, r.doc_id, r.doc_version) for r in first.queue if r.reason == "audit"}
    second = pool(world)
    again = {(r.query_id, r.doc_id, r.doc_version) for r in second.queue if r.reason == "audit"}
    # Every pair asked, log-labelled ones included (a pool without the audit leaves those out as already
    # labelled), is asked again; the design itself is the drawing pool's alone.
    assert again == asked and second.report.queue["audit"] == len(asked) == second.report.returned_audit
    assert "audit" not in second.report.to_json()
    con = warehouse.connect(world.db)
    try:
        assert latest_audit(con).pool_id == first.pool_id
        assert queue_summary(con)["labelling_queue_by_reason"]["audit"] == len(asked)
        # A human label on one of them (any version) takes it out of every later pool.
        done = min(asked)
        write_and_ingest(con, world.db.parent / "labels", DAY, "ben.jsonl", [human(*done, 1, 1)])
        build_golden_set(con, now=datetime(2026, 11, 30, 12, 0, 0))
    finally:
        con.close()
    third = pool(world)
    assert {(r.query_id, r.doc_id, r.doc_version) for r in third.queue if r.reason == "audit"} == asked - {done}


def test_a_pool_after_a_complete_audit_counts_no_audit(world):
    # pool_rankers' Q1 and Q2 drawn, every asked pair then labelled by a person: nothing is pending.
    first = pool(world, audit=2, seed=0)
    lines = [human(r.query_id, r.doc_id, r.doc_version, 1, i) for i, r in enumerate(first.queue) if r.reason == "audit"]
    con = warehouse.connect(world.db)
    try:
        write_and_ingest(con, world.db.parent / "labels", DAY, "ben.jsonl", lines)
        build_golden_set(con, now=datetime(2026, 11, 30, 12, 0, 0))
    finally:
        con.close()
    later = pool(world)
    assert "audit" not in later.report.queue and later.report.returned_audit is None


def test_no_audit_yet_is_an_error_naming_the_command(world):
    pool(world)
    con = warehouse.connect(world.db, read_only=True)
    try:
        with pytest.raises(GoldensetError, match="pool --audit N"):
            latest_audit(con)
    finally:
        con.close()


# --------------------------------------------------------------------------- audited


def human(q: str, d: str, v: str, grade: int, second: int) -> dict:
    return label_line(q, d, v, grade, "ben", f"2026-11-30T09:00:{second:02d}Z")


def test_a_query_is_audited_once_humans_labelled_every_pair_asked_for_it(world):
    pool(world, audit=2, seed=0)
    con = warehouse.connect(world.db)
    try:
        asked = con.execute("SELECT query_id, doc_id, doc_version FROM audit_pairs ORDER BY ALL").fetchall()
        q2_pairs = [p for p in asked if p[0] == Q2]
        labels = world.db.parent / "labels"
        lines = [human(q, d, v, 1, i) for i, (q, d, v) in enumerate(q2_pairs, start=1)]
        write_and_ingest(con, labels, DAY, "ben.jsonl", lines[:-1])
        build_golden_set(con, now=datetime(2026, 11, 30, 12, 0, 0))
        assert latest_audit(con).audited == ()  # one Q2 pair is still open
        write_and_ingest(con, labels, DAY, "ben.jsonl", lines)
        build_golden_set(con, now=datetime(2026, 11, 30, 13, 0, 0))
        audit = latest_audit(con)
    finally:
        con.close()
    assert audit.audited == (Q2,) and audit.pending == (Q1,)
    assert audit.to_json()["audited"] == 1 and audit.to_json()["pairs_asked"] == 9


def test_an_asked_pair_whose_document_was_retired_since_does_not_keep_its_query_open(world):
    from pool_rankers import CORPUS

    from goldenset.corpus import read_corpus
    from goldenset.snapshots import store_snapshot
    from tests.helpers import write_corpus

    pool(world, audit=2, seed=0)
    con = warehouse.connect(world.db)
    try:
        asked = con.execute(
            "SELECT doc_id, doc_version FROM audit_pairs WHERE query_id = ? ORDER BY ALL", [Q2]
        ).fetchall()
        assert [d for d, _ in asked] == ["f2", "i", "k", "n"]
        # Humans label every asked pair of Q2 but i; then the corpus retires i (Q2 keeps n, its positive).
        labels = world.db.parent / "labels"
        lines = [human(Q2, d, v, 1, i) for i, (d, v) in enumerate(asked, start=1) if d != "i"]
        write_and_ingest(con, labels, DAY, "ben.jsonl", lines)
        build_golden_set(con, now=datetime(2026, 11, 30, 12, 0, 0))
        assert latest_audit(con).audited == ()
        write_corpus(world.corpus, [dict(d, status="retired") if d["doc_id"] == "i" else d for d in CORPUS])
        store_snapshot(con, read_corpus(world.corpus), now=datetime(2026, 11, 30, 13, 0, 0))
        build_golden_set(con, now=datetime(2026, 11, 30, 13, 0, 0))
        audit = latest_audit(con)
    finally:
        con.close()
    assert audit.audited == (Q2,)
