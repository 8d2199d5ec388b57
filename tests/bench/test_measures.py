"""Named measures (`bench run --measure`) held to ir_measures' own calc_aggregate and iter_calc.

The oracle reads the same qrels and run through ir_measures' default entry points (its own
choice of provider), never through goldenset's code; the end-to-end test reads the TREC
files `bench run` wrote (core.run, qrels.trec) with ir_measures' own readers and compares
the stored values, per query and the mean.
"""

from __future__ import annotations

import json

import ir_measures
import pytest
from bench_world import DATA
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from goldenset import warehouse
from goldenset.bench import metrics as M
from goldenset.bench import trec
from goldenset.bench.measures import compute, parse_measures
from goldenset.bench.runner import BenchConfig
from goldenset.bench.runs import ALL, load_run
from goldenset.bench.service import run_and_store
from goldenset.cli.app import main
from goldenset.cli.bench import app as bench_app
from goldenset.errors import UsageError
from tests.helpers import examples

NAMES = ["nDCG@20", "R@100", "P(rel=2)@5", "P@5", "AP", "RR", "nDCG@10", "Bpref", "Rprec", "Success@3"]
DOCS = [f"d{i}" for i in range(12)]
QUERIES = ["q1", "q2", "q3", "q4"]


def ranked(run: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    # The oracle's run: what `bench run` writes to core.run (score n - r + 1 at rank r).
    return {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in run.items()}


def test_names_are_parsed_to_ir_measures_canonical_form_once_each():
    assert parse_measures(["nDCG@20", "R@100", "P(rel=2)@5", " nDCG@20 "]) == ["nDCG@20", "R@100", "P(rel=2)@5"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ndcg@20", "--measure 'ndcg@20' is not a measure ir_measures can parse (measure not found: ndcg)"),
        ("nDCG@x", "--measure 'nDCG@x' is not a measure ir_measures can parse"),
        ("Judged@10", "--measure 'Judged@10' is not one trec_eval computes"),
    ],
)
def test_a_name_ir_measures_cannot_parse_or_trec_eval_cannot_compute_is_refused(name, message):
    with pytest.raises(UsageError) as err:
        parse_measures(["nDCG@20", name])
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_bench_run_refuses_an_unknown_measure_in_one_line_exit_2(tmp_path, capsys):
    assert main(["bench", "run", "--db", str(tmp_path / "none.duckdb"), "--measure", "bogus@5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("Error: --measure 'bogus@5' is not a measure ir_measures can parse") and "\n" not in err


lists = st.dictionaries(
    st.sampled_from(QUERIES), st.lists(st.sampled_from(DOCS), unique=True, max_size=len(DOCS)), min_size=1
)
grades = st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=8).filter(
    lambda r: max(r.values()) >= 1  # a measured query has a relevant document (the skip_no_relevant policy)
)


@settings(max_examples=examples(60), deadline=None)
@given(run=lists, qrels=st.dictionaries(st.sampled_from(QUERIES), grades, min_size=1))
def test_every_value_equals_ir_measures_iter_calc_and_the_mean_its_calc_aggregate(run, qrels):
    queries = sorted(set(run) & set(qrels))
    if not queries:
        return
    ours = compute(NAMES, run, qrels, queries)
    measures = [ir_measures.parse_measure(n) for n in NAMES]
    oracle_run = {q: d for q, d in ranked(run).items() if q in queries}
    oracle_qrels = {q: qrels[q] for q in queries}
    expected = {
        (m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, oracle_qrels, oracle_run)
    }
    for q in queries:
        for name in NAMES:
            # ir_measures leaves out a query with an empty ranking; pytrec_eval scores it 0.
            assert ours[q][name] == pytest.approx(expected.get((q, name), 0.0), abs=1e-12), (q, name)
    if all(run[q] for q in queries):
        aggregate = ir_measures.calc_aggregate(measures, oracle_qrels, oracle_run)
        for name in NAMES:
            mean = sum(ours[q][name] for q in queries) / len(queries)
            assert mean == pytest.approx(aggregate[ir_measures.parse_measure(name)], abs=1e-12)


def test_grade_one_is_relevant_as_goldenset_counts_it_and_rel_2_raises_the_bar():
    run = {"q1": ["d1", "d2", "d3", "d4", "d5"]}
    qrels = {"q1": {"d1": 1, "d2": 2, "d3": 0, "d9": 3}}
    out = compute(["P@5", "P(rel=2)@5", "nDCG@10", "AP", "RR", "R@100"], run, qrels, ["q1"])["q1"]
    rels = qrels["q1"]
    assert out["P@5"] == pytest.approx(M.precision_at(run["q1"], rels, 5)) == pytest.approx(2 / 5)
    assert out["P(rel=2)@5"] == pytest.approx(1 / 5)  # only d2 has grade >= 2
    assert out["nDCG@10"] == pytest.approx(M.ndcg_at(run["q1"], rels, 10))
    assert out["AP"] == pytest.approx(M.average_precision(run["q1"], rels))
    assert out["RR"] == pytest.approx(M.mrr(run["q1"], rels))
    assert out["R@100"] == pytest.approx(M.recall_at(run["q1"], rels, 100))


def test_trec_eval_test_files_give_ir_measures_values():
    run = trec.ranked_lists(trec.read_run(DATA / "results.test"))
    qrels = trec.read_qrels(DATA / "qrels.test")
    queries = sorted(set(run) & {q for q, r in qrels.items() if M.num_relevant(r)})
    ours = compute(["nDCG@20", "R@100", "P(rel=2)@5"], run, qrels, queries)
    oracle = ir_measures.calc_aggregate(
        [ir_measures.parse_measure(n) for n in ("nDCG@20", "R@100", "P(rel=2)@5")],
        {q: qrels[q] for q in queries},
        {q: d for q, d in ranked(run).items() if q in queries},
    )
    for measure, value in oracle.items():
        assert sum(ours[q][str(measure)] for q in queries) / len(queries) == pytest.approx(value, abs=1e-12)


@pytest.mark.slow
def test_bench_run_stores_each_measure_equal_to_ir_measures_on_the_files_it_wrote(golden):
    config = BenchConfig(
        retriever="bench_plugins:keywords", index_dir=golden.index_dir, measures=("nDCG@20", "R@100", "P(rel=2)@5")
    )
    out = golden.root / "report"
    result = run_and_store(golden.db, golden.corpus, config, report_dir=out)
    measures = [ir_measures.parse_measure(n) for n in config.measures]
    qrels = list(ir_measures.read_trec_qrels(str(out / "qrels.trec")))
    run = list(ir_measures.read_trec_run(str(out / "core.run")))
    per_query = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
    aggregate = {str(k): v for k, v in ir_measures.calc_aggregate(measures, qrels, run).items()}
    con = warehouse.connect(golden.db, read_only=True)
    try:
        stored = load_run(con, result.run.run_id)
        means = dict(
            con.execute(
                "SELECT metric, value FROM benchmark_results WHERE run_id = ? AND row_name = 'core' AND query_id = ?",
                [stored.run_id, ALL],
            ).fetchall()
        )
        listed = json.loads(CliRunner().invoke(bench_app, ["list", "--db", str(golden.db), "--json"]).output)[0]
    finally:
        con.close()
    assert stored.measures == ["nDCG@20", "R@100", "P(rel=2)@5"]
    assert "nDCG@20" not in stored.metric_names and "ndcg@10" in stored.metric_names  # pinned metrics stay
    for q, values in stored.values["core"].items():
        for name in config.measures:
            assert values[name] == pytest.approx(per_query.get((q, name), 0.0), abs=1e-12)
    for name in config.measures:
        assert means[name] == pytest.approx(aggregate[name], abs=1e-12)
    assert listed["measures"] == list(config.measures) and listed["means"]["R@100"] == pytest.approx(aggregate["R@100"])
    table = CliRunner().invoke(bench_app, ["list", "--db", str(golden.db)]).output
    assert f"nDCG@20 {aggregate['nDCG@20']:.4f}" in table
    assert "| nDCG@20 (named measure) |" in (out / "report.md").read_text(encoding="utf-8")
