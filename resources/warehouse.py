"""The DuckDB warehouse as a resource."""

from __future__ import annotations

from pydantic import Field

from goldenset import settings, warehouse
from goldenset_dagster.resources.stamped import StampedResource


class WarehouseResource(StampedResource):
    """The DuckDB file every asset reads and writes (GOLDENSET_DB, else GOLDENSET_HOME/goldenset.duckdb)."""

    db_path: str = Field(
        default_factory=lambda: str(settings.default_path("db")), description="DuckDB file of the warehouse."
    )
    lock_timeout: float = Field(
        default_factory=settings.lock_timeout,
        description="Seconds to wait while another process writes the file (GOLDENSET_LOCK_TIMEOUT, default 30).",
    )

    def connect(self, read_only: bool = False):
        return warehouse.connect(self.db_path, read_only=read_only, wait=self.lock_timeout)
