"""`bench compare` warns about labels only when they differ; every run shows its retriever and config."""

from __future__ import annotations

import json
import re

import pytest
from bench_world import rebuild
from typer.testing import CliRunner

from goldenset import warehouse
from goldenset.bench.runner import BenchConfig
from goldenset.bench.service import run_and_store
from goldenset.cli.bench import app as bench_app

runner = CliRunner()
LABELS_WARNING = "WARNING: the runs were measured against different golden builds"


def bench(*args):
    return runner.invoke(bench_app, [str(a) for a in args])


def _run(g, embedder=None, retriever="bench_plugins:keywords", **options):
    config = BenchConfig(retriever=retriever, retriever_config=options, index_dir=g.index_dir)
    return run_and_store(
        g.db, g.corpus, config, report_dir=g.root / "reports" / str(len(options)), embedder=embedder
    ).run


def _compare_json(g, a, b):
    result = bench("compare", a, b, "--db", g.db, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.slow
def test_runs_on_a_repeat_build_share_its_labels_and_compare_does_not_warn(golden):
    a = _run(golden)
    assert rebuild(golden) == 2  # unchanged input: a repeat of build 1
    b = _run(golden)
    assert (a.build_id, a.labels_build_id, b.build_id, b.labels_build_id) == (1, 1, 2, 1)
    out = _compare_json(golden, a.run_id, b.run_id)
    assert out["warnings"] == []
    assert (out["b_run"]["build_id"], out["b_run"]["labels_build_id"]) == (2, 1)
    con = warehouse.connect(golden.db, read_only=True)
    try:
        stored = con.execute("SELECT labels_build_id FROM benchmark_runs WHERE run_id = ?", [b.run_id]).fetchone()
    finally:
        con.close()
    assert stored == (1,)


@pytest.mark.slow
def test_compare_warns_when_the_labels_differ(golden):
    a = _run(golden)
    assert rebuild(golden, more_queries=[("Store timestamps in UTC", ["time/zones"], ["obs/errors"])]) == 2
    b = _run(golden)
    result = bench("compare", a.run_id, b.run_id, "--db", golden.db, "--coverage-floor", "0")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        f"{LABELS_WARNING} ({a.run_id} build 1, {b.run_id} build 2): the labels differ"
    )


@pytest.mark.slow
def test_the_labels_warning_names_the_labels_build_of_a_repeat(golden):
    a = _run(golden)
    rebuild(golden, more_queries=[("Store timestamps in UTC", ["time/zones"], ["obs/errors"])])
    rebuild(golden)  # build 3 repeats build 2
    b = _run(golden)
    out = _compare_json(golden, a.run_id, b.run_id)
    assert out["warnings"] == [
        f"{LABELS_WARNING} ({a.run_id} build 1, {b.run_id} build 3 (labels of build 2)): the labels differ"
    ]


@pytest.mark.slow
def test_runs_stored_before_labels_build_id_was_kept_read_it_from_their_build(golden):
    a = _run(golden)
    rebuild(golden)
    b = _run(golden)
    con = warehouse.connect(golden.db)
    try:
        con.execute("UPDATE benchmark_runs SET labels_build_id = NULL")
    finally:
        con.close()
    out = _compare_json(golden, a.run_id, b.run_id)
    assert out["warnings"] == [] and out["b_run"]["labels_build_id"] == 1


@pytest.mark.slow
def test_the_labels_warning_falls_back_to_build_ids_when_the_labels_are_unknown(golden):
    from dataclasses import replace

    from goldenset.bench.gates import build_warning

    a = _run(golden)
    unknown_a, unknown_b = replace(a, labels_build_id=None), replace(a, run_id="b", build_id=2, labels_build_id=None)
    assert build_warning([unknown_a, replace(unknown_b, build_id=1)]) is None
    assert build_warning([unknown_a, unknown_b]) == (
        f"{LABELS_WARNING} ({a.run_id} build 1, b build 2): the labels differ"
    )


@pytest.mark.slow
def test_list_and_compare_tell_rrf_k_60_from_rrf_k_10(golden, embedder):
    default = _run(golden, embedder, "goldenset.retrieval.reference:hybrid")
    tuned = _run(golden, embedder, "goldenset.retrieval.reference:hybrid", rrf_k=10)
    assert default.config_summary == "goldenset.retrieval.reference:hybrid"
    assert tuned.config_summary == "goldenset.retrieval.reference:hybrid rrf_k=10"

    listed = bench("list", "--db", golden.db)
    assert listed.exit_code == 0, listed.output
    rows = {line.split()[1]: line for line in listed.output.splitlines() if line.startswith("│")}
    assert "goldenset.retrieval.reference:hybrid rrf_k=10" in rows[tuned.run_id]
    assert "goldenset.retrieval.reference:hybrid " in rows[default.run_id]
    assert "rrf_k" not in rows[default.run_id]

    compared = bench("compare", default.run_id, tuned.run_id, "--db", golden.db, "--coverage-floor", "0")
    assert compared.exit_code == 0, compared.output
    lines = compared.output.splitlines()
    assert lines[:3] == [
        f"A {default.run_id}: goldenset.retrieval.reference:hybrid · golden build 1",
        f"B {tuned.run_id}: goldenset.retrieval.reference:hybrid rrf_k=10 · golden build 1",
        "config differs: retriever.rrf_k: 60 -> 10",
    ]


@pytest.mark.slow
def test_list_json_and_compare_json_carry_the_full_config(golden, embedder):
    tuned = _run(golden, embedder, "goldenset.retrieval.reference:hybrid", rrf_k=10)
    other = _run(golden)
    listed = json.loads(bench("list", "--db", golden.db, "--json").output)
    by_id = {r["run_id"]: r for r in listed}
    assert by_id[tuned.run_id]["config"] == "goldenset.retrieval.reference:hybrid rrf_k=10"
    assert by_id[tuned.run_id]["retriever_config"]["retriever"]["rrf_k"] == 10
    assert by_id[tuned.run_id]["retriever_config"]["options"] == {"rrf_k": 10}
    assert by_id[other.run_id]["config"] == "bench_plugins:keywords"
    out = _compare_json(golden, tuned.run_id, other.run_id)
    assert out["a_run"]["retriever_config"]["retriever"]["candidates"] == 100
    assert out["b_run"]["config"] == "bench_plugins:keywords"
    assert out["config_differences"] == []  # different retrievers: their configs are not diffed


@pytest.mark.slow
def test_the_run_report_shows_the_retriever_and_its_full_config(golden, embedder):
    run = _run(golden, embedder, "goldenset.retrieval.reference:hybrid", rrf_k=10)
    md = (golden.root / "reports" / "1" / "report.md").read_text()
    assert "- retriever: `goldenset.retrieval.reference:hybrid rrf_k=10`; depth 100; degraded: no" in md
    config = json.loads(re.search(r"## Retriever configuration\n\n```json\n(.*?)\n```", md, re.S).group(1))
    assert config == run.retriever_config and config["retriever"]["rrf_k"] == 10


def test_bench_run_prints_the_retriever_and_its_config(golden):
    result = bench(
        "run",
        "--db",
        golden.db,
        "--corpus",
        golden.corpus,
        "--index-dir",
        golden.index_dir,
        "--retriever",
        "bench_plugins:keywords",
        "--retriever-config",
        '{"label": "two words", "n": 3}',
        "--report",
        golden.root / "r",
    )
    # keywords ignores its options; the summary still shows what it was given.
    assert result.exit_code == 0, result.output
    assert 'retriever: bench_plugins:keywords label="two words" n=3' in result.output.splitlines()
