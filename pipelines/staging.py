"""The stage_serve_log job: every log day staged as Parquet in parallel processes.

Staging never opens the warehouse, so its steps run at once on Dagster's
multiprocess executor, outside the `duckdb` pool: the days are dealt round-robin
into one share per worker (a step process costs about a second to start, so one per
day would spend a backfill starting processes), and each share is one step. The
`serve_log` asset of the refresh then loads the staged days as the single writer. Run it before the refresh (`goldenset build --workers N` does).
"""

import dagster as dg

from goldenset.errors import GoldensetError
from goldenset.staging import stage_partitions
from goldenset_dagster.resources import LogSource

JOB_NAME = "stage_serve_log"


def shares(days: list[str], workers: int) -> list[list[str]]:
    """The days dealt round-robin into at most `workers` non-empty shares."""
    n = max(1, min(workers, len(days)))
    return [days[i::n] for i in range(n)] if days else []


@dg.op(out=dg.DynamicOut(list), description="The dt= folders of LOGS, dealt into one share per worker.")
def log_days(logs: LogSource):
    for i, share in enumerate(shares(logs.partitions(), logs.workers)):
        yield dg.DynamicOutput(share, mapping_key=f"share_{i}")


@dg.op(description="Validate log days into Parquet under the staging folder; unchanged days are left as they are.")
def stage_log_days(context: dg.OpExecutionContext, logs: LogSource, days: list) -> None:
    staging = logs.staging
    if staging is None:
        raise dg.Failure(
            description="staging needs GOLDENSET_INGEST_WORKERS (or --workers) above 0", allow_retries=False
        )
    try:
        staged = stage_partitions(logs.root, list(days), staging, threads=logs.duckdb_threads())
    except GoldensetError as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from exc
    written = []
    for day in staged:
        rep = day.report
        context.log.info(
            f"dt={rep.dt}: {'staged' if day.written else 'unchanged'}, {rep.files_ingested} of {rep.files_seen} "
            f"files read, {rep.serves} serves, {rep.verdicts} verdicts, {rep.rejected} rejected"
        )
        if day.written:
            written.append(rep.dt)
    context.add_output_metadata({"days": len(days), "days_written": len(written), "written": ", ".join(written)})


@dg.job(
    name=JOB_NAME,
    executor_def=dg.multiprocess_executor,
    description="Stage every log day as Parquet in parallel processes (no warehouse write); "
    "the refresh's serve_log then loads them.",
)
def stage_serve_log():
    log_days().map(stage_log_days)


def run_config(workers: int) -> dict:
    """At most `workers` days staged at once."""
    return {"execution": {"config": {"max_concurrent": max(1, workers)}}}


def stage_job_with(settings_json: str) -> dg.JobDefinition:
    """The job with the resources of the settings given as JSON, for a run in other processes (reconstructable)."""
    from goldenset.settings import Settings
    from goldenset_dagster.definitions import build_definitions

    return build_definitions(Settings.model_validate_json(settings_json)).resolve_job_def(JOB_NAME)
