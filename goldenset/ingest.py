"""Serve-log ingestion: each file read once, re-read only when its content changed.

A file's rows are replaced as a whole (delete then insert, one transaction), so a
retry, a backfill or an appended file never duplicates anything, and rows of a
file that has since been deleted stay: the warehouse is the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from goldenset import failpoints
from goldenset.bulk import parse_lines
from goldenset.logfiles import list_files, list_partitions, read_file
from goldenset.warehouse import transaction

# Constant statements, one per table: table names are never spliced into SQL at run time.
_REPLACE = {
    "log_serves": ("DELETE FROM log_serves WHERE list_contains(?, source_file)",
                   "INSERT INTO log_serves BY NAME SELECT * EXCLUDE (key) FROM _incoming"),
    "log_serve_items": ("DELETE FROM log_serve_items WHERE list_contains(?, source_file)",
                        "INSERT INTO log_serve_items BY NAME SELECT * EXCLUDE (key) FROM _incoming"),
    "log_verdicts": ("DELETE FROM log_verdicts WHERE list_contains(?, source_file)",
                     "INSERT INTO log_verdicts BY NAME SELECT * EXCLUDE (key) FROM _incoming"),
    "log_rejects": ("DELETE FROM log_rejects WHERE list_contains(?, source_file)",
                    "INSERT INTO log_rejects BY NAME SELECT * EXCLUDE (key) FROM _incoming"),
}
_MARK_DIRTY = (
    "INSERT INTO log_dirty SELECT serve_id, query_id FROM log_serves WHERE list_contains(?, source_file)",
    "INSERT INTO log_dirty SELECT serve_id, NULL FROM log_verdicts WHERE list_contains(?, source_file)",
)
_LINE_BITS = 32  # a line key is (file number << 32) | line number


@dataclass
class PartitionReport:
    """What one partition's ingestion did."""

    dt: str
    files_seen: int = 0
    files_ingested: int = 0
    files_unchanged: int = 0
    lines_read: int = 0
    serves: int = 0
    verdicts: int = 0
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _known(con, source_file: str):
    rows = con.execute(
        "SELECT content_sha256, size_bytes, mtime, coalesce(verified_at, ingested_at) FROM log_files "
        "WHERE source_file = ?", [source_file]
    ).fetchall()
    return rows[0] if rows else None


# mtime has a coarse tick on some file systems (up to 2 s): a file written in the same
# tick as it was last read may have changed without its size or mtime showing it.
RACY_SECONDS = 2.0


def _unchanged_by_stat(st, known) -> bool:
    """Size and mtime as recorded, and the file was not written in the tick it was read."""
    _, size, mtime, verified_at = known
    if st is None or (st.st_size, st.st_mtime) != (size, mtime):
        return False
    return st.st_mtime < verified_at.replace(tzinfo=timezone.utc).timestamp() - RACY_SECONDS


def _changed_files(con, root: Path, dt: str, rehash: bool, report: PartitionReport) -> list:
    """The files of partition `dt` that are new or whose content changed, read."""
    todo = []
    for f in list_files(Path(root), dt):
        report.files_seen += 1
        known = _known(con, f.source_file)
        if known is not None and known[0] is not None and not rehash:
            try:
                st = f.path.stat()
            except OSError:
                st = None
            # Size and mtime unchanged: the content is taken as unchanged without reading it.
            if _unchanged_by_stat(st, known):
                report.files_unchanged += 1
                continue
        content = read_file(f)
        if content.content_sha256 is None and known is not None and known[0] is not None:
            # Readable before, unreadable now (permissions, a file being replaced): keep
            # what was committed rather than trade it for a quarantine row.
            report.files_unchanged += 1
            continue
        if known is not None and content.content_sha256 is not None and content.content_sha256 == known[0]:
            con.execute(
                "UPDATE log_files SET size_bytes = ?, mtime = ?, verified_at = ? WHERE source_file = ?",
                [content.size_bytes, content.mtime, utcnow(), f.source_file],
            )
            report.files_unchanged += 1
            continue
        todo.append((f, content, known is not None, report))
    return todo


# Lines validated in one DuckDB pass and committed in one transaction. Larger batches
# amortise DuckDB's per-statement cost; this bound keeps a backfill's memory flat.
BATCH_LINES = 400_000


def ingest_partition(con, root: Path, dt: str, *, rehash: bool = False) -> PartitionReport:
    """Ingest every new or changed file of partition `dt`: one parse, one transaction."""
    report = PartitionReport(dt)
    todo = _changed_files(con, root, dt, rehash, report)
    if todo:
        _ingest_files(con, todo)
    return report


def ingest_all(con, root: Path, partitions: list[str] | None = None, *, rehash: bool = False) -> list[PartitionReport]:
    """Ingest the given partitions (default: every dt= folder present).

    Partitions are batched up to BATCH_LINES lines; a batch (whole partitions, whole
    files) is replaced in one transaction.
    """
    root = Path(root)
    dts = list_partitions(root) if partitions is None else partitions
    reports, batch, lines = [], [], 0
    for dt in dts:
        report = PartitionReport(dt)
        reports.append(report)
        todo = _changed_files(con, root, dt, rehash, report)
        batch.extend(todo)
        lines += sum(c.lines_read for _, c, _, _ in todo)
        if lines >= BATCH_LINES:
            _ingest_files(con, batch)
            batch, lines = [], 0
    if batch:
        _ingest_files(con, batch)
    return reports


