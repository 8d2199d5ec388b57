"""Metric definitions and TREC files, pinned against trec_eval's own output and hand-computed cases."""

from __future__ import annotations

import math
import random

import pytest
from bench_world import DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from goldenset.bench import metrics as M
from goldenset.bench import trec
from goldenset.errors import InputError, UsageError
from tests.helpers import METRICS_5_24, examples

# trec_eval measure name -> our canonical name
PINNED = {
    "map": "map",
    "recip_rank": "mrr",
    "P_5": "precision@5",
    "P_10": "precision@10",
    "recall_5": "recall@5",
    "recall_10": "recall@10",
    "ndcg_cut_10": "ndcg@10",
}


def _trec_eval_all(path):
    out = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        if qid == "all":
            out[name] = value
    return out


def _evaluate(run_path, qrels_path, names, policy=M.QueryPolicy.TREC_EVAL):
    run = trec.ranked_lists(trec.read_run(run_path))
    qrels = trec.read_qrels(qrels_path)
    per_query = M.evaluate(run, qrels, [M.get_metric(n) for n in names], policy=policy)
    return per_query, M.mean_over_queries(per_query, names)


def test_metrics_reproduce_trec_eval_on_its_own_test_files():
    expected = _trec_eval_all(DATA / "out.test.a")
    per_query, means = _evaluate(DATA / "results.test", DATA / "qrels.test", list(PINNED.values()))
    assert len(per_query) == int(expected["num_q"])
    for te_name, ours in PINNED.items():
        assert f"{means[ours]:.4f}" == expected[te_name], te_name


def test_trec_eval_test_run_has_ties_and_a_rank_column_we_ignore():
    # The parity above holds although results.test lists documents out of rank order:
    # trec_eval re-derives ranks from scores, and so do we.
    lines = (DATA / "results.test").read_text().splitlines()
    ranks = [int(line.split()[3]) for line in lines if line.split()[0] == "301"]
    assert ranks != sorted(ranks)


def test_tied_scores_rank_by_doc_id_descending_whatever_the_rank_column_says(tmp_path):
    run = tmp_path / "tied.run"
    run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq1 Q0 c 3 1.0 t\nq1 Q0 B 4 1.0 t\nq1 Q0 d 5 0.5 t\n")
    assert [d for d, _ in trec.read_run(run)["q1"]] == ["a", "c", "b", "B", "d"]


def test_metrics_on_a_run_with_ties_match_hand_computation(tmp_path):
    run = tmp_path / "tied.run"
    # trec order: q1 -> z, y, x (all tied); q2 -> m (3.0), n and k tied at 1.0 -> n, k
    run.write_text(
        "q1 Q0 x 1 1.0 t\nq1 Q0 y 2 1.0 t\nq1 Q0 z 3 1.0 t\nq2 Q0 k 1 1.0 t\nq2 Q0 n 2 1.0 t\nq2 Q0 m 3 3.0 t\n"
    )
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 x 1\nq1 0 z 0\nq1 0 w 1\nq2 0 k 2\nq2 0 n 1\nq2 0 m 0\n")
    per_query, _ = _evaluate(run, qrels, ["mrr", "map", "precision@5", "recall@5", "ndcg@10"])
    # q1: ranked z(0) y(-) x(1); relevant {x, w}
    assert per_query["q1"]["mrr"] == pytest.approx(1 / 3)
    assert per_query["q1"]["map"] == pytest.approx((1 / 3) / 2)
    assert per_query["q1"]["precision@5"] == pytest.approx(1 / 5)
    assert per_query["q1"]["recall@5"] == pytest.approx(1 / 2)
    # q2: ranked m(0) n(1) k(2); graded gains; ideal k(2) n(1)
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    idcg = 2 + 1 / math.log2(3)
    assert per_query["q2"]["ndcg@10"] == pytest.approx(dcg / idcg)
    assert per_query["q2"]["mrr"] == pytest.approx(1 / 2)
    assert per_query["q2"]["map"] == pytest.approx((1 / 2 + 2 / 3) / 2)


# One query of each kind a policy has to decide about.
POLICY_RUN = {"has_rel": ["a", "x"], "no_rel": ["b", "y"], "not_in_qrels": ["c"]}
POLICY_QRELS = {"has_rel": {"a": 1}, "no_rel": {"b": 0}, "missing_from_run": {"d": 1}, "no_judgment_left": {}}


