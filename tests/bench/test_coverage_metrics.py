"""judged@k held to ir_measures' Judged@k; condensed nDCG' and P' by hand; bpref to trec_eval.

Nothing expected here is computed by goldenset's code: ir_measures' own judged
provider, hand derivations written out in the comments, and trec_eval's output file
(tests/bench/data/out.test.a) and its C code (pytrec_eval).
"""

from __future__ import annotations

import math

import ir_measures
import pytest
import pytrec_eval
from bench_world import DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenset.bench import metrics as M
from goldenset.bench import trec

DOCS = ["a", "b", "c", "d", "e", "f", "g", "h"]


def ir_measures_judged(run_scores: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], k: int):
    """Per-query Judged@k from ir_measures, and its mean (over the queries in run and qrels)."""
    qr = [ir_measures.Qrel(q, d, r) for q, rels in qrels.items() for d, r in rels.items()]
    sd = [ir_measures.ScoredDoc(q, d, s) for q, docs in run_scores.items() for d, s in docs.items()]
    measure = ir_measures.Judged @ k
    per_query = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qr, sd)}
    return per_query, ir_measures.calc_aggregate([measure], qr, sd)[measure]


def distinct_scores(ranked: list[str]) -> dict[str, float]:
    # One score per rank, so ir_measures' tie order (doc_id ascending) cannot differ from the order given.
    return {d: float(len(ranked) - i) for i, d in enumerate(ranked)}


def test_judged_at_k_matches_ir_measures_with_unjudged_documents_and_k_beyond_the_list():
    ranked = {"q1": ["a", "x", "b", "y", "c"], "q2": ["z"], "q3": ["c", "a"]}
    qrels = {"q1": {"a": 1, "b": 0, "c": 2}, "q2": {"c": 1}, "q3": {"a": 0, "c": 1}}
    for k in (1, 2, 3, 5, 10):
        expected, mean = ir_measures_judged({q: distinct_scores(r) for q, r in ranked.items()}, qrels, k)
        got = {q: M.judged_at(ranked[q], qrels[q], k) for q in ranked}
        assert got == pytest.approx(expected)
        assert sum(got.values()) / len(got) == pytest.approx(mean)
    # k beyond the list divides by the documents there (ir_measures), not by k: q1 has 3 of 5 judged.
    assert M.judged_at(ranked["q1"], qrels["q1"], 10) == pytest.approx(3 / 5)


def test_judged_at_k_reads_ties_in_trec_eval_order_from_a_run_file(tmp_path):
    # x and b tie at 2.0. trec_eval (and trec.py) put the larger doc_id first: a, x, b.
    # ir_measures' judged provider puts the smaller first (a, b, x), so it is given the
    # trec_eval order as distinct scores; with the tie inside the cut-off both agree.
    path = tmp_path / "tied.run"
    path.write_text("q1 Q0 a 1 3.0 t\nq1 Q0 x 2 2.0 t\nq1 Q0 b 3 2.0 t\nq1 Q0 c 4 1.0 t\n", encoding="utf-8")
    ranked = trec.ranked_lists(trec.read_run(path))
    qrels = {"q1": {"a": 1, "b": 0}}
    assert ranked["q1"] == ["a", "x", "b", "c"]
    assert M.judged_at(ranked["q1"], qrels["q1"], 2) == pytest.approx(1 / 2)  # a judged, x not
    for k in (2, 3, 4):
        expected, _ = ir_measures_judged({"q1": distinct_scores(ranked["q1"])}, qrels, k)
        assert M.judged_at(ranked["q1"], qrels["q1"], k) == pytest.approx(expected["q1"])
    # The tie wholly inside the top 3: ir_measures given the file's own tied scores agrees too.
    expected, _ = ir_measures_judged({"q1": {"a": 3.0, "x": 2.0, "b": 2.0, "c": 1.0}}, qrels, 3)
    assert M.judged_at(ranked["q1"], qrels["q1"], 3) == pytest.approx(expected["q1"])


@settings(max_examples=200, deadline=None)
@given(
    ranked=st.lists(st.sampled_from(DOCS + ["u1", "u2", "u3"]), unique=True, min_size=1, max_size=10),
    rels=st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=8),
    k=st.integers(1, 12),
)
def test_judged_at_k_equals_ir_measures_on_random_lists(ranked, rels, k):
    expected, _ = ir_measures_judged({"q": distinct_scores(ranked)}, {"q": rels}, k)
    assert M.judged_at(ranked, rels, k) == pytest.approx(expected["q"])


