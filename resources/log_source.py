"""The serve-log directory as a resource."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from goldenset.logfiles import list_partitions
from goldenset.settings import DEFAULT_LOGS


class LogSource(dg.ConfigurableResource):
    """The Hive-style directory of serve logs (GOLDENSET_LOGS)."""

    path: str = DEFAULT_LOGS

    @property
    def root(self) -> Path:
        return Path(self.path)

    def partitions(self) -> list[str]:
        return list_partitions(self.root)