def test_trec_eval_policy_averages_every_query_in_run_and_qrels_including_one_without_a_relevant_document():
    sel = M.select_queries(POLICY_RUN, POLICY_QRELS, M.QueryPolicy.TREC_EVAL)
    assert sel.evaluated == ("has_rel", "no_rel")
    assert sel.no_relevant == ("no_rel",)
    assert (sel.missing_from_run, sel.not_in_qrels, sel.skipped_no_relevant) == (
        ("missing_from_run",),
        ("not_in_qrels",),
        (),
    )
    per_query = M.evaluate(
        POLICY_RUN,
        POLICY_QRELS,
        [M.get_metric(n) for n in ("mrr", "noise@2", "hole@2")],
        policy=M.QueryPolicy.TREC_EVAL,
    )
    # no_rel: b judged 0, y never judged; mrr 0 as trec_eval says, noise and hole keep their value
    assert per_query["no_rel"] == {"mrr": 0.0, "noise@2": 0.5, "hole@2": 0.5}
    assert M.mean_over_queries(per_query, ["mrr"]) == {"mrr": 0.5}


def test_complete_policy_scores_a_qrels_query_missing_from_the_run_on_an_empty_list():
    sel = M.select_queries(POLICY_RUN, POLICY_QRELS, M.QueryPolicy.COMPLETE)
    assert sel.evaluated == ("has_rel", "missing_from_run", "no_rel")
    per_query = M.evaluate(POLICY_RUN, POLICY_QRELS, M.benchmark_metrics((1, 5)), policy=M.QueryPolicy.COMPLETE)
    # judged@k of an empty list is 1 (nothing in it is unjudged); every other metric is 0.
    assert {n: v for n, v in per_query["missing_from_run"].items() if not n.startswith("judged@")} == dict.fromkeys(
        [n for n in per_query["missing_from_run"] if not n.startswith("judged@")], 0.0
    )
    assert per_query["missing_from_run"]["judged@5"] == 1.0
    assert M.mean_over_queries(per_query, ["mrr"]) == {"mrr": pytest.approx(1 / 3)}


def test_skip_no_relevant_policy_leaves_out_and_reports_a_query_without_a_relevant_document():
    sel = M.select_queries(POLICY_RUN, POLICY_QRELS, M.QueryPolicy.SKIP_NO_RELEVANT)
    assert sel.evaluated == ("has_rel",)
    assert sel.skipped_no_relevant == ("no_rel",) and sel.no_relevant == ()
    per_query = M.evaluate(POLICY_RUN, POLICY_QRELS, [M.get_metric("mrr")], policy=M.QueryPolicy.SKIP_NO_RELEVANT)
    assert per_query == {"has_rel": {"mrr": 1.0}}


@pytest.mark.parametrize("policy", list(M.QueryPolicy))
def test_a_query_with_no_judgment_left_is_not_in_the_qrels_under_any_policy(policy):
    # A qrels file cannot name a query without a judgment; the golden set can (every
    # label stale and left out), and trec_eval never sees such a query.
    run = {"no_judgment_left": ["a"], "has_rel": ["a"]}
    assert M.evaluated_queries(run, {"has_rel": {"a": 1}, "no_judgment_left": {}}, policy) == ["has_rel"]


def test_the_default_policy_of_evaluate_is_trec_eval():
    assert list(M.evaluate(POLICY_RUN, POLICY_QRELS, [M.get_metric("mrr")])) == ["has_rel", "no_rel"]


def test_an_unknown_policy_name_is_refused():
    with pytest.raises(ValueError, match="'trec'"):
        M.select_queries(POLICY_RUN, POLICY_QRELS, "trec")


def test_eval_cut_offs_default_to_the_documented_set_and_follow_k_sorted_and_distinct():
    assert M.eval_metric_names(None) == (
        "recall@5",
        "recall@10",
        "recall@24",
        "precision@5",
        "precision@10",
        "ndcg@10",
        "mrr",
        "map",
    )
    assert M.eval_metric_names([10, 3, 10]) == (
        "recall@3",
        "recall@10",
        "precision@3",
        "precision@10",
        "ndcg@10",
        "mrr",
        "map",
    )


