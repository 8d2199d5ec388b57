"""`goldenset bench` commands: exit codes, exact messages, what is stored and printed."""

from __future__ import annotations

import json
import re

import pytest
from bench_world import DATA, build_golden, days_ago
from typer.testing import CliRunner

from goldenset import warehouse
from goldenset.cli.bench import app as bench_app
from goldenset.errors import ComponentDown, GoldenSetTooOld, InputError, UsageError

runner = CliRunner()


def bench(*args):
    return runner.invoke(bench_app, [str(a) for a in args])


def run_args(g, retriever="bench_plugins:keywords", *extra):
    return [
        "run",
        "--db",
        g.db,
        "--corpus",
        g.corpus,
        "--index-dir",
        g.index_dir,
        "--retriever",
        retriever,
        "--report",
        g.root / "report",
        *extra,
    ]


def run_id_of(result) -> str:
    m = re.search(r"^run_id: (\S+)$", result.output, re.M)
    assert m, result.output
    return m.group(1)


def test_bench_run_prints_its_run_id_last_and_stores_every_row(golden):
    result = bench(*run_args(golden))
    assert result.exit_code == 0, result.output
    rid = run_id_of(result)
    assert result.output.rstrip().splitlines()[-1] == f"run_id: {rid}"
    assert "core (deciding)" in result.output and "+graph+boosts honest (reference)" in result.output
    assert "0 stale label(s) in the golden set, included in the qrels" in result.output
    assert "Leakage:" in result.output
    con = warehouse.connect(golden.db, read_only=True)
    try:
        meta = con.execute(
            "SELECT build_id, corpus_fingerprint, retriever, degraded, n_queries FROM benchmark_runs WHERE run_id = ?",
            [rid],
        ).fetchone()
        rows = con.execute(
            "SELECT DISTINCT row_name FROM benchmark_results WHERE run_id = ? ORDER BY 1", [rid]
        ).fetchall()
    finally:
        con.close()
    assert meta[0] == 1 and len(meta[1]) == 64 and meta[2] == "bench_plugins:keywords"
    assert meta[3] is False and meta[4] == 6
    assert [r[0] for r in rows] == ["+graph", "+graph+boosts", "+graph+boosts honest", "core"]
    report = golden.root / "report"
    assert (report / "report.md").is_file() and (report / "differences.png").stat().st_size > 1000
    assert "![differences against core](differences.png)" in (report / "report.md").read_text()


@pytest.mark.slow
def test_the_written_core_run_evaluates_to_the_stored_core_means(golden):
    rid = run_id_of(bench(*run_args(golden)))
    result = bench("eval", "--run", golden.root / "report" / "core.run", "--db", golden.db, "--json")
    assert result.exit_code == 0, result.output
    evaluated = json.loads(result.output)
    con = warehouse.connect(golden.db, read_only=True)
    try:
        stored = dict(
            con.execute(
                "SELECT metric, value FROM benchmark_results WHERE run_id = ? "
                "AND row_name = 'core' AND query_id = 'all'",
                [rid],
            ).fetchall()
        )
    finally:
        con.close()
    for m in ("recall@5", "precision@5", "ndcg@10", "mrr", "map"):
        assert evaluated[m] == round(stored[m], 4), m


def test_bench_eval_json_reproduces_trec_eval_with_exactly_the_documented_keys():
    result = bench("eval", "--run", DATA / "results.test", "--qrels", DATA / "qrels.test", "--json")
    assert result.exit_code == 0, result.output
    got = json.loads(result.output)
    assert list(got) == ["recall@5", "recall@10", "recall@24", "precision@5", "precision@10", "ndcg@10", "mrr", "map"]
    assert {k: got[k] for k in ("precision@5", "precision@10", "recall@5", "recall@10", "ndcg@10", "mrr", "map")} == {
        "precision@5": 0.2667,
        "precision@10": 0.3,
        "recall@5": 0.0173,
        "recall@10": 0.0317,
        "ndcg@10": 0.3016,
        "mrr": 0.4064,
        "map": 0.1785,
    }


def test_bench_eval_table_names_the_query_policy():
    result = bench("eval", "--run", DATA / "results.test", "--qrels", DATA / "qrels.test")
    assert result.exit_code == 0
    assert "3 queries" in result.output and "as trec_eval does without -c" in result.output


