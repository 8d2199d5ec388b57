"""A batch of log files: read into DuckDB, validated and committed as one transaction (`commit`).

`ingest.ingest_files` fills a `Batch` with whole files (`Batch.add`, streaming each file's
text into the temp table `_lines`) up to a size, then `commit` runs the named steps in turn:
the rejected lines staging found and the files that could not be read to their end
(`_rejects`), those and the files as temp tables the inserts join on (`_stage_batch`), each
file's counts (`_file_counts`), the rows replaced in one transaction (`_replace_rows`), the
partitions' reports (`_report`). Split out of goldenset.ingest, where `_Batch` was one class
of some 250 lines doing all of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import duckdb
import pyarrow as pa

from goldenset import failpoints
from goldenset.bulk import drop_staging, stage
from goldenset.clock import utcnow
from goldenset.connection import Connection
from goldenset.logfiles import LogFile, NotPlainText, PartitionCounts, TextStream, read_file
from goldenset.warehouse import transaction

_LINE_BITS = 32  # a line key is (file number << 32) | line number
_LINE_MASK = (1 << _LINE_BITS) - 1

# Constant statements, one per table: table names are never spliced into SQL at run time.
DELETE_FILES = (  # one per log table, in the order of staging.STAGED_TABLES
    "DELETE FROM log_serves WHERE list_contains(?, source_file)",
    "DELETE FROM log_serve_items WHERE list_contains(?, source_file)",
    "DELETE FROM log_verdicts WHERE list_contains(?, source_file)",
    "DELETE FROM log_rejects WHERE list_contains(?, source_file)",
    "DELETE FROM log_files WHERE list_contains(?, source_file)",
)
# The serves that replaced files held before: an incremental build recomputes their queries.
# Parameters: whether the lines are being removed (before a replaced file's rows are
# deleted) or were just added, and the files.
MARK_DIRTY = (
    "INSERT INTO log_dirty SELECT serve_id, query_id, source_file, ? FROM log_serves WHERE list_contains(?, source_file)",
    "INSERT INTO log_dirty SELECT serve_id, NULL, source_file, ? FROM log_verdicts WHERE list_contains(?, source_file)",
)
_INSERT = (
    f"""INSERT INTO log_serves BY NAME
    SELECT f.source_file, f.dt, f.file_name, (s.key & {_LINE_MASK})::INTEGER AS line, s.serve_id, s.ts, s.project,
           s.task, s.task_norm, s.query_id, s.session_id, s.content_key, s.raw
    FROM _s s JOIN _batch_files f ON f.file_no = s.key >> {_LINE_BITS}""",
    f"""INSERT INTO log_serve_items BY NAME
    SELECT f.source_file, (i.key & {_LINE_MASK})::INTEGER AS line, i.serve_id, i.doc_id, i.doc_version, i.channel,
           i.rank, i.score
    FROM _i i JOIN _batch_files f ON f.file_no = i.key >> {_LINE_BITS}""",
    f"""INSERT INTO log_verdicts BY NAME
    SELECT f.source_file, f.dt, f.file_name, (v.key & {_LINE_MASK})::INTEGER AS line, v.serve_id, v.doc_id,
           v.verdict, v.ts
    FROM _v v JOIN _batch_files f ON f.file_no = v.key >> {_LINE_BITS}""",
    # An unreadable file that read no line at all has no line number.
    f"""INSERT INTO log_rejects BY NAME
    SELECT f.source_file, f.dt, f.file_name,
           CASE WHEN r.reason = 'unreadable_file' AND r.key & {_LINE_MASK} = 0 THEN NULL
                ELSE (r.key & {_LINE_MASK})::INTEGER END AS line,
           r.reason, r.detail, r.raw, r.rejected_at
    FROM _batch_rejects r JOIN _batch_files f ON f.file_no = r.key >> {_LINE_BITS}""",
    f"""INSERT INTO log_dirty SELECT s.serve_id, s.query_id, f.source_file, false
    FROM _s s JOIN _batch_files f ON f.file_no = s.key >> {_LINE_BITS}""",
    f"""INSERT INTO log_dirty SELECT v.serve_id, NULL, f.source_file, false
    FROM _v v JOIN _batch_files f ON f.file_no = v.key >> {_LINE_BITS}""",
)
# A chunk of whole lines, split and numbered in DuckDB; a trailing \r is not part of a
# line, and empty lines are blank (other blank lines are found with the fallback).
_ADD_CHUNK = """
INSERT INTO _lines
SELECT ? + n AS key, raw FROM (
  SELECT n, CASE WHEN suffix(piece, chr(13)) THEN left(piece, -1) ELSE piece END AS raw FROM (
    SELECT generate_subscripts(pieces, 1) AS n, unnest(pieces) AS piece
    FROM (SELECT string_split(decode(text), chr(10)) AS pieces FROM _chunk)))