@pytest.mark.parametrize("k", [0, -5])
def test_a_cut_off_below_one_is_a_usage_error_quoting_it(k):
    with pytest.raises(UsageError) as exc:
        M.eval_metric_names([5, k])
    assert str(exc.value) == f"cut-off --k {k} is not a whole number >= 1; give --k 5 or another positive k"


def test_empty_ranked_list_scores_zero_everywhere_but_judged():
    rels = {"a": 1, "b": 0}
    for m in M.benchmark_metrics((5, 24)):
        # judged@k: nothing in an empty list is unjudged, so nothing counts as a miss for want of a label.
        assert m([], rels) == (1.0 if m.family == "judged" else 0.0), m.name


def test_k_beyond_the_list_divides_by_k():
    rels = {"a": 1, "b": 0}
    ranked = ["a", "b", "c"]
    assert M.get_metric("precision@10")(ranked, rels) == pytest.approx(0.1)
    assert M.get_metric("noise@10")(ranked, rels) == pytest.approx(0.1)
    assert M.get_metric("hole@10")(ranked, rels) == pytest.approx(0.1)
    assert M.get_metric("recall@24")(ranked, rels) == 1.0


def test_noise_counts_judged_non_relevant_and_hole_counts_never_judged():
    rels = {"helped": 1, "noise": 0, "wrong": 0}
    ranked = ["helped", "noise", "unjudged", "wrong", "other"]
    assert M.get_metric("noise@5")(ranked, rels) == pytest.approx(2 / 5)
    assert M.get_metric("hole@5")(ranked, rels) == pytest.approx(2 / 5)
    assert M.get_metric("precision@5")(ranked, rels) == pytest.approx(1 / 5)


@given(
    ranked=st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10),
    rels=st.dictionaries(st.sampled_from("abcdefghijkl"), st.integers(0, 2), max_size=12),
    k=st.integers(1, 12),
)
def test_precision_noise_and_hole_partition_the_filled_slots(ranked, rels, k):
    total = sum(M.get_metric(f"{f}@{k}")(ranked, rels) for f in ("precision", "noise", "hole"))
    assert total == pytest.approx(min(len(ranked), k) / k)


@given(
    ranked=st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10),
    rels=st.dictionaries(st.sampled_from("abcdefghijkl"), st.integers(0, 3), min_size=1, max_size=12),
)
def test_metrics_stay_between_zero_and_one(ranked, rels):
    for m in M.benchmark_metrics((1, 5, 24)):
        assert 0.0 <= m(ranked, rels) <= 1.0 + 1e-12, m.name


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 10_000))
def test_metrics_do_not_depend_on_the_order_of_run_lines(tmp_path_factory, seed):
    lines = (DATA / "results.test").read_text().splitlines()
    random.Random(seed).shuffle(lines)
    shuffled = tmp_path_factory.mktemp("shuffled") / "run"
    shuffled.write_text("\n".join(lines) + "\n")
    names = list(PINNED.values())
    _, a = _evaluate(DATA / "results.test", DATA / "qrels.test", names)
    _, b = _evaluate(shuffled, DATA / "qrels.test", names)
    assert a == b


def test_a_written_run_reads_back_in_the_same_order_even_with_tied_scores(tmp_path):
    ordered = {"q": [("b", 1.0), ("a", 1.0), ("c", 1.0)]}  # our order is not trec's tie order
    back = trec.read_run(trec.write_run(tmp_path / "r.run", ordered, "tag"))
    assert [d for d, _ in back["q"]] == ["b", "a", "c"]


def test_a_document_listed_twice_for_one_query_is_refused_like_trec_eval(tmp_path):
    run = tmp_path / "dup.run"
    run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 a 2 1.0 t\n")
    with pytest.raises(InputError, match=r"line 2: query q1 lists document a twice \(first on line 1\)"):
        trec.read_run(run)


def test_a_qrels_judging_a_document_twice_is_refused(tmp_path):
    qrels = tmp_path / "dup.qrels"
    qrels.write_text("q1 0 a 1\nq1 0 a 0\n")
    with pytest.raises(InputError, match="line 2: query q1 judges document a twice"):
        trec.read_qrels(qrels)


