"""The nightly rebuild, straight or staged by parallel workers."""

import os

import dagster as dg

from goldenset_dagster.jobs import build_run_config, refresh_golden_set, trigger_tags
from goldenset_dagster.partitions import range_tags, register_days
from goldenset_dagster.resources import LabelSource, LogSource
from goldenset_dagster.staging import run_config as staging_run_config
from goldenset_dagster.staging import stage_serve_log

NIGHTLY_CRON = os.environ.get("GOLDENSET_NIGHTLY_CRON", "0 2 * * *")
NIGHTLY_TZ = os.environ.get("GOLDENSET_SCHEDULE_TZ", "UTC")


def refresh_request(instance: dg.DagsterInstance, logs: LogSource, labels: LabelSource, trigger: str):
    """One refresh run over every log and label day present (registered as partitions first)."""
    present = sorted(set(logs.partitions()) | set(labels.partitions()))
    if not present:
        return dg.SkipReason(f"no dt=YYYY-MM-DD folders under {logs.root} yet")
    keys = register_days(instance, present)
    return dg.RunRequest(
        run_key=None,
        run_config=build_run_config(trigger),
        tags={**range_tags(keys), **trigger_tags(trigger)},
    )


@dg.schedule(
    job=refresh_golden_set,
    cron_schedule=NIGHTLY_CRON,
    execution_timezone=NIGHTLY_TZ,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Nightly: ingest new and changed log and label files over every day, rebuild (trigger schedule).",
)
def nightly_golden_set(context: dg.ScheduleEvaluationContext, logs: LogSource, labels: LabelSource):
    return refresh_request(context.instance, logs, labels, "schedule")


@dg.schedule(
    job=stage_serve_log,
    cron_schedule=NIGHTLY_CRON,
    execution_timezone=NIGHTLY_TZ,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Nightly, scaled out: stage the log days in GOLDENSET_INGEST_WORKERS processes; "
    "refresh_after_staging then starts the refresh. Turn this on instead of nightly_golden_set.",
)
def nightly_staged_golden_set(context: dg.ScheduleEvaluationContext, logs: LogSource):
    if logs.staging is None:
        return dg.SkipReason("GOLDENSET_INGEST_WORKERS is 0: nothing is staged (use nightly_golden_set)")
    if not logs.partitions():
        return dg.SkipReason(f"no dt=YYYY-MM-DD folders under {logs.root} yet")
    return dg.RunRequest(run_key=None, run_config=staging_run_config(logs.workers))


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[stage_serve_log],
    request_job=refresh_golden_set,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="When stage_serve_log succeeds, refresh the golden set from the staged days (trigger schedule).",
)
def refresh_after_staging(context: dg.RunStatusSensorContext, logs: LogSource, labels: LabelSource):
    return refresh_request(context.instance, logs, labels, "schedule")
