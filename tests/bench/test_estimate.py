"""Prediction-powered benchmark numbers (contract 12.2): which labels the prediction and the truth read,
and `bench run` / `bench compare` with `--estimate ppi` end to end on the benchmark's tiny world."""

from __future__ import annotations

import json
import math
import sys
from datetime import datetime
from pathlib import Path

import pytest
from bench_world import QUERIES
from typer.testing import CliRunner

HERE = Path(__file__).resolve().parent
LABELLING = HERE.parent / "labelling"
if str(LABELLING) not in sys.path:
    sys.path.insert(0, str(LABELLING))

from label_lines import label_line, write_and_ingest  # noqa: E402
from pool_rankers import DAY, FIRST, Q1, Q2, SECOND, build_world  # noqa: E402

from goldenset import warehouse  # noqa: E402
from goldenset.bench.estimate import (  # noqa: E402
    EstimateLabels,
    QueryValues,
    RunEstimates,
    compare_estimates,
    estimate_labels,
    estimate_rows,
    load_estimates,
    ppi_line,
    printed,
    query_values,
)
from goldenset.bench.metrics import get_metric  # noqa: E402
from goldenset.bench.ppi import ppi_mean  # noqa: E402
from goldenset.build import build_golden_set  # noqa: E402
from goldenset.cli.bench import app as bench_app  # noqa: E402
from goldenset.errors import UsageError  # noqa: E402
from goldenset.labelling.merge import JudgeGate  # noqa: E402
from goldenset.labelling.pool import run_pool  # noqa: E402
from goldenset.records import normalise_task, query_id  # noqa: E402
from tests.helpers import isolated_settings  # noqa: E402

runner = CliRunner()


# --------------------------------------------------------------------------- the labels, by hand


def audited_pool_world(tmp: Path, admitted: bool = False):
    """pool_rankers.py's world, audited in full on Q2, with judge `jj`'s labels; returns its db.

    `admitted`: humans audit Q1's asked pairs too and the judge labels j on Q2, a pair no audit asked, so the
    gate (at kappa >= -1) has two audited queries and admits the judge: j and c become judge rows."""
    world = build_world(tmp)
    con = warehouse.connect(world.db)
    try:
        run_pool(
            con,
            rankers=(FIRST, SECOND),
            depth=5,
            index_dir=world.index_dir,
            audit=2,
            seed=0,
            now=datetime(2026, 11, 30, 8),
        )
        asked = {(q, d) for q, d in con.execute("SELECT query_id, doc_id FROM audit_pairs").fetchall()}
        assert {d for q, d in asked if q == Q2} == {"k", "n", "i", "f2"}
        # Humans on Q2's audit pairs: k (log noise) relevant, n (log helped) irrelevant, i partial, f2 irrelevant.
        human = {"k": 2, "n": 0, "i": 1, "f2": 0}
        lines = [label_line(Q2, d, "v1", g, "ben", f"2026-11-30T09:00:0{i}Z") for i, (d, g) in enumerate(human.items())]
        if admitted:
            q1 = {"a": ("v1", 1), "g": ("v1", 2), "h": ("v1", 0), "j": ("v1", 0), "m": ("v2", 0)}
            lines += [
                label_line(Q1, d, v, g, "ben", f"2026-11-30T09:01:0{i}Z") for i, (d, (v, g)) in enumerate(q1.items())
            ]
        # The judge: on Q2 k irrelevant, n relevant, i relevant, f2 partial; on Q1 g partial, h irrelevant,
        # c (a stale log row) relevant, and p (retired: no ranker can return it) relevant.
        judge = [
            (Q2, "k", 0),
            (Q2, "n", 2),
            (Q2, "i", 2),
            (Q2, "f2", 1),
            (Q1, "g", 1),
            (Q1, "h", 0),
            (Q1, "c", 2),
            (Q1, "p", 2),
        ] + [(Q2, "j", 2)] * admitted
        lines += [
            label_line(q, d, "v1", g, "jj", f"2026-11-30T10:00:0{i}Z", kind="judge")
            for i, (q, d, g) in enumerate(judge)
        ]
        write_and_ingest(con, tmp / "labels", DAY, "audit.jsonl", lines)
        gate = JudgeGate(min_pairs=1, min_kappa=-1.0) if admitted else JudgeGate()
        build_golden_set(con, now=datetime(2026, 11, 30, 12), judge_gate=gate)
    finally:
        con.close()
    return world.db


