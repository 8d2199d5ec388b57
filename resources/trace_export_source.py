"""The folder of span files the pipeline imports (contract section 14) as a resource."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dagster as dg
from pydantic import Field

from goldenset import settings
from goldenset.traces.mapping import Mapping, load_mapping
from goldenset.traces.spans import input_files


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

    @property
    def root(self) -> Path:
        return Path(self.path)

    def mapping(self) -> Mapping:
        path = Path(self.mapping_path)
        return load_mapping(path if path.is_file() else None)

    def signature(self) -> str | None:
        """What the sensor compares: the files' names, sizes and mtimes (and the mapping's); None without files."""
        files = input_files(self.root)
        if not files:
            return None
        h = hashlib.sha256()
        for name, f in [*files, ("(mapping)", Path(self.mapping_path))]:
            try:
                st = f.stat()
                h.update(f"{name}\x1f{st.st_size}\x1f{st.st_mtime_ns}\n".encode())
            except OSError:
                h.update(f"{name}\x1fmissing\n".encode())
        return h.hexdigest()
