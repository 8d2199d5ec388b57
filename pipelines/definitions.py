"""The goldenset code location: `dagster dev` (workspace.yaml) loads this module.

`build_definitions(settings)` takes its paths and schedule from a `Settings` it is given;
`defs` resolves them from the environment when the location loads, not when this module
is imported, and the `build` command passes the settings of its own flags.
"""

from __future__ import annotations

import re

import dagster as dg

from goldenset.errors import UsageError
from goldenset.settings import Settings
from goldenset_dagster.assets.benchmark import BENCHMARK_ASSETS, BENCHMARK_JOBS
from goldenset_dagster.assets.corpus import corpus_snapshot
from goldenset_dagster.assets.golden_set import golden_set, golden_set_export, relabel_queue
from goldenset_dagster.assets.inputs import INPUTS
from goldenset_dagster.assets.labelling import labelling_queue
from goldenset_dagster.assets.labels import human_labels
from goldenset_dagster.assets.serve_log import serve_log
from goldenset_dagster.assets.trace_export import trace_export
from goldenset_dagster.command_jobs import COMMAND_JOBS
from goldenset_dagster.jobs import import_trace_export, pool_labelling_queue, rebuild_golden_set, refresh_golden_set
from goldenset_dagster.refresh_now import refresh_now
from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource, TraceExportSource, WarehouseResource
from goldenset_dagster.resources.embedder import EmbedderResource
from goldenset_dagster.schedules import nightly_schedules, refresh_after_staging
from goldenset_dagster.sensors import corpus_reindex_sensor, trace_export_sensor
from goldenset_dagster.staging import stage_serve_log
from goldenset_dagster.versions import code_version

# One process per run by default, steps one after the other: the steps share a DuckDB file
# one writer at a time, so a process per step (Dagster's default) bought nothing but each
# process's start, 17 to 85 s for about 7 s of work from the UI. A run can still ask for a
# process per step (run config `execution: {config: {multiprocess: {}}}`), for a step that
# needs isolation. stage_serve_log keeps its own multiprocess executor: parallel processes
# are its point.
IN_PROCESS_UNLESS_ASKED = dg.multi_or_in_process_executor.configured(
    lambda chosen: chosen,
    name="in_process_unless_asked",
    config_schema=dg.Field(
        dg.Selector({"in_process": dg.Permissive(), "multiprocess": dg.Permissive()}),
        default_value={"in_process": {}},
        description="in_process (the default) or multiprocess (a process per step), with their options.",
    ),
)


def _path(settings: Settings, name: str) -> str | dg.EnvVar:
    # A value from its variable stays a reference to it (EnvVar), out of the run config the
    # UI stores; a flag's value or a place under the home is the resolved path itself.
    if name in settings.from_environment:
        return dg.EnvVar(Settings.variable(name).env)
    return str(getattr(settings, name))


def owners(text: str) -> list[str]:
    """GOLDENSET_OWNERS as Dagster takes it: each an email or team:NAME (UsageError naming the one that is not)."""
    found = [o.strip() for o in text.split(",") if o.strip()]
    for owner in found:
        if not (OWNER.fullmatch(owner) or owner.startswith("team:") and len(owner) > 5):
            raise UsageError(
                f"{Settings.variable('owners').env}: {owner!r} is neither an email nor team:NAME; "
                "give owners comma-separated, e.g. team:search,ana@example.com"
            )
    return found


OWNER = re.compile(r"[^@\s,]+@[^@\s,]+")


def _owned_and_versioned(assets: list[dg.AssetsDefinition], owned_by: list[str]) -> list[dg.AssetsDefinition]:
    """Each asset with its owners and the code version of the code it runs (goldenset_dagster.versions)."""
    out: list[dg.AssetsDefinition] = []
    for asset in assets:
        version = code_version(asset.op.compute_fn.decorated_fn.__module__)  # type: ignore[union-attr]

        def attributes(spec: dg.AssetSpec, version: str = version) -> dg.AssetSpec:
            return spec.replace_attributes(owners=owned_by, code_version=version)

        out += dg.map_asset_specs(attributes, [asset])
    return out


def build_definitions(settings: Settings) -> dg.Definitions:
    """The assets, jobs, schedules, sensors and resources, with `settings`' paths, schedule and owners."""
    owned_by = owners(settings.owners)
    made = [
        trace_export,
        serve_log,
        human_labels,
        corpus_snapshot,
        golden_set,
        relabel_queue,
        labelling_queue,
        golden_set_export,
        *BENCHMARK_ASSETS,
    ]
    return dg.Definitions(
        assets=[
            *(spec.replace_attributes(owners=owned_by) for spec in INPUTS),
            *_owned_and_versioned(made, owned_by),
        ],
        executor=IN_PROCESS_UNLESS_ASKED,
        jobs=[
            refresh_golden_set,
            rebuild_golden_set,
            refresh_now,
            pool_labelling_queue,
            stage_serve_log,
            import_trace_export,
            *BENCHMARK_JOBS,
            *COMMAND_JOBS,
        ],
        schedules=nightly_schedules(settings.nightly_cron, settings.staged_cron, settings.schedule_tz),
        sensors=[corpus_reindex_sensor, refresh_after_staging, trace_export_sensor],
        resources={
            "warehouse": WarehouseResource(db_path=_path(settings, "db"), lock_timeout=settings.lock_timeout),
            "logs": LogSource(
                path=_path(settings, "logs"), staging_path=_path(settings, "staging"), workers=settings.ingest_workers
            ),
            "corpus_source": CorpusSource(path=_path(settings, "corpus")),
            "labels": LabelSource(path=_path(settings, "labels"), rubric_path=_path(settings, "rubric")),
            "trace_export_source": TraceExportSource(
                path=_path(settings, "trace_export"),
                mapping_path=_path(settings, "trace_mapping"),
                spool_path=_path(settings, "trace_spool"),
            ),
            "embedder": EmbedderResource(model_path=settings.dense_model),
        },
    )


@dg.definitions
def defs() -> dg.Definitions:
    """What `dagster dev` loads: the settings of the environment the code location runs in."""
    return build_definitions(Settings.resolve())
