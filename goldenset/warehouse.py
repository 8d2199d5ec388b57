"""Opening the DuckDB warehouse: one writer at a time, a clear word when it is busy."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb

from goldenset import progress, settings
from goldenset.connection import Connection
from goldenset.errors import DatabaseBusy, GoldensetError, InputError, NoBuild, UnknownWarehouse
from goldenset.migrations import migrate

_PID = re.compile(r"PID (\d+)")
_POLL_SECONDS = 0.25


def connect(
    path: str | Path, read_only: bool = False, *, wait: float = 0.0, notify: Callable[[str], None] | None = None
) -> Connection:
    """Open the warehouse, creating it and its schema when writing.

    When another process holds the file, wait up to `wait` seconds for it to let go
    (telling `notify` once, naming the PID; by default a progress notice, which the CLI
    prints), then raise DatabaseBusy ("database busy: held by PID n") instead of DuckDB's
    lock error.
    """
    notify = notify or progress.notice
    path = Path(path)
    if path.exists() and path.is_dir():
        where = settings.named("db", path)
        raise InputError(f"the warehouse {where} is a directory; point {where.fix} at a .duckdb file")
    if read_only and not path.exists():
        raise missing_warehouse(path)
    creating = not read_only and not path.exists()
    if creating:
        # A deployment's configured place is made as needed; a path a user typed is checked
        # before this by require_folder (a typo in --db must not start a new warehouse).
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the warehouse folder {path.parent}: {exc.strerror or exc}") from None
    deadline = time.monotonic() + max(0.0, wait)
    told = False
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.IOException as exc:
            msg = str(exc)
            if "lock" not in msg.lower():
                raise InputError(f"warehouse {path} cannot be opened: {msg.splitlines()[0]}") from None
            m = _PID.search(msg)
            holder = f"PID {m.group(1)}" if m else "another process"
            if time.monotonic() >= deadline:
                raise DatabaseBusy(
                    f"database busy: held by {holder}; try again when it finishes"
                    + (f" (waited {wait:g} s; --wait or GOLDENSET_LOCK_TIMEOUT waits longer)" if wait else "")
                ) from None
            if notify is not None and not told:
                notify(f"waiting for {holder} to finish writing {path} (up to {wait:g} s)")
                told = True
            time.sleep(min(_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        except duckdb.Error as exc:
            raise InputError(
                f"warehouse {path} is not a DuckDB file or is damaged: {str(exc).splitlines()[0]}"
            ) from None
    memory_settings(con)
    if not read_only:
        try:
            migrate(con)
        except duckdb.Error as exc:
            con.close()
            raise InputError(
                f"warehouse {path} is damaged ({str(exc).splitlines()[0]}); restore it from a backup, "
                "or move it aside and build again from the logs"
            ) from None
        except BaseException:
            con.close()
            raise
    if creating:
        notify(f"new warehouse: {path} (none was there before)")
    return con


def require_folder(path: Path, home: Path) -> None:
    """Refuse a new warehouse whose folder does not exist, unless that folder is the goldenset home.

    A typo in --db (`/nonexistent-dir/x.duckdb`) used to create the folder and start an
    empty warehouse from scratch. The home is goldenset's own folder and is made on first
    use; any other folder is the user's, and must exist already.
    """
    folder = path.parent
    if folder.is_dir():
        return
    if folder.resolve() == Path(home).resolve():
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the goldenset home {folder}: {exc.strerror or exc}") from None
        return
    where = settings.named("db", path)
    raise InputError(
        f"the folder of the warehouse {where} does not exist: {folder}; create it first, or fix {where.fix}"
    )


# A home's warehouses (contract 17.1): the DuckDB files directly in the home, and every
# warehouse a command of this home wrote, one absolute path a line in this file.
REGISTRY = "warehouses.txt"


def home_warehouses(home: Path) -> list[Path]:
    """The warehouses the home has now: its own `*.duckdb` files and those its registry lists that still exist."""
    home = Path(home)
    listed: list[Path] = []
    with suppress(OSError):
        listed = [Path(line) for line in (home / REGISTRY).read_text(encoding="utf-8").splitlines() if line.strip()]
    found = {p.resolve() for p in [*home.glob("*.duckdb"), *listed] if p.is_file()}
    return sorted(found)


def remember_warehouse(home: Path, path: Path) -> None:
    """List `path` in the home's registry (once); best effort: a read-only home is not an error."""
    home, path = Path(home), Path(path).resolve()
    if not path.is_file() or path.parent == home.resolve():  # (the home's own files are found without it)
        return
    registry = home / REGISTRY
    try:
        text = registry.read_text(encoding="utf-8") if registry.exists() else ""
        if str(path) not in text.splitlines():
            with registry.open("a", encoding="utf-8") as fh:
                fh.write(f"{path}\n")
    except OSError:
        pass


def _others(path: Path, home: Path) -> list[Path]:
    resolved = Path(path).resolve()
    return [p for p in home_warehouses(home) if p != resolved]


