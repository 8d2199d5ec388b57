"""The Dagster instance the CLI runs against: the one the UI shows."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from goldenset import settings

# What `goldenset` writes as GOLDENSET_HOME/dagster/dagster.yaml on first use. It has no
# `storage:` key, so Dagster keeps runs, events and schedules under that folder itself,
# wherever the command runs from (the repository's dagster.yaml adds one line for
# `dagster dev` started in the checkout; a test holds the rest of the two files equal).
INSTANCE_YAML = """\
# Instance settings for goldenset. Runs, events and schedules live next to this file.
concurrency:
  pools:
    # Every asset that writes DuckDB runs in the "duckdb" pool: one writer at a time.
    default_limit: 1
run_retries:
  enabled: true
  max_retries: 1
  # A refusal (a blocking check, a bad corpus) fails the same way on a retry; only a
  # crashed run (the process died) is retried. Transient errors inside a step (the
  # DuckDB file held by another process) are retried by the step's own retry policy.
  retry_on_asset_or_op_failure: false
telemetry:
  enabled: false
# Dagster's step output files, with a line where a step printed nothing (else the UI says
# "No log file available" for a run whose steps were quiet).
compute_logs:
  module: goldenset_dagster.compute_logs
  class: ComputeLogManager
"""


def instance_home() -> Path:
    """DAGSTER_HOME if set, else GOLDENSET_HOME/dagster (created with INSTANCE_YAML)."""
    home = os.environ.get("DAGSTER_HOME")
    if home:
        return Path(home)
    path = settings.default_path("dagster_home").resolve()
    path.mkdir(parents=True, exist_ok=True)
    cfg = path / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text(INSTANCE_YAML, encoding="utf-8")
    return path


def get_instance() -> dg.DagsterInstance:
    """The persistent instance at instance_home()."""
    if os.environ.get("DAGSTER_HOME"):
        return dg.DagsterInstance.get()
    return dg.DagsterInstance.from_config(str(instance_home()))
