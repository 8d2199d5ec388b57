"""`refresh_now`: the full refresh in one click from the UI, what `goldenset build` does.

Why a job of its own. Dagster's UI opens its partition dialog for every job that holds a
partitioned asset, and `refresh_golden_set` holds two (`serve_log`, `human_labels`: a day
each); Dagster 1.13 opens that dialog with no day chosen, whatever the definitions say, so
the refresh is at least **Materialize all**, a choice of days, then **Launch backfill**, and
its run waits for the backfill daemon's next pass (every 30 s). A job without partitioned
assets launches from its Launchpad in one click, **Launch Run**, with nothing to configure:
this one.

What its one step does is the command line's build, launched from the UI, in the run's own
process: first the trace import when the trace_export folder or the receiver's spool holds
something (else a note in the log: nothing to import is not a warning), as `goldenset traces
import` would; then `goldenset build` (`goldenset_dagster.runner.run_refresh`): the same
refusals (a moved source, a rubric edit that changes labels, a changed forgotten file), the
same days (those with a new or changed file; none: the rebuild), the same checks. Each is a
run of its own job (contract 18.1: one run per change), created in this run's instance and
tagged with this run's trigger and `goldenset/requested_by: RUN_ID`, so the asset pages, the
checks and the timeline show them as they show any refresh. A refusal fails this step with
the command's one line.

Why not a fake asset or a hand-made materialization: an asset that launches a refresh would
sit in the lineage graph as data it is not, and materializations logged by hand would skip
the refresh's own steps and checks.
"""

from pathlib import Path
from typing import Any

import dagster as dg

from goldenset.errors import GoldensetError
from goldenset.labelling.judge_gate import deprecated_settings
from goldenset.settings import Settings, same_path
from goldenset_dagster.commands import concrete, running_command
from goldenset_dagster.jobs import TRIGGER_TAG, trigger_of
from goldenset_dagster.launch import MAX_RETRIES_TAG, announce_process, execute, location_tags
from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource, TraceExportSource, WarehouseResource

JOB_NAME = "refresh_now"
REQUESTED_BY_TAG = "goldenset/requested_by"


def settings_of(
    warehouse: WarehouseResource,
    logs: LogSource,
    corpus_source: CorpusSource,
    labels: LabelSource,
    trace_export_source: TraceExportSource,
) -> Settings:
    """The settings the code location was loaded with, as its resources hold them.

    A value the environment gives as the location's own resolution gives it stays the
    variable's (or the default's): the messages name `GOLDENSET_LOGS=PATH`, not a flag nobody
    typed (contract 17.2). Only a resource configured otherwise (in the Launchpad) is a flag.
    """
    given: dict[str, Any] = {
        "db": warehouse.db_path,
        "logs": logs.path,
        "staging": logs.staging_path,
        "corpus": corpus_source.path,
        "labels": labels.path,
        "rubric": labels.rubric_path,
        "trace_export": trace_export_source.path,
        "trace_mapping": trace_export_source.mapping_path,
        "trace_spool": trace_export_source.spool_path,
        "lock_timeout": warehouse.lock_timeout,
        "ingest_workers": logs.workers,
    }
    own = Settings.resolve()
    flags = {name: value for name, value in given.items() if not _same(value, getattr(own, name))}
    return concrete(Settings.resolve(None, **flags)) if flags else concrete(own)


def _same(given: Any, own: Any) -> bool:
    """A resource's value is the setting's own: a path the same place (`~`, a trailing slash), a number equal."""
    if isinstance(own, Path):
        return same_path(str(given), own)
    return str(given) == str(own)


def requested_tags(run: dg.DagsterRun) -> dict[str, str]:
    """The tags of a run this run starts: its trigger, where it came from, its job page, no daemon retry."""
    return {
        TRIGGER_TAG: trigger_of(run.tags),
        REQUESTED_BY_TAG: run.run_id,
        MAX_RETRIES_TAG: "0",
        **location_tags(),
    }


def trace_source(settings: Settings, configured: TraceExportSource) -> TraceExportSource:
    """The trace_export resource the import runs with: the settings' places, the configured format."""
    return TraceExportSource(
        path=str(settings.trace_export),
        format=configured.format,
        mapping_path=str(settings.trace_mapping),
        spool_path=str(settings.trace_spool),
    )


