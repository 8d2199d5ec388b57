"""The retrieval_benchmark asset: blocking gate checks and what it attaches to the UI."""

from __future__ import annotations

import dagster as dg
import pytest
from bench_world import QUERIES, build_golden, days_ago

from goldenset import warehouse
from goldenset_dagster.assets.benchmark import AGE_CHECK, BENCHMARK_ASSETS, COMPONENTS_CHECK, retrieval_benchmark
from goldenset_dagster.resources import CorpusSource, WarehouseResource
from goldenset_dagster.resources.embedder import EmbedderResource


def _resources(g):
    return {
        "warehouse": WarehouseResource(db_path=str(g.db)),
        "corpus_source": CorpusSource(path=str(g.corpus)),
        "embedder": EmbedderResource(),
    }


def _config(g, **config):
    config.setdefault("retriever", "bench_plugins:keywords")
    config.setdefault("index_dir", str(g.index_dir))
    config.setdefault("report_dir", str(g.root / "report"))
    return {"ops": {"retrieval_benchmark": {"config": config}}}


def _materialize(g, **config):
    with dg.instance_for_test() as instance:
        return dg.materialize(
            [retrieval_benchmark],
            resources=_resources(g),
            run_config=_config(g, **config),
            instance=instance,
            raise_on_error=False,
        )


def _checks(result):
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def _metadata(result):
    return result.asset_materializations_for_node("retrieval_benchmark")[0].metadata


@pytest.mark.slow
def test_asset_materializes_with_metric_table_and_markdown_report(golden):
    result = _materialize(golden)
    assert result.success
    checks = _checks(result)
    assert checks[AGE_CHECK].passed and checks[COMPONENTS_CHECK].passed
    assert checks[AGE_CHECK].metadata["expected"].value == "<= 30 days"
    meta = _metadata(result)
    assert meta["degraded"].value is False and meta["n_queries"].value == 6
    assert "| recall@5 |" in meta["metrics"].value
    assert "data:image/png;base64," in meta["report"].value


@pytest.mark.slow
def test_asset_metadata_shows_the_retriever_and_rounds_floats_to_four_decimals(golden):
    result = _materialize(golden, retriever_config='{"top": 5}')
    assert result.success
    meta = _metadata(result)
    assert meta["retriever"].value == "bench_plugins:keywords top=5"
    assert meta["retriever_config"].value["options"] == {"top": 5}
    assert _checks(result)[COMPONENTS_CHECK].metadata["retriever"].value == "bench_plugins:keywords top=5"
    con = warehouse.connect(golden.db, read_only=True)
    try:
        stored = dict(
            con.execute(
                "SELECT metric, value FROM benchmark_results WHERE row_name = 'core' AND query_id = 'all'"
            ).fetchall()
        )
    finally:
        con.close()
    assert {m: meta[f"core/{m}"].value for m in stored} == {m: round(v, 4) for m, v in stored.items()}
    assert any(v != round(v, 4) for v in stored.values())  # the rounding was needed
    assert meta["corpus_fingerprint"].value and len(meta["corpus_fingerprint"].value) == 16


@pytest.mark.slow
def test_asset_runs_without_the_graph_when_it_has_nothing_to_learn(tmp_path, goldens):
    g = goldens(tmp_path / "g", queries=[(task, helped[:1], noise) for task, helped, noise in QUERIES])
    result = _materialize(g)
    assert result.success
    assert _checks(result)[COMPONENTS_CHECK].passed
    meta = _metadata(result)
    assert meta["degraded"].value is False
    assert meta["rows"].value == ["core", "+graph+boosts", "+graph+boosts honest"]
    assert [w.split(":")[0] for w in meta["warnings"].value] == ["WARNING"]
    assert meta["warnings"].value[0].startswith("WARNING: graph has nothing to learn from: ")


@pytest.mark.slow
def test_too_old_golden_set_fails_the_blocking_age_check(tmp_path):
    g = build_golden(tmp_path / "g", built_at=days_ago(45))
    result = _materialize(g)
    assert not result.success
    check = _checks(result)[AGE_CHECK]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["actual"].value.startswith("45.0")
    assert not result.asset_materializations_for_node("retrieval_benchmark")


@pytest.mark.slow
def test_component_down_fails_the_blocking_components_check(golden):
    result = _materialize(golden, retriever="bench_plugins:exploding")
    assert not result.success
    check = _checks(result)[COMPONENTS_CHECK]
    assert not check.passed
    assert check.metadata["actual"].value == "COMPONENT DOWN: keywords: index server unreachable at 10.0.0.7:9200"


@pytest.mark.slow
@pytest.mark.parametrize(
    "config",
    [
        {"retriever": "bench_plugins:exploding"},  # a component down: refused
        {"retriever": "bench_plugins:missing"},  # a retriever path that does not resolve: wrong config
        {"retriever_config": "[1]"},
    ],
)
def test_a_failure_that_would_repeat_is_not_retried_by_a_retry_policy(golden, config):
    job = dg.define_asset_job(
        "bench_with_retries", selection=[retrieval_benchmark], op_retry_policy=dg.RetryPolicy(max_retries=2)
    )
    defs = dg.Definitions(assets=[retrieval_benchmark], jobs=[job], resources=_resources(golden))
    with dg.instance_for_test() as instance:
        result = defs.resolve_job_def("bench_with_retries").execute_in_process(
            run_config=_config(golden, **config), instance=instance, raise_on_error=False
        )
    assert not result.success
    kinds = [e.event_type_value for e in result.all_events]
    assert "STEP_UP_FOR_RETRY" not in kinds and kinds.count("STEP_FAILURE") == 1


