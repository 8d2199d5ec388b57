"""The jobs of the commands that change an input or an ingested day, not an asset the pipeline makes.

`goldenset labels import` and `goldenset judge label` write label lines into LABELS, so
their run records an observation of `label_files` (what the folder holds afterwards);
`goldenset forget` removes the rows of ingested files, so its run records a
materialization of each day of `serve_log` or `human_labels` it changed, with what the
warehouse holds of that day now. Launched from the UI they change nothing: the label
jobs record what LABELS holds now, and forgetting, which asks before it removes, is the
command's alone (the run says so).
"""

import dagster as dg

from goldenset_dagster.assets.inputs import folder_observation, label_files
from goldenset_dagster.assets.labels import human_labels, label_day_metadata
from goldenset_dagster.assets.serve_log import day_metadata, serve_log
from goldenset_dagster.commands import handed_over, run_handed
from goldenset_dagster.partitions import register_days
from goldenset_dagster.resources import LabelSource, WarehouseResource


def _label_files_op(event: str, command: str, name: str) -> dg.OpDefinition:
    @dg.op(
        name=name,
        out={},
        description=f"Run `{command}` (when it started this run) and record what LABELS holds afterwards.",
    )
    def record(context: dg.OpExecutionContext, labels: LabelSource):
        handoff = handed_over(event)
        if handoff is not None:
            result = run_handed(handoff)
            summary = getattr(result, "summary", None)
            for line in summary() if callable(summary) else []:
                context.log.info(line)
        else:
            context.log.info(f"not started by `{command}`: no label line written; LABELS as it is now")
        # Every day of LABELS a partition, so that a refresh launched in the UI can choose it.
        register_days(context.instance, labels.partitions())
        yield folder_observation(label_files, labels.root)

    return record


@dg.job(
    name="import_labels",
    description="The runs of `goldenset labels import` (a Label Studio export or label JSONL into LABELS): "
    "each records an observation of label_files. Launched here, it imports nothing and records what LABELS "
    "holds now.",
)
def import_labels():
    _label_files_op("labels_import", "goldenset labels import", "import_label_lines")()


@dg.job(
    name="judge_label_queue",
    description="The runs of `goldenset judge label` (the LLM judge labels the labelling queue into LABELS): "
    "each records an observation of label_files. Launched here, it asks no judge and records what LABELS "
    "holds now.",
)
def judge_label_queue():
    _label_files_op("judge_label", "goldenset judge label", "judge_label_lines")()


@dg.op(out={}, description="Run `goldenset forget` (when it started this run); record each day it changed.")
def forget_ingested_files(context: dg.OpExecutionContext, warehouse: WarehouseResource):
    handoff = handed_over("forget")
    if handoff is None:
        context.log.info("forgetting asks before it removes: run `goldenset forget --logs GLOB` (or --labels GLOB)")
        return
    done = run_handed(handoff)
    days = sorted({f.split("/", 1)[0].removeprefix("dt=") for f in done.files})
    if not days:
        return
    register_days(context.instance, days)
    con = warehouse.connect(read_only=True)
    try:
        if done.kind == "logs":
            asset, metadata = serve_log.key, day_metadata(con, days, {})
        else:
            asset, metadata = human_labels.key, label_day_metadata(con, days, {}, "")
    finally:
        con.close()
    for dt in days:
        forgotten = sum(1 for f in done.files if f.startswith(f"dt={dt}/"))
        yield dg.AssetMaterialization(
            asset, partition=dt, metadata={**metadata[dt], "files_forgotten_this_run": forgotten}
        )


@dg.job(
    name="forget_files",
    description="The runs of `goldenset forget`: each records a materialization of every serve_log or human_labels "
    "day whose ingested files it removed. Launched here, it removes nothing (the command asks first).",
)
def forget_files():
    forget_ingested_files()


COMMAND_JOBS = [import_labels, judge_label_queue, forget_files]
