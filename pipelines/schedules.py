"""The nightly rebuild, straight or staged by parallel workers.

The two schedules are made by `nightly_schedules(cron, staged_cron, timezone)` from the
settings the code location resolved (GOLDENSET_NIGHTLY_CRON, GOLDENSET_STAGED_CRON,
GOLDENSET_SCHEDULE_TZ), not at import. They are alternatives (turn on one), staggered so
that both turned on by mistake do not start together: the staged nightly at 01:00, the
straight one at 02:00, which then finds every file as the staged one left it.

Both start stopped, as do the sensors: `dagster dev` is also how a person looks at a
warehouse (a copy, a laptop), and a run nobody asked for would write it. A deployment turns
on the one it runs, once (`dagster schedule start nightly_golden_set`, or the toggle under
Automation); the Quick start says how.
"""

import dagster as dg

from goldenset_dagster.jobs import SCHEDULE, build_run_config, refresh_golden_set, sensor_trigger, trigger_tags
from goldenset_dagster.partitions import range_tags, register_days
from goldenset_dagster.resources import LabelSource, LogSource
from goldenset_dagster.staging import run_config as staging_run_config
from goldenset_dagster.staging import stage_serve_log


def refresh_request(instance: dg.DagsterInstance, logs: LogSource, labels: LabelSource, launched_by: str):
    """One refresh run over every log and label day present (registered as partitions first).

    The build's trigger in the warehouse is `schedule` (contract section 4); the run's tag
    says which of the two launched it (`launched_by`: schedule, or sensor:refresh_after_staging).
    """
    present = sorted(set(logs.partitions()) | set(labels.partitions()))
    if not present:
        return dg.SkipReason(f"no dt=YYYY-MM-DD folders under {logs.root} yet")
    keys = register_days(instance, present)
    return dg.RunRequest(
        run_key=None,
        run_config=build_run_config("schedule"),
        tags={**range_tags(keys), **trigger_tags(launched_by)},
    )


def _refresh_nightly(context: dg.ScheduleEvaluationContext, logs: LogSource, labels: LabelSource):
    return refresh_request(context.instance, logs, labels, SCHEDULE)


def _stage_nightly(context: dg.ScheduleEvaluationContext, logs: LogSource):
    if logs.staging is None:
        return dg.SkipReason("GOLDENSET_INGEST_WORKERS is 0: nothing is staged (use nightly_golden_set)")
    if not logs.partitions():
        return dg.SkipReason(f"no dt=YYYY-MM-DD folders under {logs.root} yet")
    return dg.RunRequest(run_key=None, run_config=staging_run_config(logs.workers), tags=trigger_tags(SCHEDULE))


def nightly_schedules(
    cron: str = "0 2 * * *", staged_cron: str = "0 1 * * *", timezone: str = "UTC"
) -> list[dg.ScheduleDefinition]:
    """The straight nightly at `cron` and the staged one at `staged_cron`, in `timezone`, both off until turned on."""
    return [
        dg.schedule(
            name="nightly_golden_set",
            job=refresh_golden_set,
            cron_schedule=cron,
            execution_timezone=timezone,
            default_status=dg.DefaultScheduleStatus.STOPPED,
            description="Nightly: ingest new and changed log and label files over every day, rebuild (trigger schedule).",
        )(_refresh_nightly),
        dg.schedule(
            name="nightly_staged_golden_set",
            job=stage_serve_log,
            cron_schedule=staged_cron,
            execution_timezone=timezone,
            default_status=dg.DefaultScheduleStatus.STOPPED,
            description="Nightly, scaled out: stage the log days in GOLDENSET_INGEST_WORKERS processes; "
            "refresh_after_staging then starts the refresh. Turn this on instead of nightly_golden_set.",
        )(_stage_nightly),
    ]


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[stage_serve_log],
    request_job=refresh_golden_set,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="When stage_serve_log succeeds, refresh the golden set from the staged days (trigger schedule).",
)
def refresh_after_staging(context: dg.RunStatusSensorContext, logs: LogSource, labels: LabelSource):
    return refresh_request(context.instance, logs, labels, sensor_trigger("refresh_after_staging"))