def missing_warehouse(path: Path, home: Path | None = None) -> GoldensetError:
    """The error for a warehouse path that does not exist: UnknownWarehouse naming the home's
    warehouses when it has some (a typo, exit 2), else NoBuild (nothing built yet, exit 1)."""
    home = Path(home) if home is not None else settings.home()
    others = _others(path, home)
    where = settings.named("db", path)
    if not others:
        return NoBuild(f"no warehouse at {where}: run `goldenset build` first")
    return UnknownWarehouse(
        f"no warehouse at {where}; this home ({home}) has {', '.join(map(str, others))}: fix {where.fix}, "
        "or start a new warehouse there with `goldenset build --new-warehouse`"
    )


def check_new_warehouse(path: Path, home: Path, *, new_warehouse: bool) -> None:
    """Before a build creates the warehouse `path`: refuse (UnknownWarehouse) when the home has
    another one, unless `new_warehouse` (contract 17.1)."""
    if Path(path).exists() or new_warehouse:
        return
    others = _others(path, home)
    if others:
        where = settings.named("db", path)
        raise UnknownWarehouse(
            f"no warehouse at {where}; this home ({home}) has {', '.join(map(str, others))}: fix {where.fix}, "
            "or give --new-warehouse to start a new one there"
        )


# DuckDB's own default memory limit is 80% of the machine's memory: a large build then
# takes what it can get (7.3 GB at 10 million served items). Past this bound DuckDB
# spills to its temp directory instead, which keeps the process under 3 GB at that size
# and costs time (the build's staging statements: 32 s instead of 19 s, measured alone).
DEFAULT_MEMORY_LIMIT = 2 << 30


def memory_settings(con: Connection) -> None:
    """Memory limit, spill directory and insertion order, from GOLDENSET_DUCKDB_* or the defaults.

    GOLDENSET_DUCKDB_MEMORY_LIMIT (e.g. `2GB`; default the smaller of 2 GiB and 80% of
    the machine's memory), GOLDENSET_DUCKDB_TEMP_DIRECTORY (default DuckDB's: `<db>.tmp`
    next to the file) and GOLDENSET_DUCKDB_PRESERVE_INSERTION_ORDER (default `false`:
    no query here depends on the order rows were inserted in, and keeping it makes
    DuckDB buffer results it could stream).
    """
    limit = os.environ.get("GOLDENSET_DUCKDB_MEMORY_LIMIT")
    if not limit:
        try:
            physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            physical = 0
        limit = f"{min(DEFAULT_MEMORY_LIMIT, int(physical * 0.8)) if physical else DEFAULT_MEMORY_LIMIT}B"
    con.execute("SET memory_limit = ?", [limit])
    temp = os.environ.get("GOLDENSET_DUCKDB_TEMP_DIRECTORY")
    if temp:
        con.execute("SET temp_directory = ?", [temp])
    order = os.environ.get("GOLDENSET_DUCKDB_PRESERVE_INSERTION_ORDER", "false")
    con.execute("SET preserve_insertion_order = ?", [order.strip().lower() in ("1", "true", "yes", "on")])


@contextmanager
def checkpoint_after(con: Connection):
    """Run the block with DuckDB's checkpoint at commit held off, then checkpoint once.

    Past `checkpoint_threshold` DuckDB checkpoints inside COMMIT. For the build's
    transaction (label rows closed and opened, with its staging tables still held) that
    took 1.27 s on a 10 M item nightly, where writing the WAL at COMMIT (0.08 s) and a
    CHECKPOINT once the staging tables are dropped (0.33 s) wrote the same file. The commit
    is durable in the WAL either way; a process killed before the CHECKPOINT leaves the
    WAL, which the next open replays.
    """
    (threshold,) = con.execute("SELECT current_setting('checkpoint_threshold')").fetchall()[0]
    con.execute("SET checkpoint_threshold = '1000TB'")
    try:
        yield con
    finally:
        con.execute("SET checkpoint_threshold = ?", [threshold])
    con.execute("CHECKPOINT")


@contextmanager
def transaction(con: Connection):
    """Commit the block as one transaction, or roll all of it back."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    else:
        con.execute("COMMIT")


def temp_objects(con: Connection) -> set[tuple[str, str]]:
    """The connection's temporary tables and views, as (kind, name)."""
    tables = con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    views = con.execute("SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal").fetchall()
    return {("TABLE", t) for (t,) in tables} | {("VIEW", v) for (v,) in views}


def drop_working_tables(con: Connection, before: set[tuple[str, str]]) -> None:
    """Drop every temporary table and view made since `before` (`temp_objects` then), views first.

    One scope owns a step's working tables, whichever module made them: no hand-kept list
    of names to forget one in.
    """
    made = temp_objects(con) - before
    for kind, name in sorted(made, key=lambda o: (o[0] != "VIEW", o[1])):
        con.execute(f'DROP {kind} IF EXISTS "{name}"')
