"""Jobs: the whole refresh (ingest, snapshot, build, queue, export), a rebuild without logs, the labelling pool."""

from __future__ import annotations

import dagster as dg

from goldenset_dagster.assets.corpus import corpus_snapshot
from goldenset_dagster.assets.golden_set import golden_set, golden_set_export, relabel_queue
from goldenset_dagster.assets.labelling import labelling_queue
from goldenset_dagster.assets.labels import human_labels
from goldenset_dagster.assets.serve_log import serve_log
from goldenset_dagster.assets.trace_export import trace_export

TRIGGER_TAG = "goldenset/trigger"
# Every run says what started it. A run launched from the UI has only its job's tags, so
# each job carries `manual`; the schedule, the sensor and the CLI set their own over it.
MANUAL = {TRIGGER_TAG: "manual"}

refresh_golden_set = dg.define_asset_job(
    "refresh_golden_set",
    selection=[serve_log, human_labels, corpus_snapshot, golden_set, relabel_queue, golden_set_export],
    tags=MANUAL,
    description="Ingest new and changed log and label files, snapshot the corpus, rebuild the golden set. "
    "Run it over a range of days at once (partition range tags): one run, not one per day "
    "(goldenset build gives it the days with a file to read; the nightly schedule every day).",
)
rebuild_golden_set = dg.define_asset_job(
    "rebuild_golden_set",
    selection=[corpus_snapshot, golden_set, relabel_queue, golden_set_export],
    tags=MANUAL,
    description="Snapshot the corpus and rebuild from what is already ingested (no log days yet).",
)
# The pool asks every ranker about every golden query: its cost grows with the golden set,
# not with the night's new lines, so it is not part of the nightly refresh. Run it when a
# labelling round starts (this job, or `goldenset pool`).
pool_labelling_queue = dg.define_asset_job(
    "pool_labelling_queue",
    selection=[labelling_queue],
    tags=MANUAL,
    description="Pool the rankers over the latest build's golden queries into the labelling queue.",
)

# Its own job, launched by trace_export_sensor when span files appear or change: the days
# it writes must exist as LOGS folders before a build decides which days to read.
import_trace_export = dg.define_asset_job(
    "import_trace_export",
    selection=[trace_export],
    tags=MANUAL,
    description="Import the span files of the trace_export folder as serve and verdict lines (contract 14).",
)


def trigger_tags(trigger: str) -> dict[str, str]:
    """The run tag that says what started a build (schedule, reindex, manual)."""
    return {TRIGGER_TAG: trigger}


def build_run_config(trigger: str, log_level: str | None = None, **golden_set_config) -> dict:
    """Run config that stamps the build with its trigger (and, for the CLI, quiets the logs)."""
    cfg: dict = {"ops": {"golden_set": {"config": {"trigger": trigger, **golden_set_config}}}}
    if log_level:
        cfg["loggers"] = {"console": {"config": {"log_level": log_level}}}
    return cfg