@pytest.fixture(scope="module")
def audited_db(tmp_path_factory) -> Path:
    """audited_pool_world's db, made once for the module; its tests only read it."""
    base = tmp_path_factory.mktemp("audited")
    with isolated_settings(base / "home"):
        return audited_pool_world(base / "w")


@pytest.fixture
def labels(audited_db) -> EstimateLabels:
    db = audited_db
    con = warehouse.connect(db, read_only=True)
    try:
        return estimate_labels(con, "jj")
    finally:
        con.close()


def test_the_truth_is_the_audits_human_labels_on_audited_queries_only(labels):
    assert labels.audit.audited == (Q2,)
    assert labels.truth == {Q2: {"k": 2, "n": 0, "i": 1, "f2": 0}}


def test_the_prediction_never_sees_an_audit_label(labels):
    # k and n: the log labels the audit's human labels replaced (noise 0, helped 1); i and f2: the judge's.
    assert labels.prediction[Q2] == {"k": 0, "n": 1, "i": 2, "f2": 1}


def test_on_an_audited_pair_the_replaced_log_label_wins_over_the_judge(labels):
    # n: the log said helped (1), the audit's human irrelevant (0) replaced it, the judge says relevant (2).
    # Contract 12.2 (2): the log label it replaced comes first, the judge's only when there is none.
    assert labels.prediction[Q2]["n"] == 1
    assert labels.truth[Q2]["n"] == 0


@pytest.mark.slow
def test_an_admitted_judges_rows_count_in_the_prediction_and_never_in_the_truth(tmp_path):
    with isolated_settings(tmp_path / "home"):
        db = audited_pool_world(tmp_path / "w", admitted=True)
    con = warehouse.connect(db, read_only=True)
    try:
        judge_rows = con.execute("SELECT query_id, doc_id, grade FROM golden_set WHERE source = 'judge'").fetchall()
        labels = estimate_labels(con, "jj")
    finally:
        con.close()
    # j on Q2 (no audit asked it) and c on Q1 (its log row stale): the admitted judge's rows.
    assert sorted(judge_rows) == sorted([(Q2, "j", 2), (Q1, "c", 2)])
    assert (labels.prediction[Q2]["j"], labels.prediction[Q1]["c"]) == (2, 2)
    assert sorted(labels.truth) == sorted([Q1, Q2])
    assert ("j" in labels.truth[Q2], "c" in labels.truth[Q1]) == (False, False)


def test_the_judge_fills_pairs_the_other_sources_leave_open(labels):
    # Q1's golden rows (a helped, b helped, c noise, m wrong) stay; the judge adds g and h.
    assert labels.prediction[Q1] == {"a": 1, "b": 1, "c": 0, "m": 0, "g": 1, "h": 0}


def test_with_exclude_stale_a_stale_row_left_out_frees_its_pair_for_the_judge(audited_db):
    # Q1's stale rows (b version_changed, c and m superseded) leave the qrels; the judge's label on c fills c.
    con = warehouse.connect(audited_db, read_only=True)
    try:
        fresh = estimate_labels(con, "jj", exclude_stale=True)
    finally:
        con.close()
    assert fresh.prediction[Q1] == {"a": 1, "c": 2, "g": 1, "h": 0}


def test_a_judge_label_on_a_document_not_active_in_the_snapshot_fills_no_pair(audited_db, labels):
    # p is retired in the build's snapshot: the judge's current label on it is there, and left out.
    con = warehouse.connect(audited_db, read_only=True)
    try:
        held = con.execute("SELECT grade FROM current_labels WHERE annotator = 'jj' AND doc_id = 'p'").fetchall()
    finally:
        con.close()
    assert held == [(2,)] and "p" not in labels.prediction[Q1]