def test_bench_eval_refuses_a_malformed_run_with_its_line(tmp_path):
    bad = tmp_path / "bad.run"
    bad.write_text("301 Q0 doc 1\n")
    result = bench("eval", "--run", bad, "--qrels", DATA / "qrels.test")
    assert isinstance(result.exception, InputError)
    assert str(result.exception).startswith(f"run {bad} line 1: expected 6 fields")


def test_bench_eval_with_no_matching_query_is_an_error(tmp_path):
    run = tmp_path / "other.run"
    run.write_text("999 Q0 doc 1 1.0 t\n")
    result = bench("eval", "--run", run, "--qrels", DATA / "qrels.test")
    assert isinstance(result.exception, InputError)
    assert "has a relevant document" in str(result.exception)


@pytest.mark.slow
def test_compare_identical_runs_is_indistinguishable_everywhere(golden):
    a = run_id_of(bench(*run_args(golden)))
    b = run_id_of(bench(*run_args(golden)))
    result = bench("compare", a, b, "--db", golden.db, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["warnings"] == [] and out["row"] == "core"
    for p in out["metrics"]:
        assert (p["diff"], p["lo"], p["hi"], p["verdict"], p["n"]) == (0.0, 0.0, 0.0, "indistinguishable", 6)


@pytest.mark.slow
def test_compare_runs_with_a_known_difference(golden):
    worst = run_id_of(bench(*run_args(golden, "bench_plugins:worst")))
    perfect = run_id_of(bench(*run_args(golden, "bench_plugins:perfect")))
    result = bench(
        "compare",
        worst,
        perfect,
        "--db",
        golden.db,
        "--metric",
        "recall@5",
        "--metric",
        "recall@24",
        "--metric",
        "mrr",
        "--metric",
        "noise@5",
    )
    assert result.exit_code == 0, result.output
    lines = {line.split()[1]: line for line in result.output.splitlines() if line.startswith("│")}
    assert "better" in lines["recall@5"] and "better" in lines["mrr"]
    assert "indistinguishable" in lines["recall@24"]  # 16 documents: both find everything by 24
    assert "n = 6 queries both runs saw" in result.output
    backwards = json.loads(bench("compare", perfect, worst, "--db", golden.db, "--metric", "mrr", "--json").output)
    assert backwards["metrics"][0]["verdict"] == "worse"


@pytest.mark.slow
def test_compare_with_bootstrap_writes_a_report(golden):
    worst = run_id_of(bench(*run_args(golden, "bench_plugins:worst")))
    perfect = run_id_of(bench(*run_args(golden, "bench_plugins:perfect")))
    out = golden.root / "cmp"
    result = bench("compare", worst, perfect, "--db", golden.db, "--bootstrap", 500, "--seed", 3, "--report", out)
    assert result.exit_code == 0, result.output
    assert "paired bootstrap (500 resamples, seed 3)" in result.output
    assert (out / "differences.png").is_file() and "| recall@5 |" in (out / "report.md").read_text()


@pytest.mark.slow
def test_compare_warns_first_when_the_runs_searched_different_corpora(tmp_path, goldens):
    from bench_world import DOCS, write_corpus

    g = goldens(tmp_path / "g")
    a = run_id_of(bench(*run_args(g)))
    write_corpus(g.corpus, DOCS[:-1])
    b = run_id_of(bench(*run_args(g)))
    result = bench("compare", a, b, "--db", g.db, "--coverage-floor", "0")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("WARNING: the runs searched different corpora (fingerprints ")


def test_compare_an_unknown_run_is_a_usage_error(golden):
    a = run_id_of(bench(*run_args(golden)))
    result = bench("compare", a, "nope", "--db", golden.db)
    assert isinstance(result.exception, UsageError)
    assert str(result.exception) == "no benchmark run 'nope' in the warehouse; `goldenset bench list` shows the runs"


def test_degraded_runs_are_stamped_on_every_table(tmp_path, monkeypatch, goldens):
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(tmp_path / "missing-model"))
    g = goldens(tmp_path / "g")
    result = bench(*run_args(g, "goldenset.retrieval.reference:hybrid", "--allow-degraded"))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("DEGRADED: ran with dense down")
    assert "DEGRADED · benchmark " in result.output
    rid = run_id_of(result)
    cmp = bench("compare", rid, rid, "--db", g.db)
    assert "DEGRADED · " in cmp.output
    listed = bench("list", "--db", g.db)
    assert rid in listed.output and "DEGRADED" in listed.output


