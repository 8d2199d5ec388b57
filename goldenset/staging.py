"""Staged ingestion: each log day validated in its own process into Parquet, loaded by the one writer.

DuckDB allows one writing process, so ingesting straight into the warehouse runs one
day after another. Staging splits the work: `stage_partition` reads one day's files
with exactly the rules of `ingest` (it runs `ingest_all` against an in-memory DuckDB
that holds what was staged of that day before) and writes that day's rows as Parquet;
it never opens the warehouse, so any number of days stage at once, in separate
processes. `load_staged` is the single-writer step: it replaces the rows of each
staged file whose content the warehouse does not hold yet, one transaction per day.

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
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb

from goldenset import failpoints, schema
from goldenset.ingest import MARK_DIRTY, PartitionReport, changed_files, ingest_all
from goldenset.warehouse import _memory_settings, transaction

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
_DELETE_SQL = {
    "log_serves": "DELETE FROM log_serves WHERE list_contains(?, source_file)",
    "log_serve_items": "DELETE FROM log_serve_items WHERE list_contains(?, source_file)",
    "log_verdicts": "DELETE FROM log_verdicts WHERE list_contains(?, source_file)",
    "log_rejects": "DELETE FROM log_rejects WHERE list_contains(?, source_file)",
    "log_files": "DELETE FROM log_files WHERE list_contains(?, source_file)",
}
_COPY_SQL = {
    "log_serves": "COPY (SELECT * EXCLUDE (dt) FROM log_serves) TO ? (FORMAT parquet, COMPRESSION zstd)",
    "log_serve_items": "COPY log_serve_items TO ? (FORMAT parquet, COMPRESSION zstd)",
    "log_verdicts": "COPY (SELECT * EXCLUDE (dt) FROM log_verdicts) TO ? (FORMAT parquet, COMPRESSION zstd)",
    "log_rejects": "COPY (SELECT * EXCLUDE (dt) FROM log_rejects) TO ? (FORMAT parquet, COMPRESSION zstd)",
    "log_files": "COPY (SELECT * EXCLUDE (dt) FROM log_files) TO ? (FORMAT parquet, COMPRESSION zstd)",
}


def _dt_args(table: str, dt: str) -> list[str]:
    return [] if table in _WITHOUT_DT else [dt]


def _read_back(con: duckdb.DuckDBPyConnection, table: str, dt: str, part: Path) -> None:
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


def _day_connection(staging: Path, threads: int | None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    _memory_settings(con)
    if not os.environ.get("GOLDENSET_DUCKDB_TEMP_DIRECTORY"):
        # An in-memory database spills next to the working directory by default; keep it home.
        con.execute("SET temp_directory = ?", [str(staging / ".tmp")])
    if threads:
        con.execute("SET threads = ?", [threads])
    schema.create_all(con)
    return con


def stage_partition(
    root: Path, dt: str, staging: Path, *, rehash: bool = False, threads: int | None = None
) -> StagedDay:
    """Stage log day `dt` of `root` into `staging`; a day whose files are unchanged is left as it is.

    Never opens the warehouse. Safe to run for different days at the same time.
    """
    staging = Path(staging)
    con = _day_connection(staging, threads)
    try:
        files_now = day_link(staging, "log_files", dt) / PART
        if files_now.is_file():
            _read_back(con, "log_files", dt, files_now)
        # What changed is decided from the file table alone, before any row is read back.
        probe = PartitionReport(dt)
        if not changed_files(con, root, dt, rehash, probe) and files_now.is_file() and not rehash:
            return StagedDay(probe, written=False)
        if files_now.is_file():
            generation = files_now.resolve().parent.name
            for table in STAGED_TABLES[:-1]:
                part = staging / GENERATIONS / table / generation / PART
                _read_back(con, table, dt, part)
        report = ingest_all(con, root, [dt], rehash=rehash)[0]
        _write_generation(con, staging, dt)
        return StagedDay(report, written=True)
    finally:
        con.close()


def _write_generation(con: duckdb.DuckDBPyConnection, staging: Path, dt: str) -> None:
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


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot fsync a directory
        _fsync(path)


def load_staged(con: duckdb.DuckDBPyConnection, staging: Path, dts: list[str]) -> list[PartitionReport]:
    """Load the staged days `dts` into the warehouse: each staged file the warehouse does not
    hold at that content replaces that file's rows, one transaction per day.

    Rows of files the warehouse holds and the staged day does not (a file deleted from
    LOGS before it was staged) stay, as with direct ingestion.
    """
    staging = Path(staging)
    reports = []
    for dt in dts:
        report = PartitionReport(dt)
        reports.append(report)
        files_part = day_link(staging, "log_files", dt) / PART
        if not files_part.is_file():
            continue
        generation = files_part.resolve().parent.name
        parts = {t: str(staging / GENERATIONS / t / generation / PART) for t in STAGED_TABLES}
        staged = con.execute(
            "SELECT s.source_file, s.lines_read, s.serves, s.verdicts, s.lines_rejected, w.source_file IS NOT NULL "
            "FROM read_parquet(?, hive_partitioning = false) s LEFT JOIN log_files w ON w.source_file = s.source_file "
            "WHERE w.source_file IS NULL OR w.content_sha256 IS DISTINCT FROM s.content_sha256 "
            "OR w.ingested_at IS DISTINCT FROM s.ingested_at OR w.lines_total IS DISTINCT FROM s.lines_total",
            [parts["log_files"]],
        ).fetchall()
        report.files_seen = con.execute(
            "SELECT count(*) FROM read_parquet(?, hive_partitioning = false)", [parts["log_files"]]
        ).fetchall()[0][0]
        report.files_unchanged = report.files_seen - len(staged)
        if not staged:
            continue
        files = [r[0] for r in staged]
        replaced = [r[0] for r in staged if r[5]]
        with transaction(con):
            if replaced:
                for mark in MARK_DIRTY:
                    con.execute(mark, [replaced])
                for table in STAGED_TABLES:
                    con.execute(_DELETE_SQL[table], [replaced])
            for table in STAGED_TABLES:
                con.execute(_LOAD_SQL[table], [*_dt_args(table, dt), parts[table], files])
            failpoints.hit("staging.mid_load")
            for mark in MARK_DIRTY:  # the new serves and verdicts: their queries are rebuilt
                con.execute(mark, [files])
        report.files_ingested = len(files)
        for _, lines_read, serves, verdicts, rejected, _ in staged:
            report.lines_read += lines_read or 0
            report.serves += serves or 0
            report.verdicts += verdicts or 0
            report.rejected += rejected or 0
        for reason, n in con.execute(
            "SELECT reason, count(*) FROM read_parquet(?, hive_partitioning = false) WHERE list_contains(?, source_file) GROUP BY ALL",
            [parts["log_rejects"], files],
        ).fetchall():
            report.reasons[reason] = n
    return reports