def test_the_replaced_log_labels_are_a_public_view(audited_db):
    # Rule (2) reads overridden_log_labels: Q2's k (noise) and n (helped), which the audit's human rows replaced.
    con = warehouse.connect(audited_db, read_only=True)
    try:
        rows = con.execute(
            "SELECT query_id, doc_id, source, verdict, grade FROM overridden_log_labels ORDER BY ALL"
        ).fetchall()
        golden = con.execute("SELECT source FROM golden_set WHERE query_id = ? AND doc_id = 'k'", [Q2]).fetchall()
    finally:
        con.close()
    assert rows == [(Q2, "k", "log", "noise", 0), (Q2, "n", "log", "helped", 1)] and golden == [("human",)]


def test_the_per_query_values_and_the_estimate_follow_from_the_two_qrels(labels):
    # precision@2 on fixed lists. Q1 [g, a]: prediction 2/2 = 1. Q2 [k, i]: prediction (k 0, i 2) 1/2,
    # truth (k 2, i 1) 2/2 = 1. PPI (lambda 1) = mean(1, 1/2) - (1/2 - 1) = 5/4, clamped into precision's
    # [0, 1]: 1; human-only 1 on one query.
    ranked = {"core": {Q1: ["g", "a"], Q2: ["k", "i"]}}
    (v,) = query_values(ranked, {"core": [Q1, Q2]}, labels, [get_metric("precision@2")])
    assert v.prediction == {Q1: 1.0, Q2: 0.5} and v.truth == {Q2: 1.0}
    (e,) = estimate_rows([v], lam=1.0)
    assert e.estimate is not None
    assert (e.estimate.estimate, e.estimate.human, e.estimate.n_audited) == (1.0, 1.0, 1)
    assert e.estimate.mean_prediction - e.estimate.correction == 1.25
    # One audited query: no interval to estimate, so the whole range.
    assert (e.estimate.lo, e.estimate.hi) == (0.0, 1.0)


def test_a_judge_without_labels_is_refused_naming_the_command(audited_db):
    con = warehouse.connect(audited_db, read_only=True)
    try:
        with pytest.raises(UsageError, match="judge label --annotator nobody"):
            estimate_labels(con, "nobody")
    finally:
        con.close()


# --------------------------------------------------------------------------- bench run and compare


def _qid(task: str) -> str:
    return query_id("demo", normalise_task(task))


HELPED = {_qid(task): set(helped) for task, helped, _ in QUERIES}


def audited_bench_world(tmp: Path, goldens, judge_agrees: bool, audit: int = 6):
    """The benchmark's world, `audit` of its 6 queries audited by humans (helped documents relevant, the rest
    not), and judge `jj` on every audit pair: agreeing with the humans, or calling every pair partial."""
    g = goldens(tmp)
    con = warehouse.connect(g.db)
    try:
        run_pool(con, rankers=("bench_plugins:keywords",), depth=4, index_dir=g.index_dir, audit=audit, seed=3)
        asked = con.execute("SELECT query_id, doc_id FROM audit_pairs ORDER BY ALL").fetchall()
        lines = []
        for i, (q, d) in enumerate(asked):
            truth = 2 if d in HELPED[q] else 0
            ts = f"2026-11-28T12:{i // 60:02d}:{i % 60:02d}Z"
            lines.append(label_line(q, d, "1", truth, "ben", ts))
            lines.append(label_line(q, d, "1", truth if judge_agrees else 1, "jj", ts, kind="judge"))
        write_and_ingest(con, tmp / "labels", "2026-11-28", "audit.jsonl", lines)
        build_golden_set(con)
    finally:
        con.close()
    return g