@pytest.mark.slow
def test_a_transient_retriever_error_is_retried(golden):
    job = dg.define_asset_job(
        "bench_with_retries", selection=[retrieval_benchmark], op_retry_policy=dg.RetryPolicy(max_retries=1)
    )
    defs = dg.Definitions(assets=[retrieval_benchmark], jobs=[job], resources=_resources(golden))
    with dg.instance_for_test() as instance:
        result = defs.resolve_job_def("bench_with_retries").execute_in_process(
            run_config=_config(golden, retriever="bench_plugins:fails_on_search"),
            instance=instance,
            raise_on_error=False,
        )
    assert not result.success
    assert [e.event_type_value for e in result.all_events].count("STEP_UP_FOR_RETRY") == 1


def test_benchmark_assets_load_into_definitions():
    defs = dg.Definitions(
        assets=BENCHMARK_ASSETS,
        resources={"warehouse": WarehouseResource(), "corpus_source": CorpusSource(), "embedder": EmbedderResource()},
    )
    spec = defs.resolve_assets_def("retrieval_benchmark")
    assert spec.group_names_by_key[dg.AssetKey("retrieval_benchmark")] == "benchmark"
    assert {c.name for c in spec.check_specs} == {AGE_CHECK, COMPONENTS_CHECK}
    assert all(c.blocking for c in spec.check_specs)


@pytest.mark.slow
def test_stale_labels_in_the_qrels_are_a_warning_the_ui_shows(tmp_path, goldens):

    # One label's document superseded: 1 stale label, kept in the qrels by default.
    g = goldens(tmp_path / "g", superseded={"webhooks/signing": "webhooks/retries"})
    meta = _metadata(_materialize(g))
    assert meta["stale_labels"].value == 1
    assert [w for w in meta["warnings"].value if "stale" in w] == [
        "WARNING: 1 stale label(s) included in the qrels: their documents moved on since they were judged "
        "(exclude_stale leaves them out; the relabel queue lists them)"
    ]
    excluded = _metadata(_materialize(g, exclude_stale=True))
    assert not [w for w in excluded["warnings"].value if "stale" in w]


@pytest.mark.slow
def test_the_benchmark_checks_target_the_run_they_judged_and_its_plot_fits_a_dialog(golden):
    import base64
    import struct

    with dg.instance_for_test() as instance:
        for _ in range(2):
            assert dg.materialize(
                [retrieval_benchmark], resources=_resources(golden), run_config=_config(golden), instance=instance
            ).success
        mats = instance.fetch_materializations(dg.AssetKey("retrieval_benchmark"), limit=2).records
        for check in (AGE_CHECK, COMPONENTS_CHECK):
            key = dg.AssetCheckKey(dg.AssetKey("retrieval_benchmark"), check)
            history = instance.event_log_storage.get_asset_check_execution_history(key, limit=2)
            targets = [
                h.event.dagster_event.event_specific_data.target_materialization_data.storage_id for h in history
            ]
            assert targets == [m.storage_id for m in mats], check
        report = mats[0].asset_materialization.metadata["report"].value
    png = base64.b64decode(report.split("data:image/png;base64,", 1)[1].split(")", 1)[0])
    # Three rows against core stacked, not side by side: 640 px wide, whatever the number of rows.
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">I", png[16:20])[0] == 640  # IHDR width


@pytest.mark.slow
def test_goldenset_bench_run_is_one_run_of_its_job_with_both_checks_evaluated(golden):
    from goldenset_dagster.cli import main
    from goldenset_dagster.instance import get_instance

    argv = ["bench", "run", "--db", golden.db, "--corpus", golden.corpus, "--index-dir", golden.index_dir]
    argv += ["--retriever", "bench_plugins:keywords", "--report", golden.root / "report"]
    assert main([str(a) for a in argv]) == 0
    con = warehouse.connect(golden.db, read_only=True)
    try:
        run_id, n_queries = con.execute("SELECT run_id, n_queries FROM benchmark_runs").fetchone()
    finally:
        con.close()
    with get_instance() as instance:
        (run,) = instance.get_runs()
        records = instance.fetch_materializations(dg.AssetKey("retrieval_benchmark"), limit=5).records
        checks = {
            check: instance.event_log_storage.get_asset_check_execution_history(
                dg.AssetCheckKey(dg.AssetKey("retrieval_benchmark"), check), limit=5
            )
            for check in (AGE_CHECK, COMPONENTS_CHECK)
        }
    assert (run.job_name, run.status, run.tags["goldenset/trigger"]) == (
        "retrieval_benchmark_job",
        dg.DagsterRunStatus.SUCCESS,
        "cli",
    )
    assert [r.run_id for r in records] == [run.run_id]
    meta = records[0].asset_materialization.metadata
    assert meta["run_id"].value == run_id and meta["n_queries"].value == n_queries == 6
    assert "| recall@5 |" in meta["metrics"].value
    # Each check evaluated once, in that run, passed, on that materialization (as a run launched in the UI).
    for check, history in checks.items():
        assert [(h.run_id, h.status.value) for h in history] == [(run.run_id, "SUCCEEDED")], check
        target = history[0].event.dagster_event.event_specific_data.target_materialization_data
        assert target.storage_id == records[0].storage_id, check
