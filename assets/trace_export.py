"""Span files dropped in the trace_export folder, imported as serve and verdict lines ahead of serve_log."""

import dagster as dg

from goldenset.traces.importer import import_traces
from goldenset_dagster.assets import raise_for
from goldenset_dagster.resources import LabelSource, LogSource, TraceExportSource, WarehouseResource


@dg.asset(pool="duckdb", group_name="ingest", kinds={"duckdb", "python"})
def trace_export(
    context: dg.AssetExecutionContext,
    warehouse: WarehouseResource,
    logs: LogSource,
    labels: LabelSource,
    trace_export_source: TraceExportSource,
) -> dg.MaterializeResult:
    """Retriever spans and their annotations in the trace_export folder, as lines under LOGS (contract 14).

    Every file of the folder is imported each time: the import merges by key and leaves a
    file whose lines did not change untouched, so serve_log re-reads only the days that
    gained or changed a line. Rejects go to the warehouse (`goldenset rejects`).
    """
    root = trace_export_source.root
    if trace_export_source.signature() is None:
        return dg.MaterializeResult(metadata={"files_read": 0, "note": f"no span files in {root}"})
    try:
        mapping = trace_export_source.mapping()
        con = warehouse.connect()
        try:
            result = import_traces(
                con,
                root,
                trace_export_source.format,
                mapping,
                logs.root,
                labels.root if mapping.judge is not None else None,
            )
        finally:
            con.close()
    except Exception as exc:
        raise_for(exc, warehouse.db_path)
    summary = result.to_json()
    days = sorted({f.split("/")[0].removeprefix("dt=") for f in result.files_written})
    context.log.info("; ".join(result.summary()))
    return dg.MaterializeResult(
        metadata={
            "files_read": result.files_read,
            "serves": result.serves,
            "verdicts": result.verdicts,
            "judge_labels": result.judge_labels,
            "rejected": sum(result.rejected.values()),
            "rejected_by_reason": dg.MetadataValue.json(summary["rejected"]),
            "annotations_skipped": dg.MetadataValue.json(summary["annotations_skipped"]),
            "days_written": dg.MetadataValue.json(days),
        }
    )
