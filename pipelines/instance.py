"""The Dagster instance the CLI runs against: the one the UI shows."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

DEFAULT_HOME = "var/dagster"

# Kept identical to the repository's dagster.yaml (a test checks), so a pip-installed
# goldenset can create an instance without the repository at hand.
INSTANCE_YAML = """\
# Instance settings for goldenset. `goldenset` copies this file into var/dagster/ on
# first use; point DAGSTER_HOME there (`export DAGSTER_HOME=$PWD/var/dagster`) so the
# UI and the CLI share one instance whose storage lives under var/ and survives restarts.
storage:
  sqlite:
    # Relative to the working directory, like the CLI's var/: runs, events and schedules
    # survive restarts whatever DAGSTER_HOME points at.
    base_dir: var/dagster/storage
concurrency:
  pools:
    # Every asset that writes DuckDB runs in the "duckdb" pool: one writer at a time.
    default_limit: 1
run_retries:
  enabled: true
  max_retries: 1
telemetry:
  enabled: false
"""


def instance_home() -> Path:
    """DAGSTER_HOME if set, else var/dagster (created with the project's dagster.yaml)."""
    home = os.environ.get("DAGSTER_HOME")
    if home:
        return Path(home)
    path = Path(DEFAULT_HOME).resolve()
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
