"""Serve-log ingestion, one dynamic partition per dt= folder."""

import warnings

import dagster as dg

from goldenset import progress
from goldenset.ingest import ingest_all
from goldenset.staging import load_staged, stage_partitions
from goldenset.status import partition_samples, partition_stats
from goldenset_dagster.assets import raise_for, sample_caption, table_metadata
from goldenset_dagster.assets.inputs import folder_observation, serve_log_files
from goldenset_dagster.partitions import days
from goldenset_dagster.resources import LogSource, WarehouseResource

# A single-run backfill policy is what makes one run cover every log day; Dagster
# still labels the parameter beta, which is no news to the user running the CLI.
warnings.filterwarnings("ignore", category=dg.BetaWarning, message=".*backfill_policy.*")


@dg.asset(
    # The log folder (which the trace import, trace_export, writes into: contract 14).
    deps=[serve_log_files],
    partitions_def=days,
    backfill_policy=dg.BackfillPolicy.single_run(),
    pool="duckdb",
    group_name="ingest",
    kinds={"duckdb", "python"},
)
def serve_log(context: dg.AssetExecutionContext, warehouse: WarehouseResource, logs: LogSource):
    """Serve and verdict lines of one log day, validated; bad lines quarantined with a reason.

    A file is read again only when its content changed, and then replaces all of its
    earlier rows, so retries and backfills never duplicate anything. Each partition's
    materialization shows what the warehouse holds of that day (files, lines, serves,
    verdicts, rejected lines by reason, a sample) and what this run did to it.
    """
    keys = list(context.partition_keys)
    context.log_event(folder_observation(serve_log_files, logs.root))
    try:
        staging = logs.staging
        if staging is not None:
            # Days the stage_serve_log job has staged are up to date and cost a stat of
            # each file here; any other is staged now, in this process.
            with progress.step("staging log days"):
                stage_partitions(logs.root, keys, staging, threads=logs.duckdb_threads())
        con = warehouse.connect()
        try:
            if staging is not None:
                reports = {r.dt: r for r in load_staged(con, staging, keys)}
            else:
                reports = {r.dt: r for r in ingest_all(con, logs.root, keys)}
            metadata = day_metadata(con, keys, reports)
        finally:
            con.close()
    except Exception as exc:
        raise_for(exc, warehouse.db_path)
    for dt in keys:
        context.add_asset_metadata(metadata[dt], partition_key=dt)
    return dg.MaterializeResult()


def day_metadata(con, keys: list[str], reports: dict) -> dict[str, dict]:
    """What the warehouse holds of each log day (files, lines, serves, verdicts, rejects, a sample) and what
    this run did to it (`reports`: the day's ingest report, if it read the day)."""
    stats = partition_stats(con, keys)
    samples = partition_samples(con, [dt for dt in keys if stats[dt].log_lines_rejected_at_ingest])
    out = {}
    for dt in keys:
        st, rep = stats[dt], reports.get(dt)
        out[dt] = {
            "files": st.files,
            # The names of goldenset.counts, for one day: log_lines_read = serves + verdicts +
            # log_lines_rejected_at_ingest - unreadable_files + blank_lines (an unreadable_file
            # row is no line read; conflicting duplicate serves are found at build, over every
            # day: the golden_set asset counts them).
            "log_lines_read": st.lines_read,
            "serves": st.serves,
            "verdicts": st.verdicts,
            "log_lines_rejected_at_ingest": st.log_lines_rejected_at_ingest,
            "blank_lines": st.blank_lines,
            "unreadable_files": st.unreadable_files,
            "rejected_by_reason": dg.MetadataValue.json(st.rejected_by_reason),
            "rejected_sample": dg.MetadataValue.md(sample_md(samples.get(dt, []), st.log_lines_rejected_at_ingest)),
            **table_metadata("log_serves", st.serves),
            "files_ingested_this_run": rep.files_ingested if rep else 0,
            "files_unchanged_this_run": rep.files_unchanged if rep else 0,
        }
    return out


def sample_md(rows, total: int) -> str:
    """The rejected lines sampled, as a table under a caption that says how many of how many."""
    if not rows:
        return "No rejected lines."
    out = [
        sample_caption(len(rows), total, "lines rejected at ingest") + ":",
        "",
        "| file | line | reason | raw |",
        "| --- | --- | --- | --- |",
    ]
    for f, line, reason, raw in rows:
        raw = (raw or "").replace("|", "\\|").replace("\n", " ")
        out.append(f"| {f} | {line if line is not None else ''} | {reason} | `{raw}` |")
    return "\n".join(out)
