"""What the command modules share: the group factory, the two consoles and opening the warehouse.

Every command module imports this one and nothing from `goldenset.cli.app`, so the
app can import the command modules without an import cycle.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from goldenset import settings
from goldenset.consoles import console
from goldenset.errors import InputError, UsageError

out = console()
err = console(stderr=True)


def command_group(name: str, help: str, **overrides: Any) -> typer.Typer:
    """A Typer for one command group (or the program), with the settings every group shares.

    Plain help (`rich_markup_mode=None`): the CLI reference page (docs/reference/cli.md) is
    generated from `--help` and must not depend on the terminal. No shell-completion commands,
    and no pretty tracebacks: errors reach the user as one line through `goldenset.cli.app.main`.
    A group given no subcommand prints its help; `overrides` changes any of these for one group.
    """
    options: dict[str, Any] = {
        "name": name,
        "help": help,
        "no_args_is_help": True,
        "add_completion": False,
        "pretty_exceptions_enable": False,
        "rich_markup_mode": None,
    }
    options.update(overrides)
    return typer.Typer(**options)


def open_warehouse(db: Path, *, read_only: bool, wait: float | None = None):
    """Open the warehouse, waiting (and saying so on stderr) while another process writes it.

    Writing, a warehouse that does not exist is made only where the home has none (contract
    17.1: a second one is `goldenset build --new-warehouse`'s to make); the home lists it.
    """
    from goldenset.errors import UnknownWarehouse
    from goldenset.warehouse import connect, missing_warehouse, remember_warehouse

    if not read_only and not Path(db).exists() and isinstance(error := missing_warehouse(Path(db)), UnknownWarehouse):
        raise error
    con = connect(db, read_only=read_only, wait=settings.lock_timeout(wait))
    if not read_only:
        remember_warehouse(settings.home(), Path(db))
    return con


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


# Names a page or receiver on loopback answers to: a Host header check on them closes it to DNS rebinding.
LOOPBACK_NAMES = ("127.0.0.1", "localhost")


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket, bound before the URL is printed, so --port 0 prints the port it got."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r} cannot be resolved ({exc.strerror}); use 127.0.0.1") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pass another --port (0 picks a free one)"
        ) from None
    sock.listen(64)
    return sock


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (a page or receiver bound there is not reachable from others)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
