"""The serve-log directory as a resource."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import Field

from goldenset import settings
from goldenset.logfiles import list_partitions


class LogSource(dg.ConfigurableResource):
    """The Hive-style directory of serve logs (GOLDENSET_LOGS, else GOLDENSET_HOME/logs)."""

    path: str = Field(
        default_factory=lambda: str(settings.default_path("logs")),
        description="LOGS directory: LOGS/dt=YYYY-MM-DD/*.jsonl[.gz].",
    )

    @property
    def root(self) -> Path:
        return Path(self.path)

    def partitions(self) -> list[str]:
        return list_partitions(self.root)