def trace_note(source: TraceExportSource) -> str | None:
    """Why the trace import is skipped (nothing in the folder or the spool), or None: there is something."""
    if source.signature() is not None:
        return None
    return f"trace import skipped: no span files in {source.root} and nothing waiting in {source.spool}"


@dg.op(
    name="refresh_everything",
    out={},
    description="The trace import when its folder or spool holds something, then `goldenset build`, each a run "
    "of its own job tagged with this run's trigger and `goldenset/requested_by`.",
)
def refresh_everything(
    context: dg.OpExecutionContext,
    warehouse: WarehouseResource,
    logs: LogSource,
    corpus_source: CorpusSource,
    labels: LabelSource,
    trace_export_source: TraceExportSource,
):
    tags = requested_tags(context.run)
    try:  # the settings are the build's as much as the import's: as `goldenset build`, which reads them first
        settings = settings_of(warehouse, logs, corpus_source, labels, trace_export_source)
    except Exception as exc:
        raise _failure(exc, BUILD) from None
    try:
        source = trace_source(settings, trace_export_source)
        note = trace_note(source)
    except Exception as exc:
        raise _failure(exc, TRACE_IMPORT) from None
    if note is not None:
        context.log.info(note)
    else:
        _import_traces(context, settings, source, tags)
    try:
        from goldenset_dagster.runner import run_refresh

        for warning in deprecated_settings():  # what the command prints before it builds
            context.log.warning(warning)
        with running_command(["build"]):
            result = run_refresh(
                settings, trigger="manual", notify=context.log.info, instance=context.instance, tags=tags
            )
    except Exception as exc:
        raise _failure(exc, BUILD) from None
    build = result.status.build
    for line in result.warnings:
        context.log.warning(line)
    context.log.info(
        f"published build {build.build_id}: {build.n_queries} golden queries, {build.n_labels} labels "
        f"(runs requested by this one: filter the Runs list by {REQUESTED_BY_TAG}={context.run_id})"
    )


def _import_traces(
    context: dg.OpExecutionContext, settings: Settings, source: TraceExportSource, tags: dict[str, str]
) -> None:
    """Run import_trace_export, with the resource's format, as its own run; a failure fails the step."""
    from goldenset_dagster.definitions import build_definitions

    try:
        job = build_definitions(settings).resolve_job_def("import_trace_export")
        with running_command(["traces", "import"]):
            run_id = announce_process(context.instance, job.name)
        context.log.info(f"trace import: run {run_id[:8]} of {job.name}")
        config = {"resources": {"trace_export_source": {"config": {"format": source.format}}}}
        execute(job, context.instance, run_config=config, tags=tags, run_id=run_id)
    except Exception as exc:
        raise _failure(exc, TRACE_IMPORT) from None


# What a failure names, and the command a terminal runs for it.
TRACE_IMPORT, BUILD = ("the trace import", "goldenset traces import"), ("the build", "goldenset build")


def _failure(exc: BaseException, what: tuple[str, str]) -> dg.Failure:
    """The step's failure, no retry: a refusal with the command's one line (its options are the command line's),
    any other error as `failed` with its first line."""
    from goldenset_dagster.runner import unwrap

    name, command = what
    cause = unwrap(exc, (GoldensetError, dg.Failure))
    first = (str(cause).splitlines() or [type(cause).__name__])[0]
    if isinstance(cause, dg.Failure) and cause.description:
        first = cause.description.splitlines()[0]
    verb = "refused" if isinstance(cause, (GoldensetError, dg.Failure)) else "failed"
    return dg.Failure(
        description=f"{name} {verb}: {first} (what it names runs in a terminal with this location's settings; "
        f"the command there is `{command}`)",
        allow_retries=False,
    )


@dg.job(
    name=JOB_NAME,
    description="The full refresh in one click: Launchpad, Launch Run. What `goldenset build` does, from the UI: "
    "the trace import when the trace_export folder or spool holds something (else a note), then the refresh of "
    "the days with a new or changed file (refresh_golden_set; none: rebuild_golden_set), each its own run tagged "
    "goldenset/requested_by with this run's id.",
)
def refresh_now():
    refresh_everything()
