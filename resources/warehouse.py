"""The DuckDB warehouse as a resource."""

from __future__ import annotations

import dagster as dg

from goldenset import warehouse
from goldenset.settings import DEFAULT_DB


class WarehouseResource(dg.ConfigurableResource):
    """The DuckDB file every asset reads and writes (GOLDENSET_DB)."""

    db_path: str = DEFAULT_DB

    def connect(self, read_only: bool = False):
        return warehouse.connect(self.db_path, read_only=read_only)
