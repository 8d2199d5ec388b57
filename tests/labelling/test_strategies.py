"""Pooling strategies (depth, mtf, bandit, feedback) on hand-made lists, and `pool --from-run` on the pool world.

Every expected pick below is worked out by hand from the lists written in the test;
the world of pool_rankers.py gives the golden rows, stale and successor pairs.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "bench"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from pool_rankers import FIRST, Q1, Q2, World  # noqa: E402

from goldenset import warehouse  # noqa: E402
from goldenset.bench.runs import store_run  # noqa: E402
from goldenset.cli.app import main  # noqa: E402
from goldenset.cli.pool import app as pool_app  # noqa: E402
from goldenset.errors import GoldensetError, UsageError  # noqa: E402
from goldenset.labelling import strategies as S  # noqa: E402
from goldenset.labelling.pool import run_pool  # noqa: E402
from tests.helpers import hand_made_run  # noqa: E402

POOLED_AT = datetime(2026, 11, 30, 8, 0, 0)

# Two rankers, one query. A's list: r1 n1 r2 ...; B's: x1 x2 r3 ...
LISTS = {"q": {"A": ["a1", "a2", "a3", "a4"], "B": ["b1", "b2", "b3", "b4"]}}


# --------------------------------------------------------------------------- pure strategies


def test_mtf_draws_from_the_front_ranker_and_sends_a_wrong_one_to_the_back():
    # Round 1: A is in front (the --rankers order), so a1 is drawn.
    r1 = S.plan_round("mtf", LISTS, ["A", "B"], {}, budget=1)
    assert r1.picks == [("q", "a1", "A")]
    # a1 labelled not relevant: A goes to the back, B is drawn from.
    r2 = S.plan_round("mtf", LISTS, ["A", "B"], {("q", "a1"): 0}, budget=1, previous=r1.state)
    assert r2.picks == [("q", "b1", "B")]
    # b1 relevant: B stays in front.
    r3 = S.plan_round("mtf", LISTS, ["A", "B"], {("q", "a1"): 0, ("q", "b1"): 1}, budget=1, previous=r2.state)
    assert r3.picks == [("q", "b2", "B")]
    assert r3.state["round"] == 3
    assert r3.state["picks"]["q"] == [["a1", "A"], ["b1", "B"], ["b2", "B"]]


def test_an_unlabelled_pick_is_dropped_from_the_history_and_drawn_again():
    r1 = S.plan_round("mtf", LISTS, ["A", "B"], {}, budget=1)
    r2 = S.plan_round("mtf", LISTS, ["A", "B"], {}, budget=1, previous=r1.state)
    assert r2.picks == [("q", "a1", "A")]
    assert r2.state["picks"]["q"] == [["a1", "A"]]


def test_a_document_two_rankers_return_is_drawn_once():
    lists = {"q": {"A": ["d", "e"], "B": ["d", "f"]}}
    plan = S.plan_round("mtf", lists, ["A", "B"], {})
    assert [d for _, d, _ in plan.picks] == ["d", "e", "f"]
    plan = S.plan_round("bandit", lists, ["A", "B"], {}, seed=3)
    assert sorted(d for _, d, _ in plan.picks) == ["d", "e", "f"]


@pytest.mark.parametrize("name", S.STRATEGIES)
def test_no_strategy_queues_a_pair_labelled_at_its_current_version(name):
    labels = {("q", "a1"): 1, ("q", "b2"): 0}
    plan = S.plan_round(name, LISTS, ["A", "B"], labels, seed=1)
    drawn = {(q, d) for q, d, _ in plan.picks}
    assert not drawn & set(labels)
    assert len(drawn) == len(plan.picks) == 6


@pytest.mark.parametrize("name", S.STRATEGIES)
def test_a_strategy_is_deterministic_under_a_seed(name):
    lists = {f"q{i}": {"A": [f"a{i}{j}" for j in range(6)], "B": [f"b{i}{j}" for j in range(6)]} for i in range(4)}
    labels = {("q0", "a00"): 1, ("q0", "b00"): 0, ("q1", "a10"): 0}
    one = S.plan_round(name, lists, ["A", "B"], labels, budget=7, seed=42)
    two = S.plan_round(name, lists, ["A", "B"], labels, budget=7, seed=42)
    assert one.picks == two.picks and one.state == two.state
    assert len(one.picks) == 7


def test_the_budget_lets_the_queries_take_turns():
    lists = {q: {"A": [f"{q}-{j}" for j in range(5)]} for q in ("q2", "q1")}
    plan = S.plan_round("bandit", lists, ["A"], {}, budget=3, seed=0)
    assert [q for q, _, _ in plan.picks] == ["q1", "q2", "q1"]


def test_the_bandit_follows_the_arm_whose_labelled_documents_were_relevant():
    # A's first three documents were labelled relevant, B's first three not: A's posterior is
    # Beta(4, 1), B's Beta(1, 4); B wins a draw with probability 1/70 (P(Beta(1,4) > Beta(4,1))).
    lists = {f"q{i}": {"A": ["ar1", "ar2", "ar3", "a4"], "B": ["bn1", "bn2", "bn3", "b4"]} for i in range(20)}
    labels = {
        (q, d): (1 if d.startswith("ar") else 0) for q in lists for d in ("ar1", "ar2", "ar3", "bn1", "bn2", "bn3")
    }
    plan = S.plan_round("bandit", lists, ["A", "B"], labels, budget=20, seed=7)
    assert sum(1 for _, d, _ in plan.picks if d == "a4") >= 18


def test_a_bandit_round_resumes_with_the_next_round_number_and_new_draws():
    r1 = S.plan_round("bandit", LISTS, ["A", "B"], {}, budget=1, seed=5)
    r2 = S.plan_round("bandit", LISTS, ["A", "B"], {}, budget=1, seed=5, previous=r1.state)
    assert (r1.state["round"], r2.state["round"]) == (1, 2)
    # Another seed or strategy starts over.
    assert S.plan_round("bandit", LISTS, ["A", "B"], {}, seed=6, previous=r1.state).state["round"] == 1
    assert S.plan_round("mtf", LISTS, ["A", "B"], {}, previous=r1.state).state["round"] == 1


def test_depth_keeps_the_pools_priority_and_cuts_at_the_budget():
    plan = S.plan_round("depth", LISTS, ["A", "B"], {("q", "a1"): 1}, budget=3)
    # Best rank first, then doc_id: b1 (1), a2 (2), b2 (2).
    assert plan.picks == [("q", "b1", "B"), ("q", "a2", "A"), ("q", "b2", "B")]


@pytest.mark.parametrize(("name", "budget"), [("bm25", None), ("mtf", 0), ("bandit", -2)])
def test_a_bad_strategy_or_budget_is_a_usage_error(name, budget):
    with pytest.raises(UsageError):
        S.check_strategy(name, budget)


def _vectors(queries: dict[str, tuple[float, float]], docs: dict[str, tuple[float, float]]) -> S.Vectors:
    return S.Vectors({q: np.array(v) for q, v in queries.items()}, {d: np.array(v) for d, v in docs.items()})


# Query q points along (1, 0). Its two labelled-relevant documents point along (0, 1). Candidates:
# y = (0.8, 0) and x = (0.1, 1). The query alone scores y 0.8 > x 0.1; Rocchio's query
# (1, 0) + 0.75 * (0, 1) = (1, 0.75) scores x 0.1 + 0.75 = 0.85 > y 0.8.
FB_LISTS = {"q": {"A": ["r1", "r2", "y", "x"]}}
FB_VECTORS = _vectors({"q": (1.0, 0.0)}, {"r1": (0.0, 1.0), "r2": (0.0, 1.0), "y": (0.8, 0.0), "x": (0.1, 1.0)})


def test_feedback_orders_a_querys_documents_by_rocchios_query():
    plan = S.plan_round("feedback", FB_LISTS, ["A"], {("q", "r1"): 2, ("q", "r2"): 1}, vectors=FB_VECTORS)
    assert plan.picks == [("q", "x", "A"), ("q", "y", "A")]


def test_feedback_without_relevant_labels_orders_by_the_query_alone():
    # r1 and r2 not relevant: (1, 0) - 0.15 * (0, 1) = (1, -0.15) scores y 0.8, x 0.1 - 0.15 = -0.05.
    plan = S.plan_round("feedback", FB_LISTS, ["A"], {("q", "r1"): 0, ("q", "r2"): 0}, vectors=FB_VECTORS)
    assert [d for _, d, _ in plan.picks] == ["y", "x"]
    # No vectors: each query's documents in depth order (best rank first).
    assert [d for _, d, _ in S.plan_round("feedback", FB_LISTS, ["A"], {}).picks] == ["r1", "r2", "y", "x"]


def _two_queries(good: str, bad: str):
    lists = {q: {"A": [f"{q}-old{j}" for j in range(20)] + [f"{q}-new{j}" for j in range(5)]} for q in (good, bad)}
    labels = {(q, f"{q}-old{j}"): (1 if q == good else 0) for q in (good, bad) for j in range(20)}
    return lists, labels


@pytest.mark.parametrize(("good", "bad"), [("q1", "q2"), ("q2", "q1")])
def test_feedback_spends_the_budget_on_the_query_whose_labels_paid(good, bad):
    # good: 20 relevant labels, Beta(21, 1); bad: 20 not relevant, Beta(1, 21). After two
    # provisional misses good is Beta(21, 3) (mean 0.875) against bad's mean 0.045: bad wins a
    # draw with probability below 1e-6, so all three picks go to good, whichever query_id sorts first.
    lists, labels = _two_queries(good, bad)
    plan = S.plan_round("feedback", lists, ["A"], labels, budget=3, seed=11)
    assert [q for q, _, _ in plan.picks] == [good] * 3
    assert [d for _, d, _ in plan.picks] == [f"{good}-new0", f"{good}-new1", f"{good}-new2"]


def test_feedback_spreads_the_budget_when_no_query_has_evidence():
    # No labels: a query that took k picks is Beta(1, 1 + k), the minimum of 1 + k uniforms, so
    # q1 takes the next pick with probability (1 + b) / (2 + a + b) after a picks of q1 and b of q2.
    # Summed over the paths of 40 picks, one query ends with fewer than 5 with probability 2.7e-21.
    lists = {q: {"A": [f"{q}-{j}" for j in range(40)]} for q in ("q1", "q2")}
    plan = S.plan_round("feedback", lists, ["A"], {}, budget=40, seed=0)
    counts = {q: sum(1 for p in plan.picks if p[0] == q) for q in ("q1", "q2")}
    assert min(counts.values()) >= 5 and sum(counts.values()) == 40


def test_a_feedback_round_resumes_with_the_next_round_and_never_requeues_a_label():
    lists, labels = _two_queries("q1", "q2")
    r1 = S.plan_round("feedback", lists, ["A"], labels, budget=3, seed=4)
    answered = {**labels, **{(q, d): 1 for q, d, _ in r1.picks}}
    r2 = S.plan_round("feedback", lists, ["A"], answered, budget=3, seed=4, previous=r1.state)
    assert (r1.state, r2.state["round"]) == ({"name": "feedback", "seed": 4, "round": 1}, 2)
    assert not {(q, d) for q, d, _ in r2.picks} & set(answered)
    assert S.plan_round("feedback", lists, ["A"], labels, seed=5, previous=r1.state).state["round"] == 1


def test_the_default_strategy_is_feedback_with_a_budget_and_depth_without():
    assert S.resolve(None, 10) == "feedback"
    assert S.resolve(None, None) == "depth"
    assert S.resolve("mtf", 10) == "mtf"
    with pytest.raises(UsageError, match="feedback"):
        S.resolve("nope", None)


# --------------------------------------------------------------------------- in the pool: --from-run


CANDIDATE = "candidate.module:retriever"


def _store_candidate(world: World, ranking: dict[str, list[str]], run_id: str = "runX") -> None:
    run = hand_made_run(
        run_id, POOLED_AT, {"core": {q: {"recall@5": 0.0} for q in ranking}}, retriever=CANDIDATE, ranking=ranking
    )
    con = warehouse.connect(world.db)
    try:
        store_run(con, run)
    finally:
        con.close()


@pytest.fixture
def world(tmp_path, pool_worlds) -> World:
    w = pool_worlds(tmp_path / "w")
    # Q1: a is golden at its current version, j new, b stale (golden at v1, now v2), zz outside the snapshot.
    # Q2: n is golden, i and f2 new.
    _store_candidate(w, {Q1: ["a", "zz", "j", "b", "i"], Q2: ["n", "i", "f2", "g"]})
    return w


def _pool(world: World, **kw):
    con = warehouse.connect(world.db)
    try:
        return run_pool(con, index_dir=world.index_dir, now=POOLED_AT, **kw)
    finally:
        con.close()


def _pooled(result) -> list[tuple]:
    return [(r.query_id, r.doc_id, r.rankers, r.best_rank) for r in result.queue if r.reason == "pooled"]


def test_from_run_pools_the_runs_unlabelled_top_k_under_its_retrievers_name(world):
    result = _pool(world, rankers=None, from_run="runX", depth=4)
    # Q1's top 4: a (labelled), zz (not in the snapshot, left out; it keeps its place), j at 3, b (stale).
    # Q2's: n (labelled), i, f2, g.
    expected = sorted(
        [
            (Q1, "j", (CANDIDATE,), 3),
            (Q2, "i", (CANDIDATE,), 2),
            (Q2, "f2", (CANDIDATE,), 3),
            (Q2, "g", (CANDIDATE,), 4),
        ],
        key=lambda r: (r[3], r[0], r[1]),
    )
    assert _pooled(result) == expected
    assert result.report.rankers == (CANDIDATE,)
    assert result.report.outside_snapshot == {CANDIDATE: 1}
    assert result.report.already_labelled == 2
    # Stale rows and the successors of documents judged relevant come before the first pooled row,
    # the successors of documents judged not relevant (c2 of noise c, m2 of wrong m) after the last.
    rows = [(r.reason, r.doc_id) for r in result.queue]
    pooled_at = [i for i, (reason, _) in enumerate(rows) if reason == "pooled"]
    assert {reason for reason, _ in rows[: pooled_at[0]]} == {"stale", "successor"}
    assert rows[pooled_at[-1] + 1 :] == [("successor", "c2"), ("successor", "m2")]
    assert ("stale", Q1, "b") in {(r.reason, r.query_id, r.doc_id) for r in result.queue}


def test_from_run_combines_with_rankers(world):
    result = _pool(world, rankers=(FIRST,), from_run="runX", depth=3)
    rows = {(r.query_id, r.doc_id): r.rankers for r in result.queue if r.reason == "pooled"}
    # first's Q2 list: k, i, (zz), f2 -> i and f2 shared with the run's top 3 (n, i, f2).
    assert rows[(Q2, "i")] == (FIRST, CANDIDATE)
    assert rows[(Q1, "j")] == (CANDIDATE,)


def test_from_run_of_an_unknown_run_is_a_usage_error(world):
    with pytest.raises(UsageError, match="no benchmark run 'nope'"):
        _pool(world, rankers=None, from_run="nope")


def test_from_run_without_a_stored_ranking_says_to_run_the_benchmark_again(world):
    _store_candidate(world, {}, run_id="old")
    with pytest.raises(GoldensetError, match="no stored ranking"):
        _pool(world, rankers=None, from_run="old")


def test_a_strategy_with_a_budget_caps_the_pooled_pairs_and_stores_its_round(world):
    first = _pool(world, rankers=None, from_run="runX", depth=4, strategy="bandit", budget=2, seed=9)
    assert first.report.queue["pooled"] == 2
    assert first.report.queue["stale"] == 1  # never capped
    assert first.report.strategy["round"] == 1 and first.report.strategy["pooled_before_budget"] == 4
    again = _pool(world, rankers=None, from_run="runX", depth=4, strategy="bandit", budget=2, seed=9)
    assert again.report.strategy["round"] == 2
    con = warehouse.connect(world.db, read_only=True)
    stored = json.loads(con.execute("SELECT report FROM pool_runs WHERE pool_id = 2").fetchone()[0])
    con.close()
    assert stored["strategy"]["name"] == "bandit" and stored["strategy"]["round"] == 2


def test_pool_command_from_run_with_a_strategy(world, capsys):
    code = main(
        ["--db", str(world.db), "--from-run", "runX", "--depth", "4", "--strategy", "mtf", "--budget", "3", "--json"],
        application=pool_app,
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["rankers"] == [CANDIDATE]
    assert out["queue"]["pooled"] == 3
    assert out["strategy"]["name"] == "mtf"
    assert main(["--db", str(world.db), "--strategy", "nope"], application=pool_app) == 2


def test_two_runs_of_one_retriever_are_two_rankers_named_by_run(world):
    _store_candidate(world, {Q1: ["g"]}, run_id="runY")
    result = _pool(world, rankers=None, from_run=["runX", "runY"], depth=1)
    assert result.report.rankers == (f"{CANDIDATE}#runX", f"{CANDIDATE}#runY")
    with pytest.raises(UsageError, match="given twice"):
        _pool(world, rankers=None, from_run=["runX", "runX"])


def test_pool_command_prints_the_strategy_and_its_cap(world, capsys):
    code = main(
        ["--db", str(world.db), "--from-run", "runX", "--depth", "4", "--strategy", "mtf", "--budget", "3"],
        application=pool_app,
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.rstrip().endswith("strategy mtf, round 1, seed 0: pooled pairs capped at --budget 3 (4 before the cap)")


def test_compare_rescore_measures_stored_rankings_against_the_current_golden_set(world, capsys):
    from goldenset.cli.bench import app as bench_app

    _store_candidate(world, {Q1: ["g"]}, run_id="runY")
    args = ["compare", "runX", "runY", "--db", str(world.db), "--json", "--metric", "recall@5"]
    assert main(args, application=bench_app) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored["metrics"][0]["mean_a"] == 0.0  # the values stored with the hand-made run
    assert main([*args, "--rescore"], application=bench_app) == 0
    out = json.loads(capsys.readouterr().out)
    # Only Q1 is in both rankings. runX's Q1 top 5: a, zz, j, b, i; golden Q1 rows a and b (both
    # relevant, b stale but kept) -> recall@5 1, judged@5 2/5. runY's Q1: g, never golden -> 0 and 0.
    (recall,) = out["metrics"]
    assert (recall["n"], recall["mean_a"], recall["mean_b"]) == (1, 1.0, 0.0)
    assert out["coverage"] == {"a": {"judged@5": pytest.approx(0.4)}, "b": {"judged@5": 0.0}}
    assert out["biased"] is True


@pytest.mark.slow
def test_a_budget_without_a_strategy_pools_with_feedback_and_embeds_the_queries(world):
    result = _pool(world, rankers=None, from_run="runX", depth=5, budget=2)
    assert result.report.strategy["name"] == "feedback" and result.report.strategy["round"] == 1
    # The world's stale row and five successor rows are never capped: the stale row and three successors
    # of relevant documents first, the two successors of documents judged not relevant (c2, m2) last.
    assert [r.reason for r in result.queue] == ["stale"] + ["successor"] * 3 + ["pooled"] * 2 + ["successor"] * 2
    con = warehouse.connect(world.db, read_only=True)
    golden = set(con.execute("SELECT query_id, doc_id FROM golden_set").fetchall())
    tasks = [t for (t,) in con.execute("SELECT DISTINCT task FROM golden_set").fetchall()]
    cached = {k for (k,) in con.execute("SELECT text_sha256 FROM embedding_cache").fetchall()}
    con.close()
    assert not {(r.query_id, r.doc_id) for r in result.queue if r.reason == "pooled"} & golden
    from goldenset.embeddings import text_sha256

    assert {text_sha256(t) for t in tasks} <= cached


@pytest.mark.slow
def test_pool_command_with_a_budget_alone_pools_with_feedback(world, capsys):
    code = main(["--db", str(world.db), "--from-run", "runX", "--depth", "4", "--budget", "3"], application=pool_app)
    out = capsys.readouterr().out
    assert code == 0
    assert out.rstrip().endswith(
        "strategy feedback, round 1, seed 0: pooled pairs capped at --budget 3 (4 before the cap)"
    )


def test_a_large_from_run_pool_without_a_budget_says_how_many_and_gives_the_budgeted_command(world, monkeypatch):
    from goldenset.labelling import pool

    result = _pool(world, rankers=None, from_run="runX", depth=4)  # 4 pooled pairs (the test above)
    monkeypatch.setattr(pool, "LARGE_POOL", 3)
    assert pool.large_pool_note(result, ["runX"]) == (
        "large pool: 4 pooled pairs queued; `goldenset pool --from-run runX --depth 4 --budget 3` queues the 3 "
        "most promising of them instead, and the next pool, after they are labelled, the next 3"
    )
    note = pool.large_pool_note(result, ["runX"], rankers="lexical", strategy="mtf")
    assert (
        note is not None
        and "`goldenset pool --rankers lexical --from-run runX --depth 4 --strategy mtf --budget 3`" in note
    )
    assert pool.large_pool_note(result, ["runX"], budget=10) is None  # a budget was given
    assert pool.large_pool_note(result, []) is None  # not a --from-run pool
    monkeypatch.setattr(pool, "LARGE_POOL", 4)
    assert pool.large_pool_note(result, ["runX"]) is None  # 4 is not more than 4


def test_with_a_budget_the_successors_of_documents_judged_not_relevant_follow_the_strategys_picks(world):
    result = _pool(world, rankers=None, from_run="runX", depth=4, strategy="depth", budget=1)
    rows = [(r.reason, r.doc_id) for r in result.queue]
    # Uncapped, in 7.4's order: stale and the relevant documents' successors, one pooled pick, then c2, m2.
    assert [reason for reason, _ in rows].count("pooled") == 1
    assert rows[-3][0] == "pooled" and rows[-2:] == [("successor", "c2"), ("successor", "m2")]


# --------------------------------------------------------------------------- the draws, from the contract's text


def _contract_bandit(lists, rankers, labels, seed: int, round_: int) -> list[tuple[str, str, str]]:
    """Contract 11.2's bandit for a round without a budget, written from its text, one query after another."""
    import random

    picks = []
    for qid in sorted(lists):
        rng, drawn = random.Random(f"{seed}:{round_}:{qid}"), set()
        while True:
            best = None
            for ranker in rankers:  # drawn in --rankers order; a tie keeps the earlier ranker
                docs = lists[qid].get(ranker, [])
                nxt = next((i for i, d in enumerate(docs) if (qid, d) not in labels and d not in drawn), None)
                if nxt is None:
                    continue
                above = [labels[(qid, d)] for d in docs[:nxt] if (qid, d) in labels]
                s = sum(1 for g in above if g >= 1)
                value = rng.betavariate(1 + s, 1 + len(above) - s)
                if best is None or value > best[0]:
                    best = (value, ranker, docs[nxt])
            if best is None:
                break
            drawn.add(best[2])
            picks.append((qid, best[2], best[1]))
    return picks


