"""The stage_serve_log job: every log day staged as Parquet in parallel processes.

Staging never opens the warehouse, so its steps run at once on Dagster's
multiprocess executor (one process per day, up to `max_concurrent`), outside the
`duckdb` pool; the `serve_log` asset of the refresh then loads the staged days as
the single writer. Run it before the refresh (`goldenset build --workers N` does).
"""

import dagster as dg

from goldenset.errors import GoldensetError
from goldenset.staging import stage_partition
from goldenset_dagster.resources import LogSource

JOB_NAME = "stage_serve_log"


def _mapping_key(dt: str) -> str:
    return "dt_" + "".join(c if c.isalnum() else "_" for c in dt)


@dg.op(out=dg.DynamicOut(str), description="Every dt= folder of LOGS, one output each.")
def log_days(logs: LogSource):
    for dt in logs.partitions():
        yield dg.DynamicOutput(dt, mapping_key=_mapping_key(dt))


@dg.op(description="Validate one log day into Parquet under the staging folder; unchanged days are left as they are.")
def stage_log_day(context: dg.OpExecutionContext, logs: LogSource, dt: str) -> None:
    staging = logs.staging
    if staging is None:
        raise dg.Failure(
            description="staging needs GOLDENSET_INGEST_WORKERS (or --workers) above 0", allow_retries=False
        )
    try:
        day = stage_partition(logs.root, dt, staging, threads=logs.duckdb_threads())
    except GoldensetError as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from exc
    rep = day.report
    context.add_output_metadata(
        {
            "dt": dt,
            "written": day.written,
            "files_seen": rep.files_seen,
            "files_ingested": rep.files_ingested,
            "lines_read": rep.lines_read,
            "serves": rep.serves,
            "verdicts": rep.verdicts,
            "rejected": rep.rejected,
        }
    )


@dg.job(
    name=JOB_NAME,
    executor_def=dg.multiprocess_executor,
    description="Stage every log day as Parquet in parallel processes (no warehouse write); "
    "the refresh's serve_log then loads them.",
)
def stage_serve_log():
    log_days().map(stage_log_day)


def run_config(workers: int) -> dict:
    """At most `workers` days staged at once."""
    return {"execution": {"config": {"max_concurrent": max(1, workers)}}}


def stage_job_from_location() -> dg.JobDefinition:
    """The job with the code location's resources, for a run in other processes (reconstructable)."""
    from goldenset_dagster.definitions import build_definitions

    return build_definitions().resolve_job_def(JOB_NAME)
