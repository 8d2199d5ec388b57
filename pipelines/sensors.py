"""The sensors: one rebuild per change of corpus fingerprint; one import per change of span files.

Neither opens the DuckDB file (a build may be holding it): the reindex sensor stats
the corpus file, and reads it to fingerprint only when size or mtime moved; the
trace sensor stats the files of the trace_export folder and what waits in the
receiver's spool (sealed segments, spooled rejects; open segments when no receiver
runs).

A sensor turned on for the first time (no cursor) records what it sees as its cursor and
requests nothing: it cannot know which fingerprint or which span files the last build or
import saw, and a rebuild of an unchanged corpus (what turning it on used to start) costs
a whole build for nothing. Every later change of what it sees is one request, A to B to A
included (contract section 6). Its runs carry `goldenset/trigger: sensor:NAME`.
"""

import json

import dagster as dg

from goldenset.errors import CorpusError
from goldenset_dagster.assets.inputs import corpus_observation
from goldenset_dagster.jobs import build_run_config, import_trace_export, refresh_golden_set, sensor_trigger
from goldenset_dagster.jobs import trigger_tags as tags_of
from goldenset_dagster.partitions import days, range_tags
from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource, TraceExportSource

# The trace sensor's cursor once it has looked and found no span file and nothing spooled.
NO_FILES = "none"


def decide(cursor: dict | None, stat: tuple[int, float] | None, read_fingerprint) -> tuple[dict, str | None, str]:
    """Pure decision: the new cursor, the run key to launch (or None) and why.

    `read_fingerprint` is called only when the file's (size, mtime) changed, or on the
    first evaluation (`cursor` None), which records what it reads and launches nothing.
    A to B to A is two changes, so the run key carries a change counter, not the
    fingerprint alone.
    """
    first = cursor is None
    cursor = cursor or {"fingerprint": None, "changes": 0}
    if stat is None:
        return cursor, None, "corpus file is missing" + ("; recorded as the starting point" if first else "")
    size, mtime = stat
    if not first and cursor.get("size") == size and cursor.get("mtime") == mtime:
        return cursor, None, "corpus file unchanged (size and mtime)"
    new = {**cursor, "size": size, "mtime": mtime}
    try:
        fp = read_fingerprint()
    except CorpusError as exc:
        return new, None, f"corpus not usable: {exc}"
    if first:
        new["fingerprint"] = fp
        return new, None, f"first evaluation: fingerprint {fp[:16]} recorded; the next change rebuilds"
    if fp == cursor.get("fingerprint"):
        return new, None, "corpus file touched, fingerprint unchanged"
    changes = int(cursor.get("changes", 0)) + 1
    new.update(fingerprint=fp, changes=changes)
    return new, f"reindex-{changes}-{fp[:16]}", f"fingerprint changed to {fp[:16]}"


@dg.sensor(
    job=refresh_golden_set,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Rebuild the golden set (trigger reindex) each time the corpus fingerprint changes; "
    "turned on, it first records the current fingerprint and starts nothing.",
)
def corpus_reindex_sensor(
    context: dg.SensorEvaluationContext, corpus_source: CorpusSource, logs: LogSource, labels: LabelSource
):
    cursor = json.loads(context.cursor) if context.cursor else None
    read: dict = {}

    def fingerprint() -> str:
        read["snapshot"] = corpus_source.read()
        return read["snapshot"].fingerprint

    new_cursor, run_key, why = decide(cursor, corpus_source.stat(), fingerprint)
    # What it read, shown on corpus_file (its data version is the fingerprint).
    seen = [corpus_observation(corpus_source.path, s.fingerprint, s.active_docs) for s in read.values()]
    if run_key is None:
        return dg.SensorResult(cursor=json.dumps(new_cursor), skip_reason=dg.SkipReason(why), asset_events=seen)
    present = sorted(set(logs.partitions()) | set(labels.partitions()))
    known = context.instance.get_dynamic_partitions(days.name)
    new_days = [d for d in present if d not in set(known)]
    keys = [*known, *new_days]
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=run_key,
                run_config=build_run_config("reindex"),
                tags={**range_tags(keys), **tags_of(sensor_trigger(corpus_reindex_sensor.name))},
            )
        ]
        if keys
        else [],
        dynamic_partitions_requests=[days.build_add_request(new_days)] if new_days else [],
        cursor=json.dumps(new_cursor),
        skip_reason=None if keys else dg.SkipReason("no log days to build from yet"),
        asset_events=seen,
    )


@dg.sensor(
    job=import_trace_export,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Import the trace_export folder's span files, and what `goldenset traces serve` left in its "
    "spool, when either changes (the nightly build then reads the lines); turned on, it first records what is "
    "there and starts nothing.",
)
def trace_export_sensor(context: dg.SensorEvaluationContext, trace_export_source: TraceExportSource):
    source = trace_export_source
    signature = source.signature() or NO_FILES
    if context.cursor is None:
        return dg.SensorResult(
            cursor=signature, skip_reason=dg.SkipReason("first tick: recorded the span files and spool as they are")
        )
    if signature == context.cursor:
        return dg.SkipReason("span files and spool unchanged (names, sizes, mtimes)")
    if signature == NO_FILES:
        return dg.SensorResult(
            cursor=signature, skip_reason=dg.SkipReason(f"no span files in {source.root}, nothing in {source.spool}")
        )
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(run_key=f"traces-{signature[:16]}", tags=tags_of(sensor_trigger(trace_export_sensor.name)))
        ],
        cursor=signature,
    )
