"""Prediction-powered benchmark numbers (contract 12.2): which labels the prediction and the truth read,
and `bench run` / `bench compare` with `--estimate ppi` end to end on the benchmark's tiny world."""

from __future__ import annotations

import json
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
from goldenset.bench.estimate import EstimateLabels, estimate_labels, estimate_rows, query_values  # noqa: E402
from goldenset.bench.metrics import get_metric  # noqa: E402
from goldenset.bench.ppi import ppi_mean  # noqa: E402
from goldenset.build import build_golden_set  # noqa: E402
from goldenset.cli.bench import app as bench_app  # noqa: E402
from goldenset.errors import UsageError  # noqa: E402
from goldenset.labelling.pool import run_pool  # noqa: E402
from goldenset.records import normalise_task, query_id  # noqa: E402
from tests.helpers import isolated_settings  # noqa: E402

runner = CliRunner()


# --------------------------------------------------------------------------- the labels, by hand


def audited_pool_world(tmp: Path):
    """pool_rankers.py's world, audited in full on Q2, with judge `jj`'s labels; returns its db."""
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
        # The judge: on Q2 k irrelevant, i relevant, f2 partial; on Q1 g partial, h irrelevant.
        judge = [(Q2, "k", 0), (Q2, "i", 2), (Q2, "f2", 1), (Q1, "g", 1), (Q1, "h", 0)]
        lines += [
            label_line(q, d, "v1", g, "jj", f"2026-11-30T10:00:0{i}Z", kind="judge")
            for i, (q, d, g) in enumerate(judge)
        ]
        write_and_ingest(con, tmp / "labels", DAY, "audit.jsonl", lines)
        build_golden_set(con, now=datetime(2026, 11, 30, 12))
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


def test_the_judge_fills_pairs_the_other_sources_leave_open(labels):
    # Q1's golden rows (a helped, b helped, c noise, m wrong) stay; the judge adds g and h.
    assert labels.prediction[Q1] == {"a": 1, "b": 1, "c": 0, "m": 0, "g": 1, "h": 0}


def test_the_per_query_values_and_the_estimate_follow_from_the_two_qrels(labels):
    # precision@2 on fixed lists. Q1 [g, a]: prediction 2/2 = 1. Q2 [k, i]: prediction (k 0, i 2) 1/2,
    # truth (k 2, i 1) 2/2 = 1. PPI = mean(1, 1/2) - (1/2 - 1) = 5/4; human-only 1 on one query.
    ranked = {"core": {Q1: ["g", "a"], Q2: ["k", "i"]}}
    (v,) = query_values(ranked, {"core": [Q1, Q2]}, labels, [get_metric("precision@2")])
    assert v.prediction == {Q1: 1.0, Q2: 0.5} and v.truth == {Q2: 1.0}
    (e,) = estimate_rows([v])
    assert e.estimate is not None
    assert (e.estimate.estimate, e.estimate.human, e.estimate.n_audited) == (1.25, 1.0, 1)


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


def audited_bench_world(tmp: Path, goldens, judge_agrees: bool):
    """The benchmark's world, every query audited by humans (helped documents relevant, the rest not),
    and judge `jj` on every audit pair: agreeing with the humans, or calling every pair partial."""
    g = goldens(tmp)
    con = warehouse.connect(g.db)
    try:
        run_pool(con, rankers=("bench_plugins:keywords",), depth=4, index_dir=g.index_dir, audit=6, seed=3)
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


def run_id_of(result) -> str:
    return result.output.rstrip().splitlines()[-1].removeprefix("run_id: ")


@pytest.mark.slow
def test_bench_run_prints_and_stores_the_estimate_beside_the_human_only_one(tmp_path, goldens):
    g = audited_bench_world(tmp_path / "g", goldens, judge_agrees=False)
    result = bench_run(g, "bench_plugins:keywords", "--estimate", "ppi", "--judge", "jj")
    assert "prediction-powered estimates, judge jj" in result.output
    assert "core recall@5: PPI " in result.output and "human-only" in result.output
    summary, values = stored(g, run_id_of(result))
    assert summary["judge"] == "jj" and summary["design"] == "finite"
    assert summary["audit"]["audited"] == summary["audit"]["sample_size"] == 6
    est = next(e for e in summary["estimates"] if e["row"] == "core" and e["metric"] == "recall@5")
    # The stored estimate is the estimator applied to the stored per-query values.
    expected = ppi_mean(
        [p for _, p, _ in values],
        [p for _, p, t in values if t is not None],
        [t for _, _, t in values if t is not None],
    )
    assert est["estimate"] == round(expected.estimate, 4) and est["n_audited"] == expected.n_audited


@pytest.mark.slow
def test_a_judge_that_agrees_with_the_humans_gives_the_truth_with_no_width(tmp_path, goldens):
    g = audited_bench_world(tmp_path / "g", goldens, judge_agrees=True)
    _, values = stored(g, run_id_of(bench_run(g, "bench_plugins:keywords", "--estimate", "ppi", "--judge", "jj")))
    assert all(p == t for _, p, t in values)


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
    ],
)
def test_bad_estimate_options_are_usage_errors(tmp_path, args, message, goldens):
    g = goldens(tmp_path / "g")
    result = runner.invoke(
        bench_app, ["run", "--db", str(g.db), "--corpus", str(g.corpus), "--retriever", "bench_plugins:keywords", *args]
    )
    assert isinstance(result.exception, UsageError) and message in str(result.exception)