def bench_run(g, retriever: str, *extra):
    result = runner.invoke(
        bench_app,
        [
            "run",
            "--db",
            str(g.db),
            "--corpus",
            str(g.corpus),
            "--index-dir",
            str(g.index_dir),
            "--retriever",
            retriever,
            "--report",
            str(g.root / f"report-{retriever.split(':')[1]}"),
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output
    return result


def stored(g, run_id: str):
    con = warehouse.connect(g.db, read_only=True)
    try:
        summary = json.loads(
            con.execute("SELECT estimate FROM benchmark_runs WHERE run_id = ?", [run_id]).fetchone()[0]
        )
        values = con.execute(
            "SELECT query_id, prediction, truth FROM benchmark_estimates "
            "WHERE run_id = ? AND row_name = 'core' AND metric = 'recall@5' ORDER BY query_id",
            [run_id],
        ).fetchall()
    finally:
        con.close()
    return summary, values


def stored_mean(g, run_id: str, metric: str) -> float:
    con = warehouse.connect(g.db, read_only=True)
    try:
        return con.execute(
            "SELECT value FROM benchmark_results WHERE run_id = ? AND row_name = 'core' AND query_id = 'all' "
            "AND metric = ?",
            [run_id, metric],
        ).fetchone()[0]
    finally:
        con.close()


def run_id_of(result) -> str:
    return result.output.rstrip().splitlines()[-1].removeprefix("run_id: ")


@pytest.mark.slow
def test_bench_run_prints_the_deciding_estimates_and_stores_them_all(tmp_path, goldens):
    g = audited_bench_world(tmp_path / "g", goldens, judge_agrees=False, audit=4)
    result = bench_run(g, "bench_plugins:keywords", "--estimate", "ppi", "--judge", "jj")
    assert "prediction-powered estimates, judge jj, uniform audit of pool 1" in result.output
    lines = [x.strip() for x in result.output.splitlines() if ": PPI" in x or "no PPI estimate" in x]
    # The deciding row's deciding metrics, in the run's order; hole@k, judged@k, the references and the
    # reference rows stay in the stored JSON.
    deciding = ["recall@5", "recall@24", "precision@5", "precision@24", "ndcg@10", "mrr", "map", "noise@5", "noise@24"]
    assert [x.split(":")[0] for x in lines] == [f"core {m}" for m in deciding]
    assert all(" at lambda " in x and "(tuned)" in x and "human-only" in x for x in lines)
    summary, values = stored(g, run_id_of(result))
    assert summary["judge"] == "jj" and summary["design"] == "finite" and summary["lambda"] == "tuned"
    assert summary["audit"]["audited"] == summary["audit"]["sample_size"] == 4
    assert summary["audit"]["design"] == "uniform"
    stored_keys = {(e["row"], e["metric"]) for e in summary["estimates"]}
    assert ("core", "hole@5") in stored_keys and ("+graph", "judged@24") in stored_keys
    est = next(e for e in summary["estimates"] if e["row"] == "core" and e["metric"] == "recall@5")
    # The stored estimate is the estimator applied to the stored per-query values, in recall's range.
    expected = ppi_mean(
        [p for _, p, _ in values],
        [p for _, p, t in values if t is not None],
        [t for _, _, t in values if t is not None],
        bounds=(0.0, 1.0),
    )
    assert est["estimate"] == round(expected.estimate, 4) and est["n_audited"] == expected.n_audited == 4
    assert est["lambda"] == round(expected.lam, 4) and est["lambda_rule"] == "tuned"
    assert all(0 <= e["lo"] <= e["hi"] <= 1 for e in summary["estimates"] if e["lo"] is not None)


@pytest.mark.slow
def test_a_judge_that_agrees_with_the_humans_gives_the_truth_with_no_width(tmp_path, goldens):
    g = audited_bench_world(tmp_path / "g", goldens, judge_agrees=True)
    # The design and lambda of ppi-python's classical interval, from the command line.
    args = ("--estimate", "ppi", "--judge", "jj", "--design", "independent", "--ppi-lambda", "1", "--json")
    printed_json = json.loads(bench_run(g, "bench_plugins:keywords", *args).output)
    summary, values = stored(g, printed_json["run_id"])
    assert all(p == t for _, p, t in values)
    # `bench run --json`: the run, every row's means as stored, and the stored estimate object.
    assert printed_json["estimate"] == summary and printed_json["report"].endswith("report.md")
    assert list(printed_json["row_means"]) == ["core", "+graph", "+graph+boosts", "+graph+boosts honest"]
    assert printed_json["row_means"]["core"]["recall@5"] == stored_mean(g, printed_json["run_id"], "recall@5")
    assert summary["design"] == "independent" and summary["lambda"] == 1.0
    assert {(e["design"], e["lambda"], e["lambda_rule"]) for e in summary["estimates"]} == {
        ("independent", 1.0, "fixed")
    }


@pytest.mark.slow
def test_bench_compare_reads_the_verdict_from_the_ppi_interval(tmp_path, goldens):
    g = audited_bench_world(tmp_path / "g", goldens, judge_agrees=False)
    a = run_id_of(bench_run(g, "bench_plugins:worst", "--estimate", "ppi", "--judge", "jj"))
    b = run_id_of(bench_run(g, "bench_plugins:perfect", "--estimate", "ppi", "--judge", "jj"))
    result = runner.invoke(
        bench_app, ["compare", a, b, "--db", str(g.db), "--estimate", "ppi", "--metric", "recall@5", "--json"]
    )
    assert result.exit_code == 0, result.output
    (e,) = json.loads(result.output)["estimates"]
    assert e["metric"] == "recall@5" and e["verdict"] in ("better", "indistinguishable")
    assert e["lo"] <= e["estimate"] <= e["hi"]


@pytest.mark.slow
def test_bench_compare_refuses_a_run_made_without_an_estimate(tmp_path, goldens):
    g = audited_bench_world(tmp_path / "g", goldens, judge_agrees=False)
    a = run_id_of(bench_run(g, "bench_plugins:keywords"))
    result = runner.invoke(bench_app, ["compare", a, a, "--db", str(g.db), "--estimate", "ppi"])
    assert isinstance(result.exception, UsageError)
    assert f"run {a} has no prediction-powered estimate" in str(result.exception)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--estimate", "ppi"], "--estimate ppi needs --judge NAME"),
        (["--judge", "jj"], "add --estimate ppi"),
        (["--estimate", "bayes", "--judge", "jj"], "--estimate 'bayes' is not known"),
        (["--estimate", "ppi", "--judge", "jj", "--ppi-lambda", "1.25"], "--ppi-lambda '1.25' is neither"),
        (["--estimate", "ppi", "--judge", "jj", "--design", "bayes"], "design 'bayes' is not one of"),
        (["--design", "independent"], "--design and --ppi-lambda only apply to an estimate"),
        (["--ppi-lambda", "1"], "--design and --ppi-lambda only apply to an estimate"),
    ],
)
def test_bad_estimate_options_are_usage_errors(tmp_path, args, message, goldens):
    g = goldens(tmp_path / "g")
    result = runner.invoke(
        bench_app, ["run", "--db", str(g.db), "--corpus", str(g.corpus), "--retriever", "bench_plugins:keywords", *args]
    )
    assert isinstance(result.exception, UsageError) and message in str(result.exception)


