"""Opening the DuckDB warehouse: one writer at a time, a clear word when it is busy."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path

import duckdb

from goldenset import schema
from goldenset.errors import DatabaseBusy, NoBuild

_PID = re.compile(r"PID (\d+)")


def connect(path: str | Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the warehouse, creating it and its schema when writing.

    Raises DatabaseBusy ("database busy: held by PID n") when another process holds
    the file, instead of DuckDB's lock error.
    """
    path = Path(path)
    if read_only and not path.exists():
        raise NoBuild(f"no warehouse at {path}: run `goldenset build` first")
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        msg = str(exc)
        if "lock" not in msg.lower():
            raise
        m = _PID.search(msg)
        holder = f"PID {m.group(1)}" if m else "another process"
        raise DatabaseBusy(f"database busy: held by {holder}; try again when it finishes") from exc
    limit = os.environ.get("GOLDENSET_DUCKDB_MEMORY_LIMIT")
    if limit:
        # DuckDB spills to disk past this; it bounds the build's peak memory on big logs.
        con.execute("SET memory_limit = ?", [limit])
    if not read_only:
        schema.create_all(con)
    return con


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection):
    """Commit the block as one transaction, or roll all of it back."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    else:
        con.execute("COMMIT")
