"""Log days as Dagster partitions."""

from __future__ import annotations

import dagster as dg

# Dynamic, not daily: every dt= folder present is a partition whatever its date, while
# DailyPartitionsDefinition leaves out today, future days and days before its start.
log_days = dg.DynamicPartitionsDefinition(name="log_days")

RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"


def register_log_days(instance: dg.DagsterInstance, days: list[str]) -> list[str]:
    """Add the days not yet known as partitions; return every known day in Dagster's order."""
    known = instance.get_dynamic_partitions(log_days.name)
    new = [d for d in days if d not in set(known)]
    if new:
        instance.add_dynamic_partitions(log_days.name, new)
    return instance.get_dynamic_partitions(log_days.name)


def range_tags(keys: list[str]) -> dict[str, str]:
    """Tags that make one run cover every partition (a single-run backfill)."""
    return {RANGE_START: keys[0], RANGE_END: keys[-1]} if keys else {}