# --------------------------------------------------------------------------- compare, lines, what is printed


def _values(row: str, metric: str, pred: dict[str, float], truth: dict[str, float]) -> QueryValues:
    return QueryValues(row, metric, dict(pred), dict(truth))


def _run(judge: str, pool_id: int, values: list[QueryValues], design: str = "finite") -> RunEstimates:
    return RunEstimates(judge, design, {"pool_id": pool_id}, tuple(values), tuple(estimate_rows(values, design)))


A_PRED = {"q1": 0.2, "q2": 0.4, "q3": 0.6, "q4": 0.8, "q5": 1.0}
B_PRED = {"q1": 0.5, "q2": 0.5, "q3": 0.75, "q4": 1.0, "q5": 1.0}


def test_compare_of_runs_on_different_audits_names_both_runs_and_their_audits():
    a = _run("jj", 3, [_values("core", "recall@5", A_PRED, {"q1": 0.25})])
    b = _run("jj", 4, [_values("core", "recall@5", B_PRED, {"q1": 0.5})])
    with pytest.raises(UsageError) as err:
        compare_estimates(a, b, ("RUN-A", "RUN-B"), "core", ["recall@5"])
    message = str(err.value)
    assert "run RUN-A has judge 'jj', the audit of pool 3, design finite" in message
    assert "run RUN-B has judge 'jj', the audit of pool 4, design finite" in message
    c = _run("other", 3, [_values("core", "recall@5", B_PRED, {"q1": 0.5})])
    with pytest.raises(UsageError, match="run RUN-A has judge 'jj'.*run RUN-C has judge 'other', the audit of pool 3"):
        compare_estimates(a, c, ("RUN-A", "RUN-C"), "core", ["recall@5"])


