"""Serve-log ingestion: each file read once, re-read only when its content changed.

A file's rows are replaced as a whole (delete then insert, one transaction), so a
retry, a backfill or an appended file never duplicates anything, and rows of a
file that has since been deleted stay: the warehouse is the record.

Files are streamed into DuckDB in chunks of whole lines (`logfiles.TextStream`,
hashed while read) and checked as UTF-8, split and numbered there; no Python list
of a file's lines is built, except for the rare file that is not plain UTF-8 text
or whose gzip stream breaks, which `logfiles.read_file` reads with the exact rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from goldenset import failpoints, forgotten, progress
from goldenset.bulk import drop_staging, stage
from goldenset.clock import utcnow
from goldenset.connection import Connection
from goldenset.logfiles import (
    RACY_SECONDS,
    LogFile,
    NotPlainText,
    TextStream,
    file_sha256,
    list_files,
    list_partitions,
    read_file,
)
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
    files_forgotten: int = 0  # forgotten files left out, their bytes as forgotten (contract 9.6)
    forgotten_changed: list[str] = field(default_factory=list)  # ... and those whose bytes changed since


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


@dataclass
class _Todo:
    file: LogFile
    was_known: bool
    report: PartitionReport
    had_content: bool = False  # the warehouse holds rows of a readable version of it


def _changed_files(
    con: Connection, root: Path, dt: str, rehash: bool, report: PartitionReport, known: dict, left_out: dict
) -> list[_Todo]:
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
            todo.append(_Todo(f, rec is not None, report))
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
        todo.append(_Todo(f, True, report, had_content=True))
    return todo


# Text read into DuckDB and validated before a batch of whole files is committed in one
# transaction. Larger batches amortise DuckDB's per-statement cost and its checkpoints:
# each batch leaves a partly filled row group per table and thread, which the next
# checkpoint merges by rewriting its neighbours (0.8 s a batch at 10 M items). Ingesting
# those 1.96 GB took 38.4 s in 256 MiB batches, 36.4 s in 512 MiB, 35.3 s in 1 GiB and
# 40.9 s in one 2 GiB batch (spilling), peak RSS 2.39 to 2.63 GB. This bound (with DuckDB's
# memory limit) keeps a backfill's memory flat. A larger file is a batch alone.
BATCH_BYTES = 1 << 30


def changed_files(con: Connection, root: Path, dt: str, rehash: bool, report: PartitionReport) -> list[_Todo]:
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


def ingest_files(con: Connection, todo: list[_Todo]) -> None:
    """Read the files `changed_files` found and replace their rows, in batches of whole files
    of up to BATCH_BYTES of text, one transaction each; their reports are updated."""
    if not todo:
        return
    with progress.step("ingesting files", total=len(todo)) as advance:
        batch = _Batch(con)
        try:
            for item in todo:
                batch.add(item)
                if batch.text_bytes >= BATCH_BYTES:
                    advance(batch.commit())
                    batch = _Batch(con)
            if batch.files:
                advance(batch.commit())
        finally:
            batch.discard()


@dataclass
class _FileState:
    todo: _Todo
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


class _Batch:
    """Files read into the temp table `_lines`, validated and committed together."""

    def __init__(self, con: Connection):
        self.con = con
        self.files: list[_FileState] = []
        self.extra: list[tuple[int, bytes]] = []  # lines that are not UTF-8: Python rules only
        self.text_bytes = 0
        con.execute("CREATE OR REPLACE TEMP TABLE _lines (key BIGINT, raw VARCHAR)")
        self.track_dirty = tracks_dirty(con)

    def add(self, todo: _Todo) -> None:
        no = len(self.files)
        base = no << _LINE_BITS
        stream = TextStream(todo.file)
        try:
            for first_line, text in stream.chunks():
                self._add_chunk(base + first_line - 1, text)
            self.files.append(
                _FileState(todo, stream.content_sha256, stream.size_bytes, stream.mtime, stream.lines_total)
            )
            self.text_bytes += stream.text_bytes
            return
        except NotPlainText:
            pass
        # Not plain UTF-8 text, or a fault: the exact line-by-line rules decide what was read.
        self.con.execute("DELETE FROM _lines WHERE key >> 32 = ?", [no])
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

    def commit(self) -> int:
        """Validate, replace the files' rows in one transaction, update the reports; return the file count."""
        now = utcnow()
        staged = stage(self.con, self.extra)
        rejects = self._rejects(staged.rejects)
        self._stage_batch(rejects, now)
        counts = self._file_counts(staged.blank, rejects)
        self._replace_rows(counts, now)
        failpoints.hit("ingest.after_batch")
        self._report(counts, rejects)
        self.discard()  # forgets the files
        return len(counts)

    def _rejects(self, staged: Sequence[_RejectRow]) -> list[_RejectRow]:
        """The rejected lines staging found, and a row for each file that could not be read to its end."""
        rejects = list(staged)
        for no, fs in enumerate(self.files):
            if fs.fault is not None:
                rejects.append(((no << _LINE_BITS) | (fs.fault_line or 0), "unreadable_file", fs.fault, None))
        return rejects

    def _stage_batch(self, rejects: list[_RejectRow], now: datetime) -> None:
        """The batch's rejects and files as the temp tables `_INSERT` joins on file number."""
        con, files = self.con, self.files
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

    def _file_counts(self, blank: list[int], rejects: list[_RejectRow]) -> list[FileCounts]:
        """Each file's lines read, serves, verdicts and rejected lines, in file-number order.

        Lines read are the lines staging parsed (`_p`) less the blank ones, except for a file
        read line by line (not plain UTF-8, or a fault), whose reader counted them.
        """
        n = len(self.files)
        lines, serves, verdicts = ([0] * n for _ in range(3))
        for counts, sql in (
            (lines, "SELECT key >> 32, count(*) FROM _p GROUP BY ALL"),
            (serves, "SELECT key >> 32, count(*) FROM _s GROUP BY ALL"),
            (verdicts, "SELECT key >> 32, count(*) FROM _v GROUP BY ALL"),
        ):
            for no, c in self.con.execute(sql).fetchall():
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
            for no, fs in enumerate(self.files)
        ]

    def _replace_rows(self, counts: list[FileCounts], now: datetime) -> None:
        """Delete what the warehouse held of the batch's files and insert their rows, in one transaction.

        A replaced file's serves are marked dirty before its rows go (and the new ones after),
        so that an incremental build recomputes the queries either version touched.
        """
        con, files = self.con, self.files
        replaced = [fs.todo.file.source_file for fs in files if fs.todo.was_known]
        with transaction(con):
            if replaced:
                for mark in MARK_DIRTY if self.track_dirty else ():
                    con.execute(mark, [True, replaced])
                for delete in DELETE_FILES:
                    con.execute(delete, [replaced])
            for insert in _INSERT[:4]:
                con.execute(insert)
            failpoints.hit("ingest.mid_transaction")
            for insert in _INSERT[4:] if self.track_dirty else ():
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

    def _report(self, counts: list[FileCounts], rejects: list[_RejectRow]) -> None:
        """Add the committed files' counts, and their rejects by reason, to their partitions' reports."""
        for fs, c in zip(self.files, counts, strict=True):
            report = fs.todo.report
            report.files_ingested += 1
            report.lines_read += c.lines_read
            report.serves += c.serves
            report.verdicts += c.verdicts
            report.rejected += c.rejected
        for key, reason, _, _ in rejects:
            reasons = self.files[key >> _LINE_BITS].todo.report.reasons
            reasons[reason] = reasons.get(reason, 0) + 1

    def discard(self) -> None:
        drop_staging(self.con)
        for t in _BATCH_TABLES:
            self.con.execute("DROP TABLE IF EXISTS " + t)
        self.files = []