WHERE raw <> ''
"""
_BATCH_TABLES = ("_lines", "_batch_files", "_batch_rejects")


def tracks_dirty(con: Connection) -> bool:
    """Whether ingestion records which serves its lines touched (log_dirty).

    Only once a build is committed: before, the next build computes every query and
    never reads log_dirty (at ten million items that saves writing, then deleting,
    8.5 million rows).
    """
    has_builds = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND table_name = 'golden_builds'"
    ).fetchall()[0][0]
    # (A staging worker's scratch warehouse has no builds table.)
    return bool(has_builds) and bool(con.execute("SELECT EXISTS (SELECT 1 FROM golden_builds)").fetchall()[0][0])


@dataclass
class PartitionReport(PartitionCounts):
    """What one partition's ingestion did."""

    serves: int = 0
    verdicts: int = 0
    forgotten_changed: list[str] = field(default_factory=list)  # forgotten files whose bytes changed since


@dataclass
class FileToRead:
    """A log file ingestion will read: new, or changed since it was ingested."""

    file: LogFile
    was_known: bool
    report: PartitionReport
    had_content: bool = False  # the warehouse holds rows of a readable version of it


@dataclass
class _FileState:
    todo: FileToRead
    content_sha256: str | None
    size_bytes: int | None
    mtime: float | None
    lines_total: int
    lines_read: int | None = None  # known up front only for files read by read_file
    fault: str | None = None
    fault_line: int | None = None


# A rejected line as the batch stages it: (line key, reason, detail, raw line or None).
_RejectRow = tuple[int, str, str, str | None]


@dataclass(frozen=True)
class FileCounts:
    """What one committed file held: lines read, serves, verdicts and rejected lines (log_files' counts)."""

    lines_read: int
    serves: int
    verdicts: int
    rejected: int


