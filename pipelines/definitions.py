"""The goldenset code location: `dagster dev` (workspace.yaml) loads this module."""

from __future__ import annotations

import os

import dagster as dg

from assets.benchmark import BENCHMARK_ASSETS, BENCHMARK_JOBS
from assets.corpus import corpus_snapshot
from assets.golden_set import golden_set, golden_set_export, relabel_queue
from assets.serve_log import serve_log
from goldenset.settings import DEFAULT_CORPUS, DEFAULT_DB, DEFAULT_LOGS
from pipelines.jobs import rebuild_golden_set, refresh_golden_set
from pipelines.schedules import nightly_golden_set
from pipelines.sensors import corpus_reindex_sensor
from resources import CorpusSource, LogSource, WarehouseResource
from resources.embedder import EmbedderResource


def _path(env: str, default: str):
    # EnvVar keeps the value out of the run config the UI stores; the default applies
    # only when the variable is not set at load time.
    return dg.EnvVar(env) if os.environ.get(env) else default


def build_definitions() -> dg.Definitions:
    return dg.Definitions(
        assets=[serve_log, corpus_snapshot, golden_set, relabel_queue, golden_set_export, *BENCHMARK_ASSETS],
        jobs=[refresh_golden_set, rebuild_golden_set, *BENCHMARK_JOBS],
        schedules=[nightly_golden_set],
        sensors=[corpus_reindex_sensor],
        resources={
            "warehouse": WarehouseResource(db_path=_path("GOLDENSET_DB", DEFAULT_DB)),
            "logs": LogSource(path=_path("GOLDENSET_LOGS", DEFAULT_LOGS)),
            "corpus_source": CorpusSource(path=_path("GOLDENSET_CORPUS", DEFAULT_CORPUS)),
            "embedder": EmbedderResource(model_path=os.environ.get("GOLDENSET_DENSE_MODEL", "")),
        },
    )


defs = build_definitions()