@pytest.mark.parametrize(
    "line, message",
    [
        ("q1 Q0 a 1 2.0", "line 1: expected 6 fields `query_id Q0 doc_id rank score tag`, got 5: 'q1 Q0 a 1 2.0'"),
        ("q1 Q0 a 1 high t", "line 1: score 'high' is not a number"),
        ("q1 Q0 a 1 nan t", "line 1: score is NaN"),
    ],
)
def test_malformed_run_lines_are_refused_with_file_and_line(tmp_path, line, message):
    run = tmp_path / "bad.run"
    run.write_text(line + "\n")
    with pytest.raises(InputError) as exc:
        trec.read_run(run)
    assert str(exc.value).startswith(f"run {run} {message}")


def test_malformed_qrels_relevance_is_refused(tmp_path):
    qrels = tmp_path / "bad.qrels"
    qrels.write_text("\nq1 0 a yes\n")
    with pytest.raises(InputError, match=r"line 2: relevance 'yes' is not an integer"):
        trec.read_qrels(qrels)


def test_beir_qrels_with_their_header_read_like_the_same_trec_qrels(tmp_path):
    beir = tmp_path / "test.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td1\t-1\n\nq2\td3\t3\n")
    assert trec.read_qrels(beir) == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": -1, "d3": 3}}


def test_beir_header_after_a_byte_order_mark_is_recognised(tmp_path):
    beir = tmp_path / "test.tsv"
    beir.write_text("\ufeffquery-id\tcorpus-id\tscore\r\nq1\td1\t2\r\n", encoding="utf-8")
    assert trec.read_qrels(beir) == {"q1": {"d1": 2}}


def test_trec_qrels_separated_by_tabs_are_still_trec(tmp_path):
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1\t0\td1\t1\nq1 0 d2 0\n")
    assert trec.read_qrels(qrels) == {"q1": {"d1": 1, "d2": 0}}


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "q1\td1\t1\n",
            "line 1: expected 4 fields `query_id iteration doc_id relevance`, got 3: 'q1\\td1\\t1'; "
            "for BEIR qrels start the file with the header `query-id<TAB>corpus-id<TAB>score`",
        ),
        (
            "query-id corpus-id score\nq1 d1 1\n",
            "line 1: expected 4 fields `query_id iteration doc_id relevance`, got 3: 'query-id corpus-id score'; "
            "a BEIR header separates its three names with tabs",
        ),
        (
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\t0\td2\t1\n",
            "line 3: expected 3 tab-separated fields `query-id corpus-id score` (BEIR, as the header says), "
            "got 'q1\\t0\\td2\\t1'",
        ),
        (
            "query-id\tcorpus-id\tscore\nq1\tdoc one\t1\n",
            "line 2: id with white space in 'q1\\tdoc one\\t1'; no TREC run can name it, rename the query or document",
        ),
        ("query-id\tcorpus-id\tscore\nq1\td1\tyes\n", "line 2: relevance 'yes' is not an integer"),
        (
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t0\n",
            "line 3: query q1 judges document d1 twice (first on line 2); keep one judgment",
        ),
        ("q1 0 d1 1_0\n", "line 1: relevance '1_0' is not an integer"),
        ("q1 0 d1 1.5\n", "line 1: relevance '1.5' is not an integer"),
    ],
)
def test_qrels_in_neither_format_are_refused_with_file_line_and_what_to_do(tmp_path, text, message):
    qrels = tmp_path / "bad.qrels"
    qrels.write_text(text)
    with pytest.raises(InputError) as exc:
        trec.read_qrels(qrels)
    assert str(exc.value) == f"qrels {qrels} {message}"


def test_missing_run_file_says_so(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        trec.read_run(tmp_path / "nope.run")


@pytest.mark.parametrize("name", ["recall", "recall@0", "mrr@5", "f1@5", "ndcg@x"])
def test_unknown_metric_names_are_usage_errors(name):
    with pytest.raises(UsageError, match="unknown metric"):
        M.get_metric(name)


def test_canonical_names_are_normalised():
    assert M.get_metric("Recall@5").name == "recall@5"
    assert M.get_metric("MAP").name == "map"
    assert [m.name for m in M.benchmark_metrics((5, 24))] == list(METRICS_5_24)
