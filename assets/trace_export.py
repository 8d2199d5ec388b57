"""Span files dropped in the trace_export folder, and the receiver's spool, imported ahead of serve_log."""

import dagster as dg

from goldenset.traces.pipeline import import_folder_and_spool
from goldenset_dagster.assets import raise_for
from goldenset_dagster.assets.inputs import folder_observation, serve_log_files
from goldenset_dagster.commands import handed_over, run_handed
from goldenset_dagster.partitions import register_days
from goldenset_dagster.resources import LabelSource, LogSource, TraceExportSource, WarehouseResource


def _import(warehouse: WarehouseResource, logs: LogSource, labels: LabelSource, source: TraceExportSource):
    """Import the folder's span files, then the spool (the format, mapping and spool the resource names)."""
    try:
        mapping = source.mapping()
        con = warehouse.connect()
        try:
            done = import_folder_and_spool(
                con,
                source.root,
                source.format,
                source.spool,
                mapping,
                logs.root,
                labels.root if mapping.judge is not None else None,
                warehouse.lock_timeout,
            )
        finally:
            con.close()
    except Exception as exc:
        raise_for(exc, warehouse.db_path)
    return done.folder, done.spool


@dg.asset(pool="duckdb", group_name="ingest", kinds={"duckdb", "python"})
def trace_export(
    context: dg.AssetExecutionContext,
    warehouse: WarehouseResource,
    logs: LogSource,
    labels: LabelSource,
    trace_export_source: TraceExportSource,
) -> dg.MaterializeResult:
    """Retriever spans and their annotations in the trace_export folder, as lines under LOGS (contract 14);
    then what `goldenset traces serve` left in its spool: segments not yet merged, and rejects (14.8).

    Every file of the folder is imported each time: the import merges by key and leaves a
    file whose lines did not change untouched, so serve_log re-reads only the days that
    gained or changed a line. Rejects go to the warehouse (`goldenset rejects`).
    """
    source = trace_export_source
    handoff = handed_over("traces_import")
    spool = None
    if handoff is not None:  # `goldenset traces import PATH` with its own options
        result = run_handed(handoff)
    elif source.signature() is None:
        note = f"no span files in {source.root} and nothing waiting in {source.spool}: nothing imported"
        context.log.info(note)
        return dg.MaterializeResult(metadata={"files_read": 0, "note": note})
    else:
        result, spool = _import(warehouse, logs, labels, source)
    context.log_event(folder_observation(serve_log_files, logs.root))  # the folder it wrote into
    written = [*(result.files_written if result else []), *(spool.files_written if spool else [])]
    days = sorted({f.split("/")[0].removeprefix("dt=") for f in written})
    # Each day written a partition, so that a refresh launched in the UI can choose it.
    register_days(context.instance, days)
    if result is not None:
        context.log.info("; ".join(result.summary()))
    summary = result.to_json() if result is not None else {"rejected": {}, "annotations_skipped": {}}
    return dg.MaterializeResult(
        metadata={
            "files_read": result.files_read if result else 0,
            "serves": result.serves if result else 0,
            "verdicts": result.verdicts if result else 0,
            "judge_labels": result.judge_labels if result else 0,
            "rejected": sum(result.rejected.values()) if result else 0,
            "rejected_by_reason": dg.MetadataValue.json(summary["rejected"]),
            "annotations_skipped": dg.MetadataValue.json(summary["annotations_skipped"]),
            "spool_segments_merged": spool.segments if spool else 0,
            "spool_serves": spool.serves if spool else 0,
            "spool_rejects_stored": spool.rejected + spool.rejects_flushed if spool else 0,
            "days_written": dg.MetadataValue.json(days),
        }
    )
