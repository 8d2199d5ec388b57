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

from goldenset.logfiles import LogFile, list_files, list_partitions, read_file
from goldenset.records import Rejected, Serve, parse_line
from goldenset.warehouse import transaction

# Constant statements, one per table: table names are never spliced into SQL at run time.
_REPLACE = {
    "log_serves": ("DELETE FROM log_serves WHERE source_file = ?",
                   "INSERT INTO log_serves BY NAME SELECT * FROM _incoming"),
    "log_serve_items": ("DELETE FROM log_serve_items WHERE source_file = ?",
                        "INSERT INTO log_serve_items BY NAME SELECT * FROM _incoming"),
    "log_verdicts": ("DELETE FROM log_verdicts WHERE source_file = ?",
                     "INSERT INTO log_verdicts BY NAME SELECT * FROM _incoming"),
    "log_rejects": ("DELETE FROM log_rejects WHERE source_file = ?",
                    "INSERT INTO log_rejects BY NAME SELECT * FROM _incoming"),
}


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
        "SELECT content_sha256, size_bytes, mtime FROM log_files WHERE source_file = ?", [source_file]
    ).fetchall()
    return rows[0] if rows else None


def ingest_partition(con, root: Path, dt: str, *, rehash: bool = False) -> PartitionReport:
    """Ingest every new or changed file of partition `dt` under the log root."""
    report = PartitionReport(dt)
    for f in list_files(Path(root), dt):
        report.files_seen += 1
        known = _known(con, f.source_file)
        if known is not None and known[0] is not None and not rehash:
            try:
                st = f.path.stat()
            except OSError:
                st = None
            # Size and mtime unchanged: the content is taken as unchanged without reading it.
            if st is not None and (st.st_size, st.st_mtime) == (known[1], known[2]):
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
                "UPDATE log_files SET size_bytes = ?, mtime = ? WHERE source_file = ?",
                [content.size_bytes, content.mtime, f.source_file],
            )
            report.files_unchanged += 1
            continue
        _ingest_file(con, f, content, report)
        report.files_ingested += 1
    return report


def ingest_all(con, root: Path, partitions: list[str] | None = None, *, rehash: bool = False) -> list[PartitionReport]:
    """Ingest the given partitions (default: every dt= folder present)."""
    root = Path(root)
    dts = list_partitions(root) if partitions is None else partitions
    return [ingest_partition(con, root, dt, rehash=rehash) for dt in dts]


def _ingest_file(con, f: LogFile, content, report: PartitionReport) -> None:
    now = utcnow()
    serves: dict[str, list] = {k: [] for k in (
        "source_file", "dt", "file_name", "line", "serve_id", "ts", "project", "task", "task_norm",
        "query_id", "session_id", "content_key", "raw")}
    items: dict[str, list] = {k: [] for k in (
        "source_file", "line", "serve_id", "doc_id", "doc_version", "channel", "rank", "score")}
    verdicts: dict[str, list] = {k: [] for k in (
        "source_file", "dt", "file_name", "line", "serve_id", "doc_id", "verdict", "ts")}
    rejects: dict[str, list] = {k: [] for k in (
        "source_file", "dt", "file_name", "line", "reason", "detail", "raw", "rejected_at")}
    src, dt, name = f.source_file, f.dt, f.file_name

    def reject(line, reason, detail, raw):
        for k, v in zip(rejects, (src, dt, name, line, reason, detail, raw, now)):
            rejects[k].append(v)
        report.reasons[reason] = report.reasons.get(reason, 0) + 1

    for n, raw in content.lines:
        try:
            rec = parse_line(raw)
        except Rejected as exc:
            reject(n, exc.reason, exc.detail, raw.decode("utf-8", errors="replace"))
            continue
        if isinstance(rec, Serve):
            for k, v in zip(serves, (src, dt, name, n, rec.serve_id, rec.ts, rec.project, rec.task,
                                     rec.task_norm, rec.query_id, rec.session_id, rec.content_key,
                                     raw.decode("utf-8"))):
                serves[k].append(v)
            for it in rec.items:
                for k, v in zip(items, (src, n, rec.serve_id, it.doc_id, it.doc_version, it.channel,
                                        it.rank, it.score)):
                    items[k].append(v)
        else:
            for k, v in zip(verdicts, (src, dt, name, n, rec.serve_id, rec.doc_id, rec.verdict, rec.ts)):
                verdicts[k].append(v)
    if content.fault is not None:
        reject(content.fault_line, "unreadable_file", content.fault, None)

    tables = {
        "log_serves": _arrow(serves, {"line": pa.int32(), "ts": pa.timestamp("us")}),
        "log_serve_items": _arrow(items, {"line": pa.int32(), "rank": pa.int64(), "score": pa.float64()}),
        "log_verdicts": _arrow(verdicts, {"line": pa.int32(), "ts": pa.timestamp("us")}),
        "log_rejects": _arrow(rejects, {"line": pa.int32(), "rejected_at": pa.timestamp("us")}),
    }
    n_rejected = len(rejects["reason"])
    with transaction(con):
        for t, arrow in tables.items():
            delete, insert = _REPLACE[t]
            con.execute(delete, [src])
            if arrow.num_rows:
                con.register("_incoming", arrow)
                con.execute(insert)
                con.unregister("_incoming")
        con.execute("DELETE FROM log_files WHERE source_file = ?", [src])
        con.execute(
            "INSERT INTO log_files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [src, dt, name, content.content_sha256, content.size_bytes, content.mtime,
             content.lines_total, content.lines_read, n_rejected, now],
        )
    report.lines_read += content.lines_read
    report.serves += len(serves["serve_id"])
    report.verdicts += len(verdicts["serve_id"])
    report.rejected += n_rejected


def _arrow(columns: dict[str, list], types: dict[str, pa.DataType]) -> pa.Table:
    return pa.table({k: pa.array(v, type=types.get(k, pa.string())) for k, v in columns.items()})