def test_compare_tunes_lambda_on_the_differences_and_clamps_into_minus_1_1():
    truth_a = {"q1": 0.25, "q2": 0.5, "q4": 0.75}
    truth_b = {"q1": 0.5, "q2": 0.5, "q4": 1.0}
    a = _run("jj", 3, [_values("core", "ndcg@10", A_PRED, truth_a)])
    b = _run("jj", 3, [_values("core", "ndcg@10", B_PRED, truth_b)])
    (e,) = compare_estimates(a, b, ("A", "B"), "core", ["ndcg@10"])
    queries = sorted(A_PRED)
    diff = {q: B_PRED[q] - A_PRED[q] for q in queries}
    audited = sorted(truth_a)
    expected = ppi_mean(
        [diff[q] for q in queries],
        [diff[q] for q in audited],
        [truth_b[q] - truth_a[q] for q in audited],
        bounds=(-1.0, 1.0),
    )
    assert e.estimate == expected and e.estimate.lam_rule == "tuned"
    # Two audited queries and lambda fitted inside (0, 1): no degree of freedom left, so the whole of [-1, 1].
    a2 = _run("jj", 3, [_values("core", "ndcg@10", A_PRED, {"q1": 0.25, "q2": 0.5})])
    b2 = _run("jj", 3, [_values("core", "ndcg@10", B_PRED, {"q1": 0.375, "q2": 0.5})])
    (wide,) = compare_estimates(a2, b2, ("A", "B"), "core", ["ndcg@10"])
    assert wide.estimate is not None and 0 < wide.estimate.lam < 1
    assert (wide.estimate.lo, wide.estimate.hi, wide.verdict) == (-1.0, 1.0, "indistinguishable")
    (fixed,) = compare_estimates(a, b, ("A", "B"), "core", ["ndcg@10"], lam=1.0)
    assert fixed.estimate is not None and fixed.estimate.lam == 1.0 and fixed.estimate.method == "PPI"


def test_a_row_without_an_audited_query_says_why_and_what_to_do_apart():
    (e,) = estimate_rows([_values("core", "recall@5", A_PRED, {})])
    assert e.to_json() == {
        "row": "core",
        "metric": "recall@5",
        "reason": "no audited query among the measured ones",
        "hint": "label the audit's pairs, then `goldenset build`",
    }
    assert ppi_line(e) == (
        "core recall@5: no PPI estimate (no audited query among the measured ones); "
        "label the audit's pairs, then `goldenset build`"
    )
    a = _run("jj", 3, [_values("core", "recall@5", A_PRED, {})])
    (d,) = compare_estimates(a, a, ("A", "B"), "core", ["recall@5"])
    assert d.to_json() == {
        "row": "core",
        "metric": "recall@5",
        "verdict": None,
        "reason": "no audited query among the measured ones",
        "hint": "label the audit's pairs, then `goldenset build`",
    }
    (x,) = estimate_rows([_values("core", "recall@5", A_PRED, {"q1": 0.25, "q2": 0.5})])
    assert x.to_json()["reason"] is None and "hint" not in x.to_json()


def test_compare_with_another_judge_names_the_run_its_judge_and_what_to_do():
    a = _run("jj", 3, [_values("core", "recall@5", A_PRED, {"q1": 0.25})])
    with pytest.raises(UsageError) as err:
        compare_estimates(a, a, ("RUN-A", "RUN-B"), "core", ["recall@5"], judge="other")
    assert str(err.value) == (
        "run RUN-A was estimated with judge 'jj', not 'other' (--judge); compare without --judge, or estimate "
        "the run again with `goldenset bench run --estimate ppi --judge other`"
    )


W2 = json.loads((HERE / "data" / "w2_compare_precision5.json").read_text())


