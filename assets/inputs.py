"""The raw inputs as external assets: what the pipeline reads but does not make, and what each read saw.

They carry no code: declaring them (`AssetSpec`, not the deprecated `SourceAsset`) puts
the log folder, the corpus file, the label folder and the rubric in the lineage graph,
upstream of the assets that read them, so a person sees what the corpus sensor watches
and what the labelling page writes into. The trace import writes into the log folder, so
`trace_export` feeds `serve_log_files` (not `serve_log` directly: a refresh never imports,
and its "Materialize all" has no unmaterialized upstream to warn about).

Observations: every step that reads an input, and every command that writes one, records
an `AssetObservation` of it: a folder's days, files, bytes, oldest and newest day and its
signature (names, sizes, mtimes); the corpus's fingerprint, size and active documents; the
rubric's files, bytes and sha256. They carry no data version: Dagster's Unsynced reads data
versions of observable source assets only (assets with an observe function), while a step
records its inputs' latest version in its materialization whatever they are, so a data
version here left every reader Unsynced from its second build on (measured: corpus_snapshot
"has a new dependency data version" right after a build).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import dagster as dg

from goldenset.layout import summarize

serve_log_files = dg.AssetSpec(
    "serve_log_files",
    deps=["trace_export"],
    group_name="inputs",
    kinds={"file"},
    description="The RAG service's log folder (GOLDENSET_LOGS): dt=YYYY-MM-DD folders of JSON-lines "
    "serve and verdict files, written by the service (and by the trace import), read by serve_log.",
)
corpus_file = dg.AssetSpec(
    "corpus_file",
    group_name="inputs",
    kinds={"file"},
    description="The corpus file (GOLDENSET_CORPUS): one document a line, what the index holds; "
    "watched by corpus_reindex_sensor, read by corpus_snapshot.",
)
label_files = dg.AssetSpec(
    "label_files",
    group_name="inputs",
    kinds={"file"},
    description="The LABELS folder (GOLDENSET_LABELS): dt=YYYY-MM-DD folders of label lines, written by "
    "the labelling page, `goldenset labels import` and `goldenset judge label`, read by human_labels.",
)
rubric_file = dg.AssetSpec(
    "rubric_file",
    group_name="inputs",
    kinds={"file", "yaml"},
    description="The rubric (GOLDENSET_RUBRIC): the pass/fail tests and the rule that turns them into a "
    "label; every label line is checked against it.",
)

INPUTS = [serve_log_files, corpus_file, label_files, rubric_file]


def folder_observation(spec: dg.AssetSpec, root: str | Path) -> dg.AssetObservation:
    """What a LOGS or LABELS folder holds now: days, files, bytes, oldest and newest day, its signature."""
    s = summarize(Path(root))
    return dg.AssetObservation(
        spec.key,
        metadata={
            "path": dg.MetadataValue.path(str(root)),
            "days": s.days,
            "files": s.files,
            "size_bytes": s.size_bytes,
            "oldest_day": dg.MetadataValue.text(s.oldest_day or "none"),
            "newest_day": dg.MetadataValue.text(s.newest_day or "none"),
            "signature": dg.MetadataValue.text(s.signature[:16]),
        },
    )


def corpus_observation(path: str | Path, fingerprint: str, active_docs: int) -> dg.AssetObservation:
    """The corpus file as a read found it: its fingerprint, size and active documents."""
    size = Path(path).stat().st_size if Path(path).is_file() else 0
    return dg.AssetObservation(
        corpus_file.key,
        metadata={
            "path": dg.MetadataValue.path(str(path)),
            "fingerprint": dg.MetadataValue.text(fingerprint[:16]),
            "size_bytes": size,
            "active_docs": active_docs,
        },
    )


def rubric_observation(path: str | Path) -> dg.AssetObservation:
    """The rubric file (or folder of them) as it is: its files, bytes and the sha256 of their bytes."""
    root = Path(path)
    files = sorted(p for p in root.glob("*.y*ml") if p.is_file()) if root.is_dir() else [root] if root.exists() else []
    digest = hashlib.sha256()
    size = 0
    for f in files:
        data = f.read_bytes()
        size += len(data)
        digest.update(f.name.encode() + b"\x1f" + hashlib.sha256(data).digest())
    return dg.AssetObservation(
        rubric_file.key,
        metadata={
            "path": dg.MetadataValue.path(str(root)),
            "files": len(files),
            "size_bytes": size,
            "sha256": dg.MetadataValue.text(digest.hexdigest()[:16]),
        },
    )