def _ingest_files(con, todo: list) -> None:
    """Replace the rows of the given files with what they hold now, in one transaction."""
    now = utcnow()
    entries = []
    for no, (_, content, _, _) in enumerate(todo):
        base = no << _LINE_BITS
        entries.extend((base | n, line) for n, line in content.lines)
    parsed = parse_lines(con, entries)
    rejects = list(parsed.rejects)
    for no, (_, content, _, _) in enumerate(todo):
        if content.fault is not None:
            key = (no << _LINE_BITS) | (content.fault_line or 0)
            rejects.append((key, "unreadable_file", content.fault, None))
    files = {
        "source_file": pa.array([f.source_file for f, _, _, _ in todo], pa.string()),
        "dt": pa.array([f.dt for f, _, _, _ in todo], pa.string()),
        "file_name": pa.array([f.file_name for f, _, _, _ in todo], pa.string()),
    }
    reject_table = pa.table({
        "key": pa.array([r[0] for r in rejects], pa.int64()),
        "reason": pa.array([r[1] for r in rejects], pa.string()),
        "detail": pa.array([r[2] for r in rejects], pa.string()),
        "raw": pa.array([r[3] for r in rejects], pa.string()),
        "rejected_at": pa.array([now] * len(rejects), pa.timestamp("us")),
    })
    tables = {
        "log_serves": _locate(parsed.serves, files, ("source_file", "dt", "file_name")),
        "log_serve_items": _locate(parsed.items, files, ("source_file",)),
        "log_verdicts": _locate(parsed.verdicts, files, ("source_file", "dt", "file_name")),
        "log_rejects": _locate(reject_table, files, ("source_file", "dt", "file_name")),
    }
    # An unreadable file that read no line at all has no line number.
    rej = tables["log_rejects"]
    lines = pc.if_else(pc.and_(pc.equal(rej.column("line"), 0), pc.equal(rej.column("reason"), "unreadable_file")),
                       pa.scalar(None, pa.int32()), rej.column("line"))
    tables["log_rejects"] = rej.set_column(rej.column_names.index("line"), "line", lines)
    per_file_rejects = [0] * len(todo)
    for r in rejects:
        per_file_rejects[r[0] >> _LINE_BITS] += 1
    replaced = [f.source_file for f, _, was_known, _ in todo if was_known]
    every = [f.source_file for f, _, _, _ in todo]
    with transaction(con):
        # The serves these files touched, before and after, tell an incremental build
        # which queries to recompute.
        for mark in _MARK_DIRTY:
            con.execute(mark, [replaced])
        for t, arrow in tables.items():
            delete, insert = _REPLACE[t]
            if replaced:
                con.execute(delete, [replaced])
            if arrow.num_rows:
                con.register("_incoming", arrow)
                con.execute(insert)
                con.unregister("_incoming")
        if replaced:
            con.execute("DELETE FROM log_files WHERE list_contains(?, source_file)", [replaced])
        failpoints.hit("ingest.mid_transaction")
        for mark in _MARK_DIRTY:
            con.execute(mark, [every])
        con.executemany(
            "INSERT INTO log_files BY NAME SELECT ? AS source_file, ? AS dt, ? AS file_name, "
            "? AS content_sha256, ? AS size_bytes, ? AS mtime, ? AS lines_total, ? AS lines_read, "
            "? AS lines_rejected, ? AS ingested_at, ? AS verified_at",
            [[f.source_file, f.dt, f.file_name, c.content_sha256, c.size_bytes, c.mtime,
              c.lines_total, c.lines_read, per_file_rejects[no], now, now]
             for no, (f, c, _, _) in enumerate(todo)],
        )
    failpoints.hit("ingest.after_batch")
    serves = _per_file(parsed.serves, len(todo))
    verdicts = _per_file(parsed.verdicts, len(todo))
    for no, (_, c, _, report) in enumerate(todo):
        report.files_ingested += 1
        report.lines_read += c.lines_read
        report.serves += serves[no]
        report.verdicts += verdicts[no]
        report.rejected += per_file_rejects[no]
    for key, reason, _, _ in rejects:
        reasons = todo[key >> _LINE_BITS][3].reasons
        reasons[reason] = reasons.get(reason, 0) + 1


def _per_file(table: pa.Table, n_files: int) -> list[int]:
    counts = [0] * n_files
    for no in pc.shift_right(table.column("key"), _LINE_BITS).to_pylist():
        counts[no] += 1
    return counts


def _locate(table: pa.Table, files: dict[str, pa.Array], columns: tuple[str, ...]) -> pa.Table:
    """Turn each row's line key back into its file's columns and its line number."""
    keys = table.column("key")
    file_no = pc.shift_right(keys, _LINE_BITS)
    table = table.append_column("line", pc.cast(pc.bit_wise_and(keys, (1 << _LINE_BITS) - 1), pa.int32()))
    for c in columns:
        table = table.append_column(c, pc.take(files[c], file_no))
    return table
