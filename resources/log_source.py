"""The serve-log directory as a resource."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from goldenset import settings
from goldenset.logfiles import list_partitions
from goldenset_dagster.resources.stamped import StampedResource


class LogSource(StampedResource):
    """The Hive-style directory of serve logs (GOLDENSET_LOGS, else GOLDENSET_HOME/logs).

    With `workers` above 0, log days are staged as Parquet under `staging_path` (in
    parallel processes by the `stage_serve_log` job) and `serve_log` loads them.
    """

    path: str = Field(
        default_factory=lambda: str(settings.default_path("logs")),
        description="LOGS directory: LOGS/dt=YYYY-MM-DD/*.jsonl[.gz].",
    )
    staging_path: str = Field(
        default_factory=lambda: str(settings.default_path("staging")),
        description="Where staged log days are written as Parquet (GOLDENSET_STAGING).",
    )
    workers: int = Field(
        default_factory=settings.ingest_workers,
        description="Processes staging log days at once; 0 ingests straight into the warehouse "
        "(GOLDENSET_INGEST_WORKERS).",
    )

    @property
    def root(self) -> Path:
        return Path(self.path)

    @property
    def staging(self) -> Path | None:
        """The staging folder, when log days are staged (workers > 0)."""
        return Path(self.staging_path) if self.workers > 0 else None

    def duckdb_threads(self) -> int:
        """DuckDB threads per staging process: the machine's cores shared among the workers."""
        return max(1, (os.cpu_count() or 1) // max(1, self.workers))

    def partitions(self) -> list[str]:
        return list_partitions(self.root)