class Batch:
    """Files read into the temp table `_lines`, to be validated and committed together (`commit`)."""

    def __init__(self, con: Connection):
        self.con = con
        self.files: list[_FileState] = []
        self.extra: list[tuple[int, bytes]] = []  # lines that are not UTF-8: Python rules only
        self.text_bytes = 0
        con.execute("CREATE OR REPLACE TEMP TABLE _lines (key BIGINT, raw VARCHAR)")
        self.track_dirty = tracks_dirty(con)

    def add(self, todo: FileToRead) -> None:
        """Read one file into `_lines`: streamed, or line by line when it is not plain UTF-8 text."""
        if not self._add_streamed(todo):
            self._add_line_by_line(todo)

    def _add_streamed(self, todo: FileToRead) -> bool:
        """The fast path: the file's text in chunks of whole lines, split in DuckDB; False when it is
        not plain UTF-8 text (or its gzip stream breaks), its lines read so far taken out again."""
        no = len(self.files)
        stream = TextStream(todo.file)
        try:
            for first_line, text in stream.chunks():
                self._add_chunk((no << _LINE_BITS) + first_line - 1, text)
        except NotPlainText:
            self.con.execute("DELETE FROM _lines WHERE key >> 32 = ?", [no])
            return False
        self.files.append(_FileState(todo, stream.content_sha256, stream.size_bytes, stream.mtime, stream.lines_total))
        self.text_bytes += stream.text_bytes
        return True

    def _add_line_by_line(self, todo: FileToRead) -> None:
        """Not plain UTF-8 text, or a fault: the exact line-by-line rules decide what was read."""
        base = len(self.files) << _LINE_BITS
        content = read_file(todo.file)
        if content.content_sha256 is None and todo.had_content:
            # Readable a moment ago, unreadable now: keep what was committed.
            todo.report.files_unchanged += 1
            return
        text_lines = [(base | n, s) for n, s in content.lines if isinstance(s, str)]
        self.extra += [(base | n, s) for n, s in content.lines if not isinstance(s, str)]
        if text_lines:
            self.con.register(
                "_chunk_lines",
                pa.table(
                    {
                        "key": pa.array([k for k, _ in text_lines], pa.int64()),
                        "raw": pa.array([s for _, s in text_lines], pa.string()),
                    }
                ),
            )
            try:
                self.con.execute("INSERT INTO _lines SELECT key, raw FROM _chunk_lines")
            finally:
                self.con.unregister("_chunk_lines")
        self.files.append(
            _FileState(
                todo,
                content.content_sha256,
                content.size_bytes,
                content.mtime,
                content.lines_total,
                content.lines_read,
                content.fault,
                content.fault_line,
            )
        )
        self.text_bytes += sum(len(s) for _, s in content.lines)

    def _add_chunk(self, base: int, text: memoryview) -> None:
        # The bytes go to DuckDB without a copy; `decode` there checks they are UTF-8.
        buf = pa.py_buffer(text)
        offsets = pa.array([0, len(buf)], pa.int64()).buffers()[1]
        chunk = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 1, [None, offsets, buf])
        self.con.register("_chunk", pa.table({"text": chunk}))
        try:
            self.con.execute(_ADD_CHUNK, [base])
        except duckdb.ConversionException as exc:
            raise NotPlainText(str(exc).splitlines()[0]) from None
        finally:
            self.con.unregister("_chunk")

    def discard(self) -> None:
        drop_staging(self.con)
        for t in _BATCH_TABLES:
            self.con.execute("DROP TABLE IF EXISTS " + t)
        self.files = []


def commit(batch: Batch) -> int:
    """Validate, replace the files' rows in one transaction, update the reports; return the file count."""
    now = utcnow()
    staged = stage(batch.con, batch.extra)
    rejects = _rejects(batch, staged.rejects)
    _stage_batch(batch, rejects, now)
    counts = _file_counts(batch, staged.blank, rejects)
    _replace_rows(batch, counts, now)
    failpoints.hit("ingest.after_batch")
    _report(batch, counts, rejects)
    batch.discard()  # forgets the files
    return len(counts)


def _rejects(batch: Batch, staged: Sequence[_RejectRow]) -> list[_RejectRow]:
    """The rejected lines staging found, and a row for each file that could not be read to its end."""
    rejects = list(staged)
    for no, fs in enumerate(batch.files):
        if fs.fault is not None:
            rejects.append(((no << _LINE_BITS) | (fs.fault_line or 0), "unreadable_file", fs.fault, None))
    return rejects


def _stage_batch(batch: Batch, rejects: list[_RejectRow], now: datetime) -> None:
    """The batch's rejects and files as the temp tables `_INSERT` joins on file number."""
    con, files = batch.con, batch.files
    con.register(
        "_rejects_arrow",
        pa.table(
            {
                "key": pa.array([r[0] for r in rejects], pa.int64()),
                "reason": pa.array([r[1] for r in rejects], pa.string()),
                "detail": pa.array([r[2] for r in rejects], pa.string()),
                "raw": pa.array([r[3] for r in rejects], pa.string()),
                "rejected_at": pa.array([now] * len(rejects), pa.timestamp("us")),
            }
        ),
    )
    con.register(
        "_files_arrow",
        pa.table(
            {
                "file_no": pa.array(range(len(files)), pa.int64()),
                "source_file": pa.array([fs.todo.file.source_file for fs in files], pa.string()),
                "dt": pa.array([fs.todo.file.dt for fs in files], pa.string()),
                "file_name": pa.array([fs.todo.file.file_name for fs in files], pa.string()),
            }
        ),
    )
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _batch_rejects AS SELECT * FROM _rejects_arrow")
        con.execute("CREATE OR REPLACE TEMP TABLE _batch_files AS SELECT * FROM _files_arrow")
    finally:
        con.unregister("_rejects_arrow")
        con.unregister("_files_arrow")