def test_the_reviewers_w2_comparison_is_0_with_no_width_whatever_the_roundoff():
    # Active audit, 15 audited of 59 queries: on the audited queries t_B - t_A = p_B - p_A, so the slope is 1,
    # the residuals do not vary, and the estimate is 0. In doubles lambda came out 0.9999999999999997 (k = 2),
    # the point -1.2e-17 and the interval [-2.8e-17, 2.8e-18]: a point interval below 0 would have read `worse`.
    a, b = (QueryValues("core", "precision@5", W2[s]["prediction"], W2[s]["truth"], W2[s]["inclusion"]) for s in "ab")
    (e,) = compare_estimates(_run("jj", 3, [a]), _run("jj", 3, [b]), ("A", "B"), "core", ["precision@5"])
    x = e.estimate
    assert x is not None and (x.lam, x.variance, x.sampling) == (1.0, 0.0, "active")
    assert (x.lo, x.estimate, x.hi, e.verdict, x.ess_gain) == (0.0, 0.0, 0.0, "indistinguishable", math.inf)
    j = e.to_json()
    assert [math.copysign(1.0, j[k]) for k in ("estimate", "lo", "hi")] == [1.0, 1.0, 1.0]
    assert ppi_line(e).startswith(
        "core precision@5: PPI++ 0.0000 [0.0000, 0.0000] at lambda 1.0000 (tuned) indistinguishable; human-only "
    )
    assert ppi_line(e).endswith("on 15 audited of 59 queries; effective sample size gain inf")


def test_only_the_deciding_metrics_of_the_row_are_printed():
    values = [
        _values(row, m, A_PRED, {"q1": 0.25, "q2": 0.5})
        for row in ("core", "+graph")
        for m in ("recall@5", "hole@5", "judged@5", "ndcg'@10", "noise@5", "mrr")
    ]
    rows = estimate_rows(values)
    assert [(e.row, e.metric) for e in printed(rows, "core")] == [
        ("core", "recall@5"),
        ("core", "noise@5"),
        ("core", "mrr"),
    ]
    assert len(printed(rows, None)) == 6


def test_the_printed_line_names_the_method_lambda_and_gain():
    (e,) = estimate_rows([_values("core", "recall@5", A_PRED, {"q1": 0.25, "q2": 0.5, "q4": 0.75})], lam=1.0)
    x = e.estimate
    assert x is not None
    assert ppi_line(e) == (
        f"core recall@5: PPI {x.estimate:.4f} [{x.lo:.4f}, {x.hi:.4f}] at lambda 1.0000 (fixed); human-only "
        f"{x.human:.4f} [{x.human_lo:.4f}, {x.human_hi:.4f}] on 3 audited of 5 queries; effective sample size "
        f"gain {x.ess_gain:.2f}x"
    )
    (p,) = estimate_rows([_values("core", "recall@5", A_PRED, {"q1": 0.2, "q2": 0.4})])
    assert ppi_line(p).startswith("core recall@5: PPI++ 0.6000 [0.6000, 0.6000] at lambda 1.0000 (tuned);")
    assert ppi_line(p).endswith("effective sample size gain inf")


def test_a_run_stored_before_lambda_was_tuned_reads_as_lambda_1(tmp_path):
    con = warehouse.connect(tmp_path / "g.duckdb")
    try:
        summary = {"method": "ppi", "judge": "jj", "design": "finite", "audit": {"pool_id": 1}, "estimates": []}
        con.execute("INSERT INTO benchmark_runs (run_id, estimate) VALUES ('old', ?)", [json.dumps(summary)])
        rows = [("old", "core", q, "recall@5", A_PRED[q], t) for q, t in (("q1", 0.25), ("q2", 0.5), ("q3", None))]
        rows += [("old", "core", q, "recall@5", A_PRED[q], None) for q in ("q4", "q5")]
        con.executemany(
            "INSERT INTO benchmark_estimates (run_id, row_name, query_id, metric, prediction, truth) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        old = load_estimates(con, "old")
    finally:
        con.close()
    assert old is not None and old.lam == 1.0 and old.to_json()["lambda"] == 1.0
    (e,) = old.estimates
    assert e.estimate is not None and (e.estimate.lam, e.estimate.lam_rule) == (1.0, "fixed")
