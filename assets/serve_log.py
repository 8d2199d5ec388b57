"""Daily-partitioned serve-log ingestion."""


import warnings

import dagster as dg

from goldenset.ingest import ingest_all
from goldenset.status import rejected_sample
from pipelines.partitions import log_days
from resources import LogSource, WarehouseResource


# A single-run backfill policy is what makes one run cover every log day; Dagster
# still labels the parameter beta, which is no news to the user running the CLI.
warnings.filterwarnings("ignore", category=dg.BetaWarning, message=".*backfill_policy.*")


@dg.asset(
    partitions_def=log_days,
    backfill_policy=dg.BackfillPolicy.single_run(),
    pool="duckdb",
    group_name="ingest",
    kinds={"duckdb", "python"},
)
def serve_log(context: dg.AssetExecutionContext, warehouse: WarehouseResource, logs: LogSource):
    """Serve and verdict lines of one log day, validated; bad lines quarantined with a reason.

    A file is read again only when its content changed, and then replaces all of its
    earlier rows, so retries and backfills never duplicate anything.
    """
    keys = context.partition_keys
    con = warehouse.connect()
    try:
        reports = ingest_all(con, logs.root, keys)
        sample = rejected_sample(con, list(keys))
    finally:
        con.close()
    reasons: dict[str, int] = {}
    for r in reports:
        for k, v in r.reasons.items():
            reasons[k] = reasons.get(k, 0) + v
    return dg.MaterializeResult(
        metadata={
            "partitions": len(keys),
            "files_ingested": sum(r.files_ingested for r in reports),
            "files_unchanged": sum(r.files_unchanged for r in reports),
            "lines_read": sum(r.lines_read for r in reports),
            "serves": sum(r.serves for r in reports),
            "verdicts": sum(r.verdicts for r in reports),
            "rejected": sum(r.rejected for r in reports),
            "rejected_by_reason": dg.MetadataValue.json(reasons),
            "rejected_sample": dg.MetadataValue.md(_sample_md(sample)),
        }
    )


def _sample_md(rows) -> str:
    if not rows:
        return "No rejected lines."
    out = ["| file | line | reason | raw |", "| --- | --- | --- | --- |"]
    for f, line, reason, raw in rows:
        raw = (raw or "").replace("|", "\\|").replace("\n", " ")
        out.append(f"| {f} | {line if line is not None else ''} | {reason} | `{raw}` |")
    return "\n".join(out)
