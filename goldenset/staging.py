"""Staged ingestion: each log day validated in its own process into Parquet, loaded by the one writer.

DuckDB allows one writing process, so ingesting straight into the warehouse runs one
day after another. Staging splits the work: `stage_partition` reads one day's files
with exactly the rules of `ingest` (its `changed_files` and `ingest_files`, against an in-memory DuckDB
that holds what was staged of that day before) and writes that day's rows as Parquet;
it never opens the warehouse, so any number of days stage at once, in separate
processes. `load_staged` is the single-writer step: it replaces the rows of each
staged file whose content the warehouse does not hold yet, whole days committed together.

Layout, one folder per table, hive-partitioned by `dt`:

    STAGING/log_serves/dt=2026-11-02/part.parquet
    STAGING/log_serve_items/dt=2026-11-02/part.parquet
    ... log_verdicts, log_rejects, log_files

Each `dt=` entry is a symbolic link to a generation folder under `STAGING/.generations/`
(`<table>/<dt>-<token>/part.parquet`). A day is replaced by writing a new generation of
all five tables and then switching the five links, the `log_files` link last: a reader
that follows `log_files` (as `load_staged` does, through the generation it names) sees
one whole generation, never a mix. Other engines read the table folders as ordinary
hive-partitioned Parquet (`dt` is also a column inside each file).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb

from goldenset import failpoints, forgotten, schema
from goldenset.connection import Connection
from goldenset.ingest import DELETE_FILES, MARK_DIRTY, PartitionReport, changed_files, ingest_files, tracks_dirty
from goldenset.warehouse import memory_settings, transaction

# The tables a day's ingestion writes, the file table last (it names the generation).
STAGED_TABLES = ("log_serves", "log_serve_items", "log_verdicts", "log_rejects", "log_files")
GENERATIONS = ".generations"
PART = "part.parquet"

# Constant statements, one per table: table names are never spliced into SQL at run time.
# As Hive lays tables out, `dt` lives in the folder name (dt=...), not in the files; the
# statements that read a day's file put it back as a parameter.
_LOAD_SQL = {
    "log_serves": "INSERT INTO log_serves BY NAME SELECT *, ?::VARCHAR AS dt FROM read_parquet(?, hive_partitioning = false) "
    "WHERE list_contains(?, source_file)",
    "log_serve_items": "INSERT INTO log_serve_items BY NAME SELECT * FROM read_parquet(?, hive_partitioning = false) "
    "WHERE list_contains(?, source_file)",
    "log_verdicts": "INSERT INTO log_verdicts BY NAME SELECT *, ?::VARCHAR AS dt FROM read_parquet(?, hive_partitioning = false) "
    "WHERE list_contains(?, source_file)",
    "log_rejects": "INSERT INTO log_rejects BY NAME SELECT *, ?::VARCHAR AS dt FROM read_parquet(?, hive_partitioning = false) "
    "WHERE list_contains(?, source_file)",
    "log_files": "INSERT INTO log_files BY NAME SELECT *, ?::VARCHAR AS dt FROM read_parquet(?, hive_partitioning = false) "
    "WHERE list_contains(?, source_file)",
}
_READ_BACK_SQL = {
    "log_serves": "INSERT INTO log_serves BY NAME SELECT *, ?::VARCHAR AS dt FROM read_parquet(?, hive_partitioning = false)",
    "log_serve_items": "INSERT INTO log_serve_items BY NAME SELECT * FROM read_parquet(?, hive_partitioning = false)",
    "log_verdicts": "INSERT INTO log_verdicts BY NAME SELECT *, ?::VARCHAR AS dt FROM read_parquet(?, hive_partitioning = false)",
    "log_rejects": "INSERT INTO log_rejects BY NAME SELECT *, ?::VARCHAR AS dt FROM read_parquet(?, hive_partitioning = false)",
    "log_files": "INSERT INTO log_files BY NAME SELECT *, ?::VARCHAR AS dt FROM read_parquet(?, hive_partitioning = false)",
}
# log_serve_items has no dt column (an item belongs to its serve's day).
_WITHOUT_DT = frozenset({"log_serve_items"})
_COPY_SQL = {
    "log_serves": "COPY (SELECT * EXCLUDE (dt) FROM log_serves) TO ? (FORMAT parquet, COMPRESSION zstd)",
    "log_serve_items": "COPY log_serve_items TO ? (FORMAT parquet, COMPRESSION zstd)",
    "log_verdicts": "COPY (SELECT * EXCLUDE (dt) FROM log_verdicts) TO ? (FORMAT parquet, COMPRESSION zstd)",
    "log_rejects": "COPY (SELECT * EXCLUDE (dt) FROM log_rejects) TO ? (FORMAT parquet, COMPRESSION zstd)",
    "log_files": "COPY (SELECT * EXCLUDE (dt) FROM log_files) TO ? (FORMAT parquet, COMPRESSION zstd)",
}


def _dt_args(table: str, dt: str) -> list[str]:
    return [] if table in _WITHOUT_DT else [dt]


def _read_back(con: Connection, table: str, dt: str, part: Path) -> None:
    """Every row of one staged file into `table` (of the day's in-memory database)."""
    con.execute(_READ_BACK_SQL[table], [*_dt_args(table, dt), str(part)])


@dataclass(frozen=True)
class StagedDay:
    """What staging one day did: its report, and whether a new generation was written."""

    report: PartitionReport
    written: bool


def day_link(staging: Path, table: str, dt: str) -> Path:
    """The hive-partition entry of one table for one day (a link to its current generation)."""
    return Path(staging) / table / f"dt={dt}"


def staged_days(staging: Path) -> list[str]:
    """Days with a complete staged generation (their `log_files` entry exists)."""
    root = Path(staging) / "log_files"
    if not root.is_dir():
        return []
    return sorted(p.name[3:] for p in root.iterdir() if p.name.startswith("dt=") and (p / PART).is_file())


_DAY_TABLES = (*STAGED_TABLES, "log_dirty")


def _day_connection(staging: Path, threads: int | None) -> Connection:
    """An in-memory DuckDB holding the log tables only: what one day is staged in."""
    con = duckdb.connect(":memory:")
    memory_settings(con)
    if not os.environ.get("GOLDENSET_DUCKDB_TEMP_DIRECTORY"):
        # An in-memory database spills next to the working directory by default; keep it home.
        con.execute("SET temp_directory = ?", [str(staging / ".tmp")])
    if threads:
        con.execute("SET threads = ?", [threads])
    for rel in schema.RELATIONS:
        if rel.name in _DAY_TABLES:
            con.execute(rel.ddl())
    return con


_CLEAR_SQL = {
    "log_serves": "DELETE FROM log_serves",
    "log_serve_items": "DELETE FROM log_serve_items",
    "log_verdicts": "DELETE FROM log_verdicts",
    "log_rejects": "DELETE FROM log_rejects",
    "log_files": "DELETE FROM log_files",
    "log_dirty": "DELETE FROM log_dirty",
}


def stage_partition(
    root: Path, dt: str, staging: Path, *, rehash: bool = False, threads: int | None = None
) -> StagedDay:
    """Stage log day `dt` of `root` into `staging`; a day whose files are unchanged is left as it is.

    Never opens the warehouse. Safe to run for different days at the same time.
    """
    return stage_partitions(root, [dt], staging, rehash=rehash, threads=threads)[0]


def stage_partitions(
    root: Path, dts: list[str], staging: Path, *, rehash: bool = False, threads: int | None = None
) -> list[StagedDay]:
    """Stage each of the days `dts` in turn, in one in-memory database emptied between days."""
    staging = Path(staging)
    con = _day_connection(staging, threads)
    try:
        out = []
        for dt in dts:
            for table in _DAY_TABLES:
                con.execute(_CLEAR_SQL[table])
            out.append(_stage_day(con, Path(root), dt, staging, rehash))
        return out
    finally:
        con.close()


def _stage_day(con: Connection, root: Path, dt: str, staging: Path, rehash: bool) -> StagedDay:
    files_now = day_link(staging, "log_files", dt) / PART
    if files_now.is_file():
        _read_back(con, "log_files", dt, files_now)
    # What changed is decided from the file table alone, before any row is read back.
    report = PartitionReport(dt)
    todo = changed_files(con, root, dt, rehash, report)
    if not todo and files_now.is_file() and not rehash:
        return StagedDay(report, written=False)
    if files_now.is_file():
        generation = files_now.resolve().parent.name
        for table in STAGED_TABLES[:-1]:
            part = staging / GENERATIONS / table / generation / PART
            _read_back(con, table, dt, part)
    ingest_files(con, todo)
    _write_generation(con, staging, dt)
    return StagedDay(report, written=True)


def _write_generation(con: Connection, staging: Path, dt: str) -> None:
    generation = f"{dt}-{uuid.uuid4().hex[:12]}"
    parts = {}
    for table in STAGED_TABLES:
        folder = staging / GENERATIONS / table / generation
        folder.mkdir(parents=True, exist_ok=True)
        part = folder / PART
        con.execute(_COPY_SQL[table], [str(part)])
        _fsync(part)
        parts[table] = folder
    failpoints.hit("staging.before_switch")
    old = []
    for table in STAGED_TABLES:  # log_files last: it is what readers follow
        link = day_link(staging, table, dt)
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink():
            old.append(link.resolve())
        tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(os.path.relpath(parts[table], link.parent), target_is_directory=True)
        os.replace(tmp, link)
    _fsync_dir(staging / "log_files")
    for folder in old:
        shutil.rmtree(folder, ignore_errors=True)
    _remove_abandoned(staging, dt, generation)


# A generation no link names, older than this, was left by a staging process that died
# before its switch. A younger one may belong to a process still writing it.
ABANDONED_SECONDS = 3600.0


def _remove_abandoned(staging: Path, dt: str, current: str) -> None:
    """Delete this day's generations that no link names and that are past ABANDONED_SECONDS."""
    now = time.time()
    for table in STAGED_TABLES:
        root = staging / GENERATIONS / table
        for folder in root.glob(f"{dt}-*"):
            if folder.name == current:
                continue
            with contextlib.suppress(OSError):
                if now - folder.stat().st_mtime > ABANDONED_SECONDS:
                    shutil.rmtree(folder, ignore_errors=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot fsync a directory
        _fsync(path)


# Staged days committed together, up to this many bytes of Parquet a transaction (a
# transaction's commit costs about 0.1 s; a day a transaction would pay it every day).
LOAD_BATCH_BYTES = 256 << 20


@dataclass
class _DayLoad:
    dt: str
    parts: dict[str, str]
    files: list[str]  # staged files the warehouse does not hold at this content
    replaced: list[str]  # ... of which the warehouse holds an earlier version
    report: PartitionReport
    size: int


def _plan_day(con: Connection, staging: Path, dt: str, left_out: dict) -> _DayLoad | None:
    """What loading staged day `dt` replaces. A forgotten file (`left_out`) is not loaded: left
    out with the bytes it was forgotten with, named in the report when they changed (contract 9.6)."""
    files_part = day_link(staging, "log_files", dt) / PART
    if not files_part.is_file():
        return None
    generation = files_part.resolve().parent.name
    parts = {t: str(staging / GENERATIONS / t / generation / PART) for t in STAGED_TABLES}
    rows = con.execute(
        "SELECT s.source_file, s.lines_read, s.serves, s.verdicts, s.lines_rejected, w.source_file IS NOT NULL, "
        "w.source_file IS NULL OR w.content_sha256 IS DISTINCT FROM s.content_sha256 "
        "OR w.ingested_at IS DISTINCT FROM s.ingested_at OR w.lines_total IS DISTINCT FROM s.lines_total, "
        "s.content_sha256 "
        "FROM read_parquet(?, hive_partitioning = false) s LEFT JOIN log_files w ON w.source_file = s.source_file",
        [parts["log_files"]],
    ).fetchall()
    report = PartitionReport(dt, files_seen=len(rows))
    for r in rows:
        if r[0] in left_out:
            if r[7] is not None and r[7] != left_out[r[0]][0]:
                report.forgotten_changed.append(r[0])
            else:
                report.files_forgotten += 1
    staged = [r[:7] for r in rows if r[6] and r[0] not in left_out]
    report.files_unchanged = len(rows) - len(staged) - report.files_forgotten - len(report.forgotten_changed)
    for _, lines_read, serves, verdicts, rejected, _, _ in staged:
        report.lines_read += lines_read or 0
        report.serves += serves or 0
        report.verdicts += verdicts or 0
        report.rejected += rejected or 0
    size = sum(os.path.getsize(part) for part in parts.values()) if staged else 0
    return _DayLoad(dt, parts, [r[0] for r in staged], [r[0] for r in staged if r[5]], report, size)


def load_staged(con: Connection, staging: Path, dts: list[str]) -> list[PartitionReport]:
    """Load the staged days `dts` into the warehouse: each staged file the warehouse does not
    hold at that content replaces that file's rows; whole days are committed together, up to
    LOAD_BATCH_BYTES of Parquet a transaction.

    Rows of files the warehouse holds and the staged day does not (a file deleted from
    LOGS before it was staged) stay, as with direct ingestion.
    """
    staging = Path(staging)
    left_out = forgotten.forgotten(con, "logs")
    plans = {dt: _plan_day(con, staging, dt, left_out) for dt in dts}
    if changed := sorted(f for p in plans.values() if p is not None for f in p.report.forgotten_changed):
        raise forgotten.refusal("logs", changed)
    todo = [plan for plan in plans.values() if plan is not None and plan.files]
    batches: list[list[_DayLoad]] = []
    for plan in todo:
        if not batches or sum(d.size for d in batches[-1]) + plan.size > LOAD_BATCH_BYTES:
            batches.append([])
        batches[-1].append(plan)
    for batch in batches:
        dirty = tracks_dirty(con)
        with transaction(con):
            for day in batch:
                _load_day(con, day, dirty)
        for day in batch:
            day.report.files_ingested = len(day.files)
            for reason, n in con.execute(
                "SELECT reason, count(*) FROM read_parquet(?, hive_partitioning = false) "
                "WHERE list_contains(?, source_file) GROUP BY ALL",
                [day.parts["log_rejects"], day.files],
            ).fetchall():
                day.report.reasons[reason] = n
    return [plan.report if plan is not None else PartitionReport(dt) for dt, plan in plans.items()]


def _load_day(con: Connection, day: _DayLoad, dirty: bool) -> None:
    if day.replaced:
        for mark in MARK_DIRTY if dirty else ():
            con.execute(mark, [True, day.replaced])
        for delete in DELETE_FILES:
            con.execute(delete, [day.replaced])
    for table in STAGED_TABLES:
        con.execute(_LOAD_SQL[table], [*_dt_args(table, day.dt), day.parts[table], day.files])
    failpoints.hit("staging.mid_load")
    for mark in MARK_DIRTY if dirty else ():  # the new serves and verdicts: their queries are rebuilt
        con.execute(mark, [False, day.files])