def test_refusals_surface_as_typed_errors(tmp_path, monkeypatch, goldens):
    g = build_golden(tmp_path / "old", built_at=days_ago(60))
    assert isinstance(bench(*run_args(g)).exception, GoldenSetTooOld)
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(tmp_path / "missing-model"))
    fresh = goldens(tmp_path / "fresh")
    assert isinstance(bench(*run_args(fresh, "goldenset.retrieval.reference:hybrid")).exception, ComponentDown)


def test_top_level_cli_exit_codes_and_component_down_line(tmp_path, monkeypatch, capsys, goldens):
    from goldenset.cli.app import main  # the benchmark, not its Dagster run (tests/bench/test_asset.py)

    old = build_golden(tmp_path / "old", built_at=days_ago(60))
    assert main(["bench", *[str(a) for a in run_args(old)]]) == 3
    assert capsys.readouterr().err.startswith("Error: golden set build 1 is 60.0 days old")
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(tmp_path / "missing-model"))
    fresh = goldens(tmp_path / "fresh")
    assert main(["bench", *[str(a) for a in run_args(fresh, "goldenset.retrieval.reference:hybrid")]]) == 4
    err = capsys.readouterr().err
    assert err.startswith("COMPONENT DOWN: dense: dense model ")
    assert main(["bench", "run", "--k", "x"]) == 2


def test_bad_retriever_config_is_a_usage_error(golden):
    result = bench(*run_args(golden, "bench_plugins:keywords", "--retriever-config", "[1]"))
    assert isinstance(result.exception, UsageError)
    assert str(result.exception) == "--retriever-config must be a JSON object, got '[1]'"


@pytest.mark.slow
def test_exclude_stale_leaves_stale_labels_out_and_says_so(tmp_path, goldens):
    g = goldens(tmp_path / "g", superseded={"webhooks/signing": "webhooks/retries"})
    included = bench(*run_args(g))
    assert "1 stale label(s) in the golden set, included in the qrels" in included.output
    excluded = bench(*run_args(g, "bench_plugins:keywords", "--exclude-stale"))
    assert "1 stale label(s) in the golden set, left out (--exclude-stale)" in excluded.output


@pytest.mark.slow
def test_k_values_are_configurable(golden):
    result = bench(*run_args(golden, "bench_plugins:keywords", "--k", 3, "--k", 10))
    assert result.exit_code == 0, result.output
    assert "recall@3" in result.output and "hole@10" in result.output and "recall@24" not in result.output


def test_depth_below_the_largest_k_is_a_usage_error(golden):
    result = bench(*run_args(golden, "bench_plugins:keywords", "--depth", 10))
    assert isinstance(result.exception, UsageError)
    assert str(result.exception) == "--depth 10 is below the largest k 24; raise --depth"


def test_every_bench_command_is_documented():
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    for cmd in bench_app.registered_commands:
        assert f"## `goldenset bench {cmd.name}`" in doc, cmd.name


def test_an_empty_golden_set_is_refused_rather_than_shown_as_n_a(tmp_path, goldens):
    from bench_world import QUERIES

    from goldenset.errors import GoldensetError

    # Every query judged, none helped: all fall to no_positive. Nothing to boost either, but
    # graph and boosts never refuse (exit 4), so the empty set itself is the error.
    g = goldens(tmp_path / "empty", queries=[(task, [], helped + noise) for task, helped, noise in QUERIES])
    result = bench(*run_args(g))
    assert type(result.exception) is GoldensetError and result.exception.exit_code == 1
    assert str(result.exception) == (
        "golden build 1 has no query with a relevant label to measure; `goldenset status` shows the funnel"
    )


@pytest.mark.slow
def test_one_helped_document_per_query_exits_0_with_one_warning_and_no_degraded_stamp(tmp_path, capsys, goldens):
    from bench_world import QUERIES

    from goldenset.cli.app import main  # the benchmark, not its Dagster run (tests/bench/test_asset.py)

    g = goldens(tmp_path / "g", queries=[(task, helped[:1], noise) for task, helped, noise in QUERIES])
    assert main(["bench", *[str(a) for a in run_args(g)]]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert [line for line in out.splitlines() if "WARNING" in line] == [
        "WARNING: graph has nothing to learn from: no two active documents helped on the same query, so the graph "
        "has no edge; row +graph left out (it would rank as core), rows +graph+boosts and +graph+boosts honest "
        "rank with the boosts alone"
    ]
    assert "DEGRADED" not in out and "COMPONENT DOWN" not in captured.err
    assert "+graph+boosts (reference)" in out and "+graph (reference)" not in out