def _file_counts(batch: Batch, blank: list[int], rejects: list[_RejectRow]) -> list[FileCounts]:
    """Each file's lines read, serves, verdicts and rejected lines, in file-number order.

    Lines read are the lines staging parsed (`_p`) less the blank ones, except for a file
    read line by line (not plain UTF-8, or a fault), whose reader counted them.
    """
    n = len(batch.files)
    lines, serves, verdicts = ([0] * n for _ in range(3))
    for counts, sql in (
        (lines, "SELECT key >> 32, count(*) FROM _p GROUP BY ALL"),
        (serves, "SELECT key >> 32, count(*) FROM _s GROUP BY ALL"),
        (verdicts, "SELECT key >> 32, count(*) FROM _v GROUP BY ALL"),
    ):
        for no, c in batch.con.execute(sql).fetchall():
            counts[no] = c
    for key in blank:
        lines[key >> _LINE_BITS] -= 1
    rejected = [0] * n
    for r in rejects:
        rejected[r[0] >> _LINE_BITS] += 1
    return [
        FileCounts(
            lines_read=fs.lines_read if fs.lines_read is not None else lines[no],
            serves=serves[no],
            verdicts=verdicts[no],
            rejected=rejected[no],
        )
        for no, fs in enumerate(batch.files)
    ]


def _replace_rows(batch: Batch, counts: list[FileCounts], now: datetime) -> None:
    """Delete what the warehouse held of the batch's files and insert their rows, in one transaction.

    A replaced file's serves are marked dirty before its rows go (and the new ones after),
    so that an incremental build recomputes the queries either version touched.
    """
    con, files = batch.con, batch.files
    replaced = [fs.todo.file.source_file for fs in files if fs.todo.was_known]
    with transaction(con):
        if replaced:
            for mark in MARK_DIRTY if batch.track_dirty else ():
                con.execute(mark, [True, replaced])
            for delete in DELETE_FILES:
                con.execute(delete, [replaced])
        for insert in _INSERT[:4]:
            con.execute(insert)
        failpoints.hit("ingest.mid_transaction")
        for insert in _INSERT[4:] if batch.track_dirty else ():
            con.execute(insert)
        con.executemany(
            "INSERT INTO log_files BY NAME SELECT ? AS source_file, ? AS dt, ? AS file_name, "
            "? AS content_sha256, ? AS size_bytes, ? AS mtime, ? AS lines_total, ? AS lines_read, "
            "? AS lines_rejected, ? AS ingested_at, ? AS verified_at, ? AS serves, ? AS verdicts",
            [
                [
                    fs.todo.file.source_file,
                    fs.todo.file.dt,
                    fs.todo.file.file_name,
                    fs.content_sha256,
                    fs.size_bytes,
                    fs.mtime,
                    fs.lines_total,
                    c.lines_read,
                    c.rejected,
                    now,
                    now,
                    c.serves,
                    c.verdicts,
                ]
                for fs, c in zip(files, counts, strict=True)
            ],
        )


def _report(batch: Batch, counts: list[FileCounts], rejects: list[_RejectRow]) -> None:
    """Add the committed files' counts, and their rejects by reason, to their partitions' reports."""
    for fs, c in zip(batch.files, counts, strict=True):
        report = fs.todo.report
        report.files_ingested += 1
        report.lines_read += c.lines_read
        report.serves += c.serves
        report.verdicts += c.verdicts
        report.rejected += c.rejected
    for key, reason, _, _ in rejects:
        reasons = batch.files[key >> _LINE_BITS].todo.report.reasons
        reasons[reason] = reasons.get(reason, 0) + 1
