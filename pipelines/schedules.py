"""The nightly rebuild."""

import os

import dagster as dg

from goldenset_dagster.jobs import build_run_config, refresh_golden_set, trigger_tags
from goldenset_dagster.partitions import range_tags, register_days
from goldenset_dagster.resources import LabelSource, LogSource

NIGHTLY_CRON = os.environ.get("GOLDENSET_NIGHTLY_CRON", "0 2 * * *")
NIGHTLY_TZ = os.environ.get("GOLDENSET_SCHEDULE_TZ", "UTC")


@dg.schedule(
    job=refresh_golden_set,
    cron_schedule=NIGHTLY_CRON,
    execution_timezone=NIGHTLY_TZ,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Nightly: ingest new and changed log and label files over every day, rebuild (trigger schedule).",
)
def nightly_golden_set(context: dg.ScheduleEvaluationContext, logs: LogSource, labels: LabelSource):
    present = sorted(set(logs.partitions()) | set(labels.partitions()))
    if not present:
        return dg.SkipReason(f"no dt=YYYY-MM-DD folders under {logs.root} yet")
    keys = register_days(context.instance, present)
    return dg.RunRequest(
        run_key=None,
        run_config=build_run_config("schedule"),
        tags={**range_tags(keys), **trigger_tags("schedule")},
    )
