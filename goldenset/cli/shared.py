"""What the command modules share: the two consoles and opening the warehouse.

Every command module imports this one and nothing from `goldenset.cli.app`, so the
app can import the command modules without an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from goldenset import settings
from goldenset.consoles import console
from goldenset.errors import InputError

out = console()
err = console(stderr=True)


def open_warehouse(db: Path, *, read_only: bool, wait: float | None = None):
    """Open the warehouse, waiting (and saying so on stderr) while another process writes it."""
    from goldenset.warehouse import connect

    return connect(db, read_only=read_only, wait=settings.lock_timeout(wait))


@contextmanager
def reading(db: Path, wait: float | None = None) -> Iterator:
    """A read-only connection for the length of a block; a DuckDB failure inside it names the file."""
    import duckdb

    con = open_warehouse(db, read_only=True, wait=wait)
    try:
        yield con
    except duckdb.Error as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(
            f"warehouse {db} could not be read ({first}); if the file is damaged, restore it from a "
            "backup, or move it aside and build again from the logs"
        ) from None
    finally:
        con.close()
