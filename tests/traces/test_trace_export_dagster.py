"""The trace_export folder in Dagster: the sensor launches an import when span files appear or change."""

from __future__ import annotations

import json
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
    # The import writes into the log folder serve_log reads (a dependency, not data passed between them).
    assert dg.AssetKey("trace_export") in graph.get(dg.AssetKey("serve_log_files")).parent_keys
    assert dg.AssetKey("serve_log_files") in graph.get(dg.AssetKey("serve_log")).parent_keys


@pytest.mark.slow
def test_the_asset_imports_the_folder_and_the_sensor_fires_once_per_change(tmp_path):
    folder = tmp_path / "trace_export"
    shutil.copytree(EXAMPLE / "export", folder)
    shutil.copy(EXAMPLE / "mapping.yaml", tmp_path / "mapping.yaml")
    source = TraceExportSource(
        path=str(folder), mapping_path=str(tmp_path / "mapping.yaml"), spool_path=str(tmp_path / "spool")
    )
    defs = build_definitions(Settings.resolve())
    with dg.instance_for_test() as instance:
        with dg.build_sensor_context(
            instance=instance, resources={"trace_export_source": source}, definitions=defs
        ) as ctx:
            first = trace_export_sensor(ctx)
        # A first tick records what it finds and requests nothing (issue 40): it waits for a change.
        assert first.run_requests == [] and first.cursor is not None
        with dg.build_sensor_context(
            instance=instance, resources={"trace_export_source": source}, cursor=first.cursor, definitions=defs
        ) as ctx:
            assert isinstance(trace_export_sensor(ctx), dg.SkipReason)
        os.utime(folder / "traces.jsonl", (1, 1))
        with dg.build_sensor_context(
            instance=instance, resources={"trace_export_source": source}, cursor=first.cursor, definitions=defs
        ) as ctx:
            third = trace_export_sensor(ctx)
        assert len(third.run_requests) == 1 and third.cursor != first.cursor
        assert third.run_requests[0].tags["goldenset/trigger"] == "sensor:trace_export_sensor"
        # What a receiver killed before its merge leaves: a sealed segment, an open one with a
        # torn last line (never acknowledged) and spooled rejects. The sensor sees it.
        spool = leave_a_spool(tmp_path / "spool")
        with dg.build_sensor_context(
            instance=instance, resources={"trace_export_source": source}, cursor=third.cursor, definitions=defs
        ) as ctx:
            assert len(trace_export_sensor(ctx).run_requests) == 1

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
    # The spool: two segments, two serves, the bad span's reject and the one spooled before.
    assert (meta["spool_segments_merged"].value, meta["spool_serves"].value) == (2, 2)
    assert meta["spool_rejects_stored"].value == 2
    assert meta["days_written"].value == ["2026-11-28", "2026-11-29", "2026-12-01"]
    assert sorted(p.name for p in spool.rglob("*.jsonl")) == []
    assert sorted(p.parent.name for p in (tmp_path / "logs").rglob("traces.jsonl")) == [
        "dt=2026-11-28",
        "dt=2026-11-29",
        "dt=2026-12-01",
    ]
    con = connect(tmp_path / "g.duckdb", read_only=True)
    try:
        assert sorted((r.source_file, r.reason) for r in list_rejects(con)[0]) == [
            ("traces/spool/segment-000000000001.jsonl", "invalid_field"),
            ("traces/spool/segment-000000000009.jsonl", "unknown_label"),
            ("traces/traces.jsonl", "unknown_document_version"),
        ]
    finally:
        con.close()


def request(span_id: str, task: str) -> bytes:
    """One OTLP JSON request holding one retriever span of 2026-12-01 with one versioned document."""
    attrs = [
        {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
        {"key": "input.value", "value": {"stringValue": task}},
        {"key": "retrieval.documents.0.document.id", "value": {"stringValue": "dec-204"}},
        {"key": "retrieval.documents.0.document.metadata", "value": {"stringValue": '{"version": "2"}'}},
    ]
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": span_id,
        "startTimeUnixNano": "1796119200000000000",
        "attributes": attrs,
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "billing-api"}}]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}).encode()


def leave_a_spool(root: Path) -> Path:
    """The spool a receiver killed before merging leaves (spool.py's layout), written by hand."""
    (root / "rejects").mkdir(parents=True)
    bad = request("zz", "bad id")
    (root / "segment-000000000001.jsonl").write_bytes(request("00f067aa0ba902b7", "first") + b"\n" + bad + b"\n")
    torn = request("00f067aa0ba902c0", "never acknowledged")[:40]
    (root / "open-000000000002.jsonl").write_bytes(request("00f067aa0ba902b9", "second") + b"\n" + torn)
    header = {"sources": ["spool/segment-000000000009.jsonl"], "rejected_at": "2026-12-01T10:00:00+00:00"}
    row = {"source_file": "spool/segment-000000000009.jsonl", "line": 1, "reason": "unknown_label"}
    row.update(detail="an earlier merge's reject", raw="{}")
    (root / "rejects" / "segment-000000000009.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(row) + "\n")
    return root


def test_an_empty_folder_is_a_skip_not_an_error(tmp_path):
    source = TraceExportSource(
        path=str(tmp_path / "none"), mapping_path=str(tmp_path / "none.yaml"), spool_path=str(tmp_path / "spool")
    )
    with dg.instance_for_test() as instance:
        with dg.build_sensor_context(instance=instance, resources={"trace_export_source": source}) as ctx:
            first = trace_export_sensor(ctx)
        with dg.build_sensor_context(
            instance=instance, resources={"trace_export_source": source}, cursor=first.cursor
        ) as ctx:
            assert "unchanged" in trace_export_sensor(ctx).skip_message
