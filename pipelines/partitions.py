"""Days as Dagster partitions: every dt= folder of LOGS or LABELS is one."""

from __future__ import annotations

import dagster as dg
from sqlalchemy.exc import IntegrityError

# Dynamic, not daily: every dt= folder present is a partition whatever its date, while
# DailyPartitionsDefinition leaves out today, future days and days before its start.
# One definition for both inputs, because a Dagster job runs one partitions definition:
# serve_log(day) reads LOGS/dt=day, human_labels(day) reads LABELS/dt=day, and a day
# that one of them lacks is materialized with "no folder" in its metadata.
DAYS = "days"
days = dg.DynamicPartitionsDefinition(name=DAYS)

RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"


def register_days(instance: dg.DagsterInstance, present: list[str]) -> list[str]:
    """Add the days not yet known as partitions; return every known day in Dagster's order."""
    name = DAYS
    for attempt in range(5):
        new = sorted(set(present) - set(instance.get_dynamic_partitions(name)))
        if not new:
            break
        try:
            instance.add_dynamic_partitions(name, new)
            break
        except IntegrityError:
            # Two builds started together both found the day missing and both added it: the
            # storage's unique key refused the second (seen under load, as "UNIQUE constraint
            # failed: dynamic_partitions..."). The day is known now; read again and add the rest.
            if attempt == 4:
                raise
    return list(instance.get_dynamic_partitions(name))


def range_tags(keys: list[str]) -> dict[str, str]:
    """Tags that make one run cover every partition (a single-run backfill)."""
    return {RANGE_START: keys[0], RANGE_END: keys[-1]} if keys else {}