MIXED = {
    f"q{i}": {"A": [f"a{i}{j}" for j in range(5)], "B": [f"b{i}{j}" for j in range(5)], "C": [f"a{i}1", f"c{i}"]}
    for i in range(3)
}
MIXED_LABELS = {("q0", "a00"): 1, ("q0", "b00"): 0, ("q0", "b01"): 0, ("q1", "a10"): 0, ("q2", "b20"): 2}


@pytest.mark.parametrize("seed", [0, 5])
def test_bandit_draws_are_the_contracts_beta_draws_seeded_by_seed_round_and_query(seed):
    r1 = S.plan_round("bandit", MIXED, ["A", "B", "C"], MIXED_LABELS, seed=seed)
    r2 = S.plan_round("bandit", MIXED, ["A", "B", "C"], MIXED_LABELS, seed=seed, previous=r1.state)
    by_query = sorted(r1.picks, key=lambda p: p[0])  # the budget-free round interleaves the queries' turns
    assert by_query == _contract_bandit(MIXED, ["A", "B", "C"], MIXED_LABELS, seed, 1)
    assert sorted(r2.picks, key=lambda p: p[0]) == _contract_bandit(MIXED, ["A", "B", "C"], MIXED_LABELS, seed, 2)


def _contract_feedback_queries(lists, labels, seed: int, round_: int, budget: int) -> list[str]:
    """The query of each feedback pick (contract 11.2), from its text: Thompson sampling across queries."""
    import hashlib

    qids = sorted(q for q in lists if any((q, d) not in labels for docs in lists[q].values() for d in docs))
    left = {q: len({d for docs in lists[q].values() for d in docs if (q, d) not in labels}) for q in qids}
    alpha = np.array([1.0 + sum(1 for (q2, _), g in labels.items() if q2 == q and g >= 1) for q in qids])
    beta = np.array([1.0 + sum(1 for (q2, _), g in labels.items() if q2 == q and g < 1) for q in qids])
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(f"{seed}:{round_}".encode()).digest()[:8], "big"))
    out: list[str] = []
    while len(out) < budget and any(left.values()):
        values = rng.beta(alpha, beta)  # one value for every query that had a candidate at the start
        i = max((j for j, q in enumerate(qids) if left[q]), key=lambda j: (values[j], -j))
        out.append(qids[i])
        left[qids[i]] -= 1
        beta[i] += 1.0  # a provisional miss until the next round's labels
    return out


@pytest.mark.parametrize("seed", [0, 3])
def test_feedback_picks_queries_by_the_contracts_draws_with_a_provisional_miss(seed):
    plan = S.plan_round("feedback", MIXED, ["A", "B", "C"], MIXED_LABELS, budget=12, seed=seed)
    assert [q for q, _, _ in plan.picks] == _contract_feedback_queries(MIXED, MIXED_LABELS, seed, 1, 12)