def test_judged_at_k_of_an_empty_list_is_one_and_negative_relevance_is_unjudged():
    assert M.judged_at([], {"a": 1}, 5) == 1.0
    # -1 is trec_eval's "pooled, not judged": unjudged here, as for hole@k.
    assert M.judged_at(["a", "b"], {"a": -1, "b": 0}, 2) == 0.5


def test_condensed_ndcg_by_hand():
    ranked = ["u1", "a", "u2", "b", "c"]
    rels = {"a": 2, "b": 0, "c": 1, "d": 1}
    # Condensed list: a, b, c. DCG@3 = 2/log2(2) + 0/log2(3) + 1/log2(4) = 2 + 0 + 0.5 = 2.5.
    # Ideal gains 2, 1, 1: 2/1 + 1/log2(3) + 1/log2(4) = 2 + 0.6309298 + 0.5 = 3.1309298.
    assert M.condensed_ndcg_at(ranked, rels, 3) == pytest.approx(2.5 / 3.1309298, abs=1e-7)
    assert M.condensed_ndcg_at(ranked, rels, 3) == pytest.approx(0.7984848, abs=1e-6)
    # The full list's ndcg@3 sees only a at rank 2: (2/log2(3)) / 3.1309298 = 1.2618595 / 3.1309298 = 0.4030303.
    assert M.ndcg_at(ranked, rels, 3) == pytest.approx(0.4030303, abs=1e-6)
    assert M.get_metric("ndcg'@3")(ranked, rels) == pytest.approx(0.7984848, abs=1e-6)


def test_condensed_precision_by_hand():
    ranked = ["u1", "a", "u2", "b", "c"]
    rels = {"a": 1, "b": 0, "c": 1}
    # Condensed: a, b, c; 2 relevant in the top 3 over 3; P'@5 = 2/5 (still divided by k).
    assert M.condensed_precision_at(ranked, rels, 3) == pytest.approx(2 / 3)
    assert M.condensed_precision_at(ranked, rels, 5) == pytest.approx(2 / 5)
    assert M.precision_at(ranked, rels, 3) == pytest.approx(1 / 3)


def test_bpref_matches_trec_eval_on_its_test_files():
    qrels = trec.read_qrels(DATA / "qrels.test")
    run = trec.read_run(DATA / "results.test")
    lists = trec.ranked_lists(run)
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate({q: dict(v) for q, v in run.items()})
    for q, values in oracle.items():
        assert M.bpref(lists[q], qrels[q]) == pytest.approx(values["bpref"], abs=1e-12)
    # trec_eval's own printed mean, 4 decimals.
    line = next(x for x in (DATA / "out.test.a").read_text().splitlines() if x.startswith("bpref "))
    mean = sum(M.bpref(lists[q], qrels[q]) for q in oracle) / len(oracle)
    assert round(mean, 4) == float(line.split()[-1])


def test_bpref_by_hand_ignores_unjudged_documents():
    # R = 2 (a, c), N = 1 (b). a first: +1. c after one non-relevant: 1 - min(1, 2)/min(2, 1) = 0.
    assert M.bpref(["a", "u", "b", "c"], {"a": 1, "b": 0, "c": 1}) == pytest.approx(0.5)
    assert M.bpref(["u"], {"b": 0}) == 0.0
    assert math.isclose(M.bpref(["c", "a"], {"a": 1, "c": 1}), 1.0)


def test_reference_metrics_are_marked_and_named():
    for name in ("judged@5", "ndcg'@10", "precision'@5", "bpref"):
        assert M.get_metric(name).reference
        assert M.get_metric(name).name == name
    for name in ("recall@5", "ndcg@10", "hole@5", "mrr"):
        assert not M.get_metric(name).reference
    names = [m.name for m in M.benchmark_metrics([5, 24])]
    assert {"judged@5", "judged@24", "precision'@5", "precision'@24", "ndcg'@10", "bpref"} <= set(names)
    assert M.judged_cutoffs(names) == [5, 24]
