"""Dagster resources: the seams between the pipeline and the outside (files, DuckDB, models)."""

from resources.corpus_source import CorpusSource
from resources.log_source import LogSource
from resources.warehouse import WarehouseResource

__all__ = ["CorpusSource", "LogSource", "WarehouseResource"]
