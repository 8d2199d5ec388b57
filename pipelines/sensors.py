"""The sensors: one rebuild per change of corpus fingerprint; one import per change of span files.

Neither opens the DuckDB file (a build may be holding it): the reindex sensor stats
the corpus file, and reads it to fingerprint only when size or mtime moved; the
trace sensor stats the files of the trace_export folder and what waits in the
receiver's spool (sealed segments, spooled rejects; open segments when no receiver
runs). The trace sensor's first tick records what it finds and requests nothing.
"""

import json

import dagster as dg

from goldenset.errors import CorpusError
from goldenset_dagster.jobs import build_run_config, import_trace_export, refresh_golden_set, trigger_tags
from goldenset_dagster.partitions import days, range_tags
from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource, TraceExportSource


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


# The trace sensor's cursor before it has seen anything: a first tick records the state it
# finds and requests nothing (issue 40: a sensor waits for a change).
_NOTHING = "none"


@dg.sensor(
    job=import_trace_export,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Import the trace_export folder's span files, and what `goldenset traces serve` left in its "
    "spool, when either changes; the nightly build then reads the lines.",
)
def trace_export_sensor(context: dg.SensorEvaluationContext, trace_export_source: TraceExportSource):
    source = trace_export_source
    signature = source.signature() or _NOTHING
    if context.cursor is None:
        return dg.SensorResult(
            cursor=signature, skip_reason=dg.SkipReason("first tick: recorded the span files and spool as they are")
        )
    if signature == context.cursor:
        return dg.SkipReason("span files and spool unchanged (names, sizes, mtimes)")
    if signature == _NOTHING:
        return dg.SensorResult(
            cursor=signature, skip_reason=dg.SkipReason(f"no span files in {source.root}, nothing in {source.spool}")
        )
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=f"traces-{signature[:16]}")], cursor=signature)
