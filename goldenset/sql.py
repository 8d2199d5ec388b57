"""Read-only SQL on the warehouse, for `goldenset sql` (contract 17.3).

goldenset does not install DuckDB's command-line tool, so a guide that told a new user to
run `duckdb -readonly ...` failed at its first command; and a DuckDB client left open on
the warehouse blocks the nightly build, since DuckDB lets a file be opened for writing only
when no other process has it open at all.

Decisions
---------
- **Never the writer's lock.** Each statement opens the warehouse read-only, runs, fetches
  every row and closes it: an interactive session holds the file only while a statement runs,
  never between statements.
- **Never in a build's way.** A build marks the warehouse while it runs (goldenset.build_marker).
  A statement waits for a running build to end before it opens the file (up to the wait:
  `--wait`, else GOLDENSET_LOCK_TIMEOUT, else 30 s; then "database busy"), as `status` waits
  for a writer. A build that starts while a statement runs interrupts it (DuckDB's
  `interrupt`, polled every 0.1 s): the statement lets go of the file, waits for the build
  within what is left of the wait, and runs again from the start (it only reads). Other writers
  (`pool`, `forget`) are waited for as every reader waits (warehouse.connect).
- **Read only, the warehouse only.** The connection is read-only, and file system access is
  switched off and the configuration locked before the user's SQL runs: no `COPY ... TO`, no
  `ATTACH` of another file (which could be written), no `read_csv` of files; `--format csv` or
  `json` is how results leave. Temporary tables live and die with the statement.
- **Errors.** What DuckDB refuses (a parse error, a missing table, a write) is one line,
  `the query failed: <DuckDB's first line>`, exit 1.
"""

from __future__ import annotations

import csv
import io
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from datetime import time as clock_time
from pathlib import Path
from typing import Any

import duckdb

from goldenset import build_marker, progress
from goldenset.connection import Connection
from goldenset.errors import DatabaseBusy, GoldensetError, UsageError
from goldenset.warehouse import connect

FORMATS = ("table", "csv", "json")
_POLL_SECONDS = 0.1
_RELATIONS = (
    "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name"
)
_COLUMNS = "SELECT DISTINCT column_name FROM information_schema.columns WHERE table_schema = 'main' ORDER BY 1"


@dataclass(frozen=True)
class Result:
    """What a statement returned: its column names and rows (no columns: a statement without a result)."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def _wait_for_build(db: Path, deadline: float, notify: Callable[[str], None], wait: float) -> None:
    """Return once no build runs on `db`; DatabaseBusy past `deadline`."""
    told = False
    while (running := build_marker.running(db)) is not None:
        if time.monotonic() >= deadline:
            raise DatabaseBusy(
                f"database busy: a build is running ({running.describe()}); try again when it finishes"
                + (f" (waited {wait:g} s; --wait or GOLDENSET_LOCK_TIMEOUT waits longer)" if wait else "")
            )
        if not told:
            notify(f"waiting for the build (PID {running.pid}) to finish writing {db} (up to {wait:g} s)")
            told = True
        time.sleep(min(_POLL_SECONDS, max(0.0, deadline - time.monotonic())))


@contextmanager
def _interrupted_by_a_build(db: Path, con: Connection) -> Iterator[threading.Event]:
    """Watch for a build starting on `db` while the block runs; interrupt `con` when one does."""
    stop, started = threading.Event(), threading.Event()

    def watch() -> None:
        while not stop.wait(_POLL_SECONDS):
            if build_marker.running(db) is not None:
                started.set()
                con.interrupt()
                return

    watcher = threading.Thread(target=watch, name="goldenset-sql-watch", daemon=True)
    watcher.start()
    try:
        yield started
    finally:
        stop.set()
        watcher.join()


def _open(db: Path, deadline: float, notify: Callable[[str], None], wait: float) -> Connection:
    _wait_for_build(db, deadline, notify, wait)
    con = connect(db, read_only=True, wait=max(0.0, deadline - time.monotonic()), notify=notify)
    # The user's SQL reads this file and nothing else, and cannot switch that back on.
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def run(db: str | Path, sql: str, *, wait: float, notify: Callable[[str], None] | None = None) -> Result:
    """Run `sql` read-only on the warehouse `db` and return its result, giving way to any build."""
    db, notify = Path(db), notify or progress.notice
    if not sql.strip():
        raise UsageError("goldenset sql needs a query, e.g. 'SELECT * FROM golden_builds'")
    deadline = time.monotonic() + max(0.0, wait)
    while True:
        con = _open(db, deadline, notify, wait)
        try:
            with _interrupted_by_a_build(db, con) as build_started:
                try:
                    cur = con.execute(sql)
                    columns = tuple(d[0] for d in cur.description) if cur.description else ()
                    return Result(columns, cur.fetchall() if columns else [])
                except duckdb.Error as exc:
                    if not build_started.is_set():  # (else: interrupted for a build, run again)
                        first = (str(exc).splitlines() or [type(exc).__name__])[0]
                        raise GoldensetError(f"the query failed: {first}") from None
        finally:
            con.close()
        notify("a build started: the query gave way to it and runs again once it finishes")


def relations(db: str | Path, *, wait: float, notify: Callable[[str], None] | None = None) -> list[tuple[str, str]]:
    """The warehouse's tables and views as (name, `table` or `view`), in name order."""
    result = run(db, _RELATIONS, wait=wait, notify=notify)
    return [(name, "view" if kind == "VIEW" else "table") for name, kind in result.rows]


def names(db: str | Path, *, wait: float, notify: Callable[[str], None] | None = None) -> list[str]:
    """Every table, view and column name of the warehouse, for completion."""
    out = {name for name, _ in relations(db, wait=wait, notify=notify)}
    out |= {c for (c,) in run(db, _COLUMNS, wait=wait, notify=notify).rows}
    return sorted(out)


def cell(value: Any) -> str:
    """A value as text: NULL for null, ISO 8601 for times, JSON for lists and structs."""
    if value is None:
        return "NULL"
    if isinstance(value, list | dict):
        return json.dumps(value, default=str, ensure_ascii=False)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date | clock_time):
        return value.isoformat()
    return str(value)


def as_csv(result: Result) -> str:
    """The result as CSV with a header row (null: an empty field)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(result.columns)
    for row in result.rows:
        writer.writerow(["" if v is None else cell(v) for v in row])
    return buffer.getvalue()


def as_json(result: Result) -> str:
    """The result as a JSON array of objects, one per row, keys in column order."""
    return json.dumps([dict(zip(result.columns, row, strict=True)) for row in result.rows], default=str)


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return fmt


def complete(candidates: Sequence[str], text: str) -> list[str]:
    """The names starting with `text` (case-insensitive), for the prompt's tab completion."""
    low = text.lower()
    return [c for c in candidates if c.lower().startswith(low)]
