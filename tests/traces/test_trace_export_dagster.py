"""The trace_export folder in Dagster: the sensor launches an import when span files appear or change."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg
import pytest

from goldenset.quarantine import list_rejects
from goldenset.settings import Settings
from goldenset.warehouse import connect
from goldenset_dagster.assets.trace_export import trace_export
from goldenset_dagster.definitions import build_definitions
from goldenset_dagster.resources import LabelSource, LogSource, TraceExportSource, WarehouseResource
from goldenset_dagster.sensors import trace_export_sensor

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "traces"


def test_definitions_carry_the_trace_export_asset_job_and_sensor():
    defs = build_definitions(Settings.resolve())
    assert defs.resolve_job_def("import_trace_export") is not None
    assert defs.resolve_sensor_def("trace_export_sensor") is not None
    graph = defs.resolve_asset_graph()
    # serve_log comes after the import (a dependency, not data passed between them).
    assert dg.AssetKey("trace_export") in graph.get(dg.AssetKey("serve_log")).parent_keys


@pytest.mark.slow
def test_the_asset_imports_the_folder_and_the_sensor_fires_once_per_change(tmp_path):
    folder = tmp_path / "trace_export"
    shutil.copytree(EXAMPLE / "export", folder)
    shutil.copy(EXAMPLE / "mapping.yaml", tmp_path / "mapping.yaml")
    source = TraceExportSource(path=str(folder), mapping_path=str(tmp_path / "mapping.yaml"))
    defs = build_definitions(Settings.resolve())
    with dg.instance_for_test() as instance:
        with dg.build_sensor_context(
            instance=instance, resources={"trace_export_source": source}, definitions=defs
        ) as ctx:
            first = trace_export_sensor(ctx)
        assert len(first.run_requests) == 1
        with dg.build_sensor_context(
            instance=instance, resources={"trace_export_source": source}, cursor=first.cursor, definitions=defs
        ) as ctx:
            assert isinstance(trace_export_sensor(ctx), dg.SkipReason)
        os.utime(folder / "traces.jsonl", (1, 1))
        with dg.build_sensor_context(
            instance=instance, resources={"trace_export_source": source}, cursor=first.cursor, definitions=defs
        ) as ctx:
            third = trace_export_sensor(ctx)
        assert third.run_requests[0].run_key != first.run_requests[0].run_key

        result = dg.materialize(
            [trace_export],
            instance=instance,
            resources={
                "warehouse": WarehouseResource(db_path=str(tmp_path / "g.duckdb")),
                "logs": LogSource(path=str(tmp_path / "logs")),
                "labels": LabelSource(path=str(tmp_path / "labels")),
                "trace_export_source": source,
            },
        )
    assert result.success
    meta = result.asset_materializations_for_node("trace_export")[0].metadata
    assert (meta["serves"].value, meta["verdicts"].value, meta["rejected"].value) == (2, 4, 1)
    assert meta["days_written"].value == ["2026-11-28", "2026-11-29"]
    assert sorted(p.parent.name for p in (tmp_path / "logs").rglob("traces.jsonl")) == [
        "dt=2026-11-28",
        "dt=2026-11-29",
    ]
    con = connect(tmp_path / "g.duckdb", read_only=True)
    try:
        assert [r.reason for r in list_rejects(con)[0]] == ["unknown_document_version"]
    finally:
        con.close()


def test_an_empty_folder_is_a_skip_not_an_error(tmp_path):
    source = TraceExportSource(path=str(tmp_path / "none"), mapping_path=str(tmp_path / "none.yaml"))
    with (
        dg.instance_for_test() as instance,
        dg.build_sensor_context(instance=instance, resources={"trace_export_source": source}) as ctx,
    ):
        assert "no span files" in trace_export_sensor(ctx).skip_message
