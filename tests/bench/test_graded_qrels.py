"""The benchmark's qrels are the golden set's grades: nDCG sees grade 2 above 1, overruled queries are skipped."""

from __future__ import annotations

import math

import pytest
from bench_world import relabel

from goldenset import warehouse
from goldenset.bench import golden as golden_mod
from goldenset.bench import metrics as M
from goldenset.bench import runner as runner_mod
from goldenset.bench.runner import BenchConfig
from goldenset.bench.service import run_and_store

WEBHOOKS = "Add retries to the webhook sender"  # helped: webhooks/retries, webhooks/signing
TOKENS = "Rotate expiring API tokens"  # helped: auth/tokens; noise: auth/password-reset


def _run(g, retriever="bench_plugins:perfect", **kw):
    return run_and_store(
        g.db, g.corpus, BenchConfig(retriever=retriever, index_dir=g.index_dir, **kw), report_dir=g.root / "report"
    ).run


def _qid(g, task):
    con = warehouse.connect(g.db, read_only=True)
    try:
        return con.execute("SELECT DISTINCT query_id FROM golden_set WHERE task = ?", [task]).fetchone()[0]
    finally:
        con.close()


def test_a_log_only_golden_set_reads_as_grades_one_and_zero(golden):
    con = warehouse.connect(golden.db, read_only=True)
    try:
        gq = golden_mod.load_qrels(con)
    finally:
        con.close()
    assert gq.qrels[_qid(golden, TOKENS)] == {"auth/tokens": 1, "auth/password-reset": 0}
    assert gq.overruled == () and gq.queries_without_relevant == ()


def test_ndcg_weighs_a_grade_two_label_above_a_grade_one(golden):
    # perfect ranks the query's relevant documents first, by doc_id: retries (grade 1), then signing.
    relabel(golden, [(WEBHOOKS, "webhooks/signing", "relevant")])
    run = _run(golden)
    got = run.values["core"][_qid(golden, WEBHOOKS)]
    by_hand = (1 / math.log2(2) + 2 / math.log2(3)) / (2 / math.log2(2) + 1 / math.log2(3))
    assert got["ndcg@10"] == pytest.approx(by_hand, abs=1e-12)
    # Binary metrics count grade >= 1 as relevant, whatever the grade.
    assert (got["recall@5"], got["precision@5"], got["mrr"], got["map"]) == (1.0, 0.4, 1.0, 1.0)


def test_human_labels_reach_the_golden_set_with_their_grade(golden):
    relabel(golden, [(WEBHOOKS, "webhooks/signing", "relevant"), (TOKENS, "auth/tokens", "irrelevant")])
    con = warehouse.connect(golden.db, read_only=True)
    try:
        rows = con.execute(
            "SELECT task, doc_id, source, label, grade, relevance FROM golden_set WHERE source = 'human' ORDER BY task"
        ).fetchall()
    finally:
        con.close()
    assert rows == [
        (WEBHOOKS, "webhooks/signing", "human", "relevant", 2, 1),
        (TOKENS, "auth/tokens", "human", "irrelevant", 0, 0),
    ]


@pytest.mark.slow
def test_the_written_qrels_carry_the_grade(golden):
    relabel(golden, [(WEBHOOKS, "webhooks/signing", "relevant")])
    _run(golden)
    line = f"{_qid(golden, WEBHOOKS)} 0 webhooks/signing 2"
    assert line in (golden.root / "report" / "qrels.trec").read_text().splitlines()


@pytest.mark.slow
def test_a_query_whose_positives_were_all_overruled_is_skipped_and_counted(golden):
    relabel(golden, [(TOKENS, "auth/tokens", "irrelevant")])
    run = _run(golden)
    qid = _qid(golden, TOKENS)
    assert qid not in run.values["core"] and run.n_queries == 5 and run.skipped_queries == 1
    assert (
        "1 query(ies) skipped: no label with grade >= 1 (every positive overruled by a human or judge label)"
        in run.notes
    )
    con = warehouse.connect(golden.db, read_only=True)
    try:
        stored = con.execute(
            "SELECT n_queries, skipped_queries FROM benchmark_runs WHERE run_id = ?", [run.run_id]
        ).fetchone()
    finally:
        con.close()
    assert stored == (5, 1)


def test_a_human_label_that_keeps_a_positive_keeps_the_query(golden):
    relabel(golden, [(TOKENS, "auth/password-reset", "partial"), (TOKENS, "auth/tokens", "irrelevant")])
    run = _run(golden)
    assert _qid(golden, TOKENS) in run.values["core"] and run.skipped_queries == 0


def test_stale_graded_labels_stay_in_the_qrels_unless_excluded(tmp_path, goldens):
    g = goldens(tmp_path / "g", superseded={"webhooks/signing": "webhooks/retries"})
    relabel(g, [(WEBHOOKS, "webhooks/signing", "relevant")])
    con = warehouse.connect(g.db, read_only=True)
    try:
        included = golden_mod.load_qrels(con).qrels[_qid(g, WEBHOOKS)]
        excluded = golden_mod.load_qrels(con, exclude_stale=True).qrels[_qid(g, WEBHOOKS)]
    finally:
        con.close()
    assert included["webhooks/signing"] == 2 and "webhooks/signing" not in excluded


@pytest.mark.slow
def test_bench_run_scores_under_the_skip_no_relevant_policy(golden, monkeypatch):
    policies = []
    real = runner_mod.evaluate

    def spy(run, qrels, metrics, **kw):
        policies.append(kw.get("policy"))
        return real(run, qrels, metrics, **kw)

    monkeypatch.setattr(runner_mod, "evaluate", spy)
    run = _run(golden, "bench_plugins:keywords")
    assert policies == [M.QueryPolicy.SKIP_NO_RELEVANT] * len(run.rows)
