"""What the pipeline's `trace_export` asset imports: the span-file folder, then the receiver's spool (14.6, 14.8)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from goldenset.connection import Connection
from goldenset.traces.importer import SnapshotVersions, TraceImport, import_traces
from goldenset.traces.mapping import Mapping
from goldenset.traces.spans import input_files
from goldenset.traces.spool import MERGE_BATCH_BYTES, SpoolImport, import_spool


@dataclass(frozen=True)
class PipelineImport:
    """The folder's import (None when it holds no span files) and what was done with the spool."""

    folder: TraceImport | None
    spool: SpoolImport


def import_folder_and_spool(
    con: Connection,
    folder: Path,
    fmt: str,
    spool: Path,
    mapping: Mapping,
    logs: Path,
    labels: Path | None,
    wait: float,
) -> PipelineImport:
    """Import every span file of `folder` (14.1), then merge the spool and store its rejects with `con`.

    The folder first: the spool's requests arrived after whatever a Collector wrote to a
    file was exported, as a rule, and the later copy of a span wins.
    """
    folder_result = None
    if input_files(Path(folder)):
        folder_result = import_traces(con, folder, fmt, mapping, logs, labels)
    spooled = import_spool(con, Path(spool), mapping, logs, labels, SnapshotVersions(con), MERGE_BATCH_BYTES, wait)
    return PipelineImport(folder_result, spooled)
