"""The folder of span files the pipeline imports (contract section 14) as a resource."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dagster as dg
from pydantic import Field

from goldenset import settings
from goldenset.traces.mapping import Mapping, load_mapping
from goldenset.traces.spans import input_files
from goldenset.traces.spool import waiting_files


class TraceExportSource(dg.ConfigurableResource):
    """Span files dropped by a Collector or a Phoenix export (GOLDENSET_TRACE_EXPORT, else HOME/trace_export)."""

    path: str = Field(
        default_factory=lambda: str(settings.default_path("trace_export")),
        description="Folder of span files: .jsonl, .json or .parquet.",
    )
    format: str = Field(default="otlp-json", description="otlp-json or openinference.")
    mapping_path: str = Field(
        default_factory=lambda: str(settings.default_path("trace_mapping")),
        description="Mapping YAML (GOLDENSET_TRACE_MAPPING); the defaults when the file does not exist.",
    )
    spool_path: str = Field(
        default_factory=lambda: str(settings.default_path("trace_spool")),
        description="The spool of `goldenset traces serve` (GOLDENSET_TRACE_SPOOL), merged and its rejects stored.",
    )

    @property
    def root(self) -> Path:
        return Path(self.path)

    def mapping(self) -> Mapping:
        path = Path(self.mapping_path)
        return load_mapping(path if path.is_file() else None)

    @property
    def spool(self) -> Path:
        return Path(self.spool_path)

    def spool_waiting(self) -> list[tuple[str, Path]]:
        """What of the spool waits for the pipeline (`waiting_files`), named relative to it."""
        return [(p.relative_to(self.spool).as_posix(), p) for p in waiting_files(self.spool)]

    def signature(self) -> str | None:
        """What the sensor compares: names, sizes and mtimes of the span files, the mapping and what waits in
        the spool; None when there are neither span files nor anything waiting in the spool."""
        files = input_files(self.root)
        waiting = [("(spool)/" + name, p) for name, p in self.spool_waiting()]
        if not files and not waiting:
            return None
        h = hashlib.sha256()
        for name, f in [*files, *waiting, ("(mapping)", Path(self.mapping_path))]:
            try:
                st = f.stat()
                h.update(f"{name}\x1f{st.st_size}\x1f{st.st_mtime_ns}\n".encode())
            except OSError:
                h.update(f"{name}\x1fmissing\n".encode())
        return h.hexdigest()
