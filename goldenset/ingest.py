"""Serve-log ingestion: each file read once, re-read only when its content changed.

A file's rows are replaced as a whole (delete then insert, one transaction), so a
retry, a backfill or an appended file never duplicates anything, and rows of a
file that has since been deleted stay: the warehouse is the record.

Files are streamed into DuckDB in chunks of whole lines (`logfiles.TextStream`,
hashed while read) and checked as UTF-8, split and numbered there; no Python list
of a file's lines is built, except for the rare file that is not plain UTF-8 text
or whose gzip stream breaks, which `logfiles.read_file` reads with the exact rules.
This module decides which files to read; goldenset.ingest_batch reads and commits them.
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

from goldenset import forgotten, progress
from goldenset.clock import utcnow
from goldenset.connection import Connection
from goldenset.ingest_batch import (  # (DELETE_FILES, MARK_DIRTY, tracks_dirty: where sources and staging take them)
    DELETE_FILES,
    MARK_DIRTY,
    Batch,
    FileToRead,
    PartitionReport,
    commit,
    tracks_dirty,
)
from goldenset.logfiles import RACY_SECONDS, file_sha256, list_files, list_partitions

__all__ = [
    "BATCH_BYTES",
    "DELETE_FILES",
    "MARK_DIRTY",
    "PartitionReport",
    "changed_files",
    "days_to_read",
    "ingest_all",
    "ingest_files",
    "ingest_partition",
    "tracks_dirty",
]


def _stat(path: Path):
    try:
        return path.stat()
    except OSError:
        return None


def _unchanged_by_stat(st, known) -> bool:
    """Size and mtime as recorded, and the file was not written in the tick it was read."""
    _, size, mtime, verified_at = known
    if st is None or (st.st_size, st.st_mtime) != (size, mtime):
        return False
    return st.st_mtime < verified_at.replace(tzinfo=UTC).timestamp() - RACY_SECONDS


def _known_files(con: Connection) -> dict[str, tuple]:
    """What the warehouse recorded of every file it ingested, in one query."""
    return {
        r[0]: r[1:]
        for r in con.execute(
            "SELECT source_file, content_sha256, size_bytes, mtime, coalesce(verified_at, ingested_at) FROM log_files"
        ).fetchall()
    }


def _changed_files(
    con: Connection, root: Path, dt: str, rehash: bool, report: PartitionReport, known: dict, left_out: dict
) -> list[FileToRead]:
    """The files of partition `dt` that are new or whose content changed (not read yet).

    A forgotten file (`left_out`) is never among them: counted in `report`, and named there
    when its bytes changed since it was forgotten.
    """
    todo = []
    for f in list_files(Path(root), dt):
        report.files_seen += 1
        if f.source_file in left_out:
            if forgotten.changed_since(f.path, left_out[f.source_file]):
                report.forgotten_changed.append(f.source_file)
            else:
                report.files_forgotten += 1
            continue
        rec = known.get(f.source_file)
        if rec is None or rec[0] is None:
            # New, or unreadable when last tried: read it.
            todo.append(FileToRead(f, rec is not None, report))
            continue
        st = _stat(f.path)
        # Size and mtime unchanged: the content is taken as unchanged without reading it.
        if not rehash and _unchanged_by_stat(st, rec):
            report.files_unchanged += 1
            continue
        digest = file_sha256(f.path)
        if digest is None:
            # Readable before, unreadable now (permissions, a file being replaced): keep
            # what was committed rather than trade it for a quarantine row.
            report.files_unchanged += 1
            continue
        if digest == rec[0]:
            con.execute(
                "UPDATE log_files SET size_bytes = ?, mtime = ?, verified_at = ? WHERE source_file = ?",
                [st.st_size if st else None, st.st_mtime if st else None, utcnow(), f.source_file],
            )
            report.files_unchanged += 1
            continue
        todo.append(FileToRead(f, True, report, had_content=True))
    return todo


# Text read into DuckDB and validated before a batch of whole files is committed in one
# transaction. Larger batches amortise DuckDB's per-statement cost and its checkpoints:
# each batch leaves a partly filled row group per table and thread, which the next
# checkpoint merges by rewriting its neighbours (0.8 s a batch at 10 M items). Ingesting
# those 1.96 GB took 38.4 s in 256 MiB batches, 36.4 s in 512 MiB, 35.3 s in 1 GiB and
# 40.9 s in one 2 GiB batch (spilling), peak RSS 2.39 to 2.63 GB. This bound (with DuckDB's
# memory limit) keeps a backfill's memory flat. A larger file is a batch alone.
BATCH_BYTES = 1 << 30


def changed_files(con: Connection, root: Path, dt: str, rehash: bool, report: PartitionReport) -> list[FileToRead]:
    """The files of day `dt` that ingestion would read now (new, or changed), counting the rest in `report`."""
    return _changed_files(con, Path(root), dt, rehash, report, _known_files(con), forgotten.forgotten(con, "logs"))


def days_to_read(con: Connection, root: Path, dts: list[str]) -> list[str]:
    """The days of `dts` with a file ingestion would read: new, or not unchanged by its stat.

    The same test ingestion applies, without hashing anything: a day left out holds no
    file whose rows could change. Forgotten files do not count (a build that ingests a
    changed one again adds its day itself).
    """
    known, left_out = _known_files(con), forgotten.forgotten(con, "logs")
    out = []
    for dt in dts:
        for f in list_files(Path(root), dt):
            if f.source_file in left_out:
                continue
            rec = known.get(f.source_file)
            if rec is None or rec[0] is None or not _unchanged_by_stat(_stat(f.path), rec):
                out.append(dt)
                break
    return out


def ingest_partition(con: Connection, root: Path, dt: str, *, rehash: bool = False) -> PartitionReport:
    """Ingest every new or changed file of partition `dt`."""
    return ingest_all(con, root, [dt], rehash=rehash)[0]


def ingest_all(
    con: Connection, root: Path, partitions: list[str] | None = None, *, rehash: bool = False
) -> list[PartitionReport]:
    """Ingest the given partitions (default: every dt= folder present).

    Files are read in (dt, file name) order and committed in batches of whole files
    of up to BATCH_BYTES of text, one transaction each. A forgotten file whose bytes changed
    since refuses (InputMoved) before any file is read (contract 9.6).
    """
    root = Path(root)
    dts = list_partitions(root) if partitions is None else partitions
    known, left_out = _known_files(con), forgotten.forgotten(con, "logs")
    reports, todo = [], []
    for dt in dts:
        report = PartitionReport(dt)
        reports.append(report)
        todo.extend(_changed_files(con, root, dt, rehash, report, known, left_out))
    if changed := sorted(f for r in reports for f in r.forgotten_changed):
        raise forgotten.refusal("logs", changed)
    ingest_files(con, todo)
    return reports


def ingest_files(con: Connection, todo: list[FileToRead]) -> None:
    """Read the files `changed_files` found and replace their rows, in batches of whole files
    of up to BATCH_BYTES of text, one transaction each; their reports are updated."""
    if not todo:
        return
    with progress.step("ingesting files", total=len(todo)) as advance:
        batch = Batch(con)
        try:
            for item in todo:
                batch.add(item)
                if batch.text_bytes >= BATCH_BYTES:
                    advance(commit(batch))
                    batch = Batch(con)
            if batch.files:
                advance(commit(batch))
        finally:
            batch.discard()
