"""Dagster resources: the seams between the pipeline and the outside (files, DuckDB, models)."""

from goldenset_dagster.resources.corpus_source import CorpusSource
from goldenset_dagster.resources.label_source import LabelSource
from goldenset_dagster.resources.log_source import LogSource
from goldenset_dagster.resources.trace_export_source import TraceExportSource
from goldenset_dagster.resources.warehouse import WarehouseResource

__all__ = ["CorpusSource", "LabelSource", "LogSource", "TraceExportSource", "WarehouseResource"]
