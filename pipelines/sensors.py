"""The reindex sensor: one rebuild per change of corpus fingerprint.

It never opens the DuckDB file (a build may be holding it): it stats the corpus
file, and reads it to fingerprint only when size or mtime moved.
"""

import json

import dagster as dg

from goldenset.errors import CorpusError
from goldenset_dagster.jobs import build_run_config, refresh_golden_set, trigger_tags
from goldenset_dagster.partitions import days, range_tags
from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource


def decide(cursor: dict, stat: tuple[int, float] | None, read_fingerprint) -> tuple[dict, str | None, str]:
    """Pure decision: the new cursor, the run key to launch (or None) and why.

    `read_fingerprint` is called only when the file's (size, mtime) changed. A to B
    to A is two changes, so the run key carries a change counter, not the
    fingerprint alone.
    """
    if stat is None:
        return cursor, None, "corpus file is missing"
    size, mtime = stat
    if cursor.get("size") == size and cursor.get("mtime") == mtime:
        return cursor, None, "corpus file unchanged (size and mtime)"
    try:
        fp = read_fingerprint()
    except CorpusError as exc:
        return {**cursor, "size": size, "mtime": mtime}, None, f"corpus not usable: {exc}"
    new = {**cursor, "size": size, "mtime": mtime}
    if fp == cursor.get("fingerprint"):
        return new, None, "corpus file touched, fingerprint unchanged"
    changes = int(cursor.get("changes", 0)) + 1
    new.update(fingerprint=fp, changes=changes)
    return new, f"reindex-{changes}-{fp[:16]}", f"fingerprint changed to {fp[:16]}"


@dg.sensor(
    job=refresh_golden_set,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Rebuild the golden set (trigger reindex) each time the corpus fingerprint changes.",
)
def corpus_reindex_sensor(
    context: dg.SensorEvaluationContext, corpus_source: CorpusSource, logs: LogSource, labels: LabelSource
):
    cursor = json.loads(context.cursor) if context.cursor else {}
    new_cursor, run_key, why = decide(cursor, corpus_source.stat(), lambda: corpus_source.read().fingerprint)
    if run_key is None:
        context.update_cursor(json.dumps(new_cursor))
        return dg.SkipReason(why)
    present = sorted(set(logs.partitions()) | set(labels.partitions()))
    known = context.instance.get_dynamic_partitions(days.name)
    new_days = [d for d in present if d not in set(known)]
    keys = [*known, *new_days]
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=run_key,
                run_config=build_run_config("reindex"),
                tags={**range_tags(keys), **trigger_tags("reindex")},
            )
        ]
        if keys
        else [],
        dynamic_partitions_requests=[days.build_add_request(new_days)] if new_days else [],
        cursor=json.dumps(new_cursor),
        skip_reason=None if keys else dg.SkipReason("no log days to build from yet"),
    )
