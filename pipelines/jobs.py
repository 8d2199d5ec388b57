"""Jobs: the whole refresh (ingest, snapshot, build, queue, export), a rebuild without logs, the pool, traces.

Every run says what started it in the tag `goldenset/trigger`: `cli` (a `goldenset`
command), `ui` (launched in the UI), `schedule`, `sensor:NAME` or `backfill`. The command
line, the schedules and the sensors set it when they create the run; a run launched in the
UI, or by a backfill, gets it from Dagster's own tags (`dagster/from_ui`,
`dagster/backfill`) when its first resource starts (`stamp_trigger`), since a job's tags
are the same for every launch and an asset backfill runs the hidden asset job, which has
none. The tag is Dagster's; the build's own trigger in the warehouse (`golden_builds.trigger`:
`schedule`, `reindex`, `manual`, contract section 4) is run config and says why it was built.
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg

from goldenset_dagster.assets.corpus import corpus_snapshot
from goldenset_dagster.assets.golden_set import golden_set, golden_set_export, relabel_queue
from goldenset_dagster.assets.labelling import labelling_queue
from goldenset_dagster.assets.labels import human_labels
from goldenset_dagster.assets.serve_log import serve_log
from goldenset_dagster.assets.trace_export import trace_export

TRIGGER_TAG = "goldenset/trigger"
CLI, UI, SCHEDULE, BACKFILL, SENSOR_PREFIX = "cli", "ui", "schedule", "backfill", "sensor:"
# Dagster's own tags that say how a run was launched.
FROM_UI_TAG, BACKFILL_TAG = "dagster/from_ui", "dagster/backfill"
SCHEDULE_NAME_TAG, SENSOR_NAME_TAG = "dagster/schedule_name", "dagster/sensor_name"

refresh_golden_set = dg.define_asset_job(
    "refresh_golden_set",
    selection=[serve_log, human_labels, corpus_snapshot, golden_set, relabel_queue, golden_set_export],
    description="The full refresh: ingest new and changed log and label files, snapshot the corpus, rebuild the "
    "golden set, its relabel queue and export (what `goldenset build` and the nightly schedule run). One run over "
    "a range of days (the partition range tags), not one per day: `goldenset build` gives it the days with a "
    "file to read, the nightly schedule every day.",
)
rebuild_golden_set = dg.define_asset_job(
    "rebuild_golden_set",
    selection=[corpus_snapshot, golden_set, relabel_queue, golden_set_export],
    description="Snapshot the corpus and rebuild from what is already ingested (no log day to read).",
)
# The pool asks every ranker about every golden query: its cost grows with the golden set,
# not with the night's new lines, so it is not part of the nightly refresh. Run it when a
# labelling round starts (this job, or `goldenset pool`).
pool_labelling_queue = dg.define_asset_job(
    "pool_labelling_queue",
    selection=[labelling_queue],
    description="Pool the rankers over the latest build's golden queries into the labelling queue "
    "(and the runs of `goldenset pool`).",
)
# Its own job, launched by trace_export_sensor when span files appear or change: the days it
# writes must exist as LOGS folders before a build decides which days to read, so the refresh
# does not import (it would write days its partition range cannot hold).
import_trace_export = dg.define_asset_job(
    "import_trace_export",
    selection=[trace_export],
    description="Import the span files of the trace_export folder as serve and verdict lines (contract 14), "
    "and the runs of `goldenset traces import`.",
)


def sensor_trigger(name: str) -> str:
    """The trigger of a run a sensor requested."""
    return SENSOR_PREFIX + name


def trigger_tags(trigger: str) -> dict[str, str]:
    """The run tag that says what started a run: cli, ui, schedule, sensor:NAME or backfill."""
    return {TRIGGER_TAG: trigger}


def trigger_of(tags: Mapping[str, str]) -> str:
    """What started a run, from its tags: Dagster's own first, then the one it was created with, else cli.

    A backfill's runs are the backfill's whoever launched it; the UI's mark wins over a
    schedule's or sensor's name a re-executed run copies from its parent. A run with none of
    them and no tag of its own was created by a program (Dagster's command line, a script).
    """
    if BACKFILL_TAG in tags:
        return BACKFILL
    if tags.get(FROM_UI_TAG) == "true":
        return UI
    if SCHEDULE_NAME_TAG in tags:
        return SCHEDULE
    if SENSOR_NAME_TAG in tags:
        return sensor_trigger(tags[SENSOR_NAME_TAG])
    return tags.get(TRIGGER_TAG) or CLI


def stamp_trigger(instance: dg.DagsterInstance, run: dg.DagsterRun | None) -> None:
    """Set the run's `goldenset/trigger` from its tags, when it is missing or says otherwise."""
    if run is None or instance is None:
        return
    trigger = trigger_of(run.tags)
    if run.tags.get(TRIGGER_TAG) != trigger:
        instance.add_run_tags(run.run_id, trigger_tags(trigger))


def build_run_config(trigger: str, log_level: str | None = None, **golden_set_config) -> dict:
    """Run config that stamps the build with its warehouse trigger (and, for the CLI, quiets the logs)."""
    cfg: dict = {"ops": {"golden_set": {"config": {"trigger": trigger, **golden_set_config}}}}
    if log_level:
        cfg["loggers"] = {"console": {"config": {"log_level": log_level}}}
    return cfg
