"""The retrieval_benchmark asset: blocking gate checks and what it attaches to the UI."""

from __future__ import annotations

import dagster as dg

from goldenset_dagster.assets.benchmark import AGE_CHECK, BENCHMARK_ASSETS, COMPONENTS_CHECK, retrieval_benchmark
from goldenset_dagster.resources import CorpusSource, WarehouseResource
from goldenset_dagster.resources.embedder import EmbedderResource

from bench_world import build_golden, days_ago


def _materialize(g, **config):
    config.setdefault("retriever", "bench_plugins:keywords")
    config.setdefault("index_dir", str(g.index_dir))
    return dg.materialize(
        [retrieval_benchmark],
        resources={"warehouse": WarehouseResource(db_path=str(g.db)),
                   "corpus_source": CorpusSource(path=str(g.corpus)), "embedder": EmbedderResource()},
        run_config={"ops": {"retrieval_benchmark": {"config": config}}},
        raise_on_error=False,
    )


def _checks(result):
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_asset_materializes_with_metric_table_and_markdown_report(golden):
    result = _materialize(golden)
    assert result.success
    checks = _checks(result)
    assert checks[AGE_CHECK].passed and checks[COMPONENTS_CHECK].passed
    assert checks[AGE_CHECK].metadata["expected"].value == "<= 30 days"
    meta = result.asset_materializations_for_node("retrieval_benchmark")[0].metadata
    assert meta["degraded"].value is False and meta["n_queries"].value == 6
    assert "| recall@5 |" in meta["metrics"].value
    assert "data:image/png;base64," in meta["report"].value


def test_too_old_golden_set_fails_the_blocking_age_check(tmp_path):
    g = build_golden(tmp_path / "g", built_at=days_ago(45))
    result = _materialize(g)
    assert not result.success
    check = _checks(result)[AGE_CHECK]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["actual"].value.startswith("45.0")
    assert not result.asset_materializations_for_node("retrieval_benchmark")


def test_component_down_fails_the_blocking_components_check(golden):
    result = _materialize(golden, retriever="bench_plugins:exploding")
    assert not result.success
    check = _checks(result)[COMPONENTS_CHECK]
    assert not check.passed
    assert check.metadata["actual"].value == "COMPONENT DOWN: keywords: index server unreachable at 10.0.0.7:9200"


def test_benchmark_assets_load_into_definitions():
    defs = dg.Definitions(assets=BENCHMARK_ASSETS, resources={
        "warehouse": WarehouseResource(), "corpus_source": CorpusSource(), "embedder": EmbedderResource()})
    spec = defs.resolve_assets_def("retrieval_benchmark")
    assert spec.group_names_by_key[dg.AssetKey("retrieval_benchmark")] == "benchmark"
    assert {c.name for c in spec.check_specs} == {AGE_CHECK, COMPONENTS_CHECK}
    assert all(c.blocking for c in spec.check_specs)
