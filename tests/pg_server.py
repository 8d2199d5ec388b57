"""A real PostgreSQL server for the tests, started from Debian's `postgresql` binaries in a temporary folder.

The server runs for the whole session on 127.0.0.1 with a free port and a unix socket in
the same temporary folder, with one superuser (`goldenset`): trust on the socket, a
password (scram-sha-256) over TCP, so that a dagster.yaml that takes its password from
the environment is exercised for real. Each test gets its own database.

PostgreSQL refuses to run as root, and CI runs as root: then the server runs as the
`postgres` system user that Debian's package creates, through `runuser`. Without the
binaries the tests skip on a developer's machine and fail under CI (CI=true), where
`.ci/run` installs them.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import running_under_ci

PG_LIB = Path("/usr/lib/postgresql")
SERVER_USER = "postgres"
SUPERUSER = "goldenset"
PASSWORD = "goldenset-test-password"
INSTALL_HINT = "install Debian's server with `apt-get install -y postgresql` (.ci/run does)"


class ServerUnavailable(Exception):
    """The binaries or the unprivileged user the server needs are not on this machine."""


def find_bin_dir() -> Path | None:
    """The newest /usr/lib/postgresql/<version>/bin holding initdb and pg_ctl, else initdb on PATH."""
    versions = []
    if PG_LIB.is_dir():
        for d in PG_LIB.iterdir():
            if d.name.isdigit() and (d / "bin" / "initdb").is_file() and (d / "bin" / "pg_ctl").is_file():
                versions.append((int(d.name), d / "bin"))
    if versions:
        return max(versions)[1]
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).resolve().parent
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class PostgresServer:
    """A running server: where it listens and how to reach it."""

    bin_dir: Path
    root: Path
    host: str
    port: int
    socket_dir: Path
    user: str = SUPERUSER
    password: str = PASSWORD

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def connect(self, dbname: str = "postgres"):
        """A psycopg2 connection over TCP with the password, as Dagster connects."""
        import psycopg2

        return psycopg2.connect(host=self.host, port=self.port, user=self.user, password=self.password, dbname=dbname)

    def create_database(self, name: str) -> str:
        con = self.connect()
        try:
            con.autocommit = True
            with con.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')  # a name made by the fixture, not input
        finally:
            con.close()
        return name

    def drop_database(self, name: str) -> None:
        con = self.connect()
        try:
            con.autocommit = True
            with con.cursor() as cur:
                cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            con.close()


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", SERVER_USER, "--", *argv]


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(_as_server_user(argv), cwd=cwd, capture_output=True, text=True, check=False)


def _check_can_run() -> None:
    if os.geteuid() != 0:
        return
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise ServerUnavailable(
            f"PostgreSQL does not run as root and there is no {SERVER_USER!r} user to run it as; "
            f"{INSTALL_HINT}, which creates it"
        ) from None
    if shutil.which("runuser") is None:
        raise ServerUnavailable("runuser (util-linux) is needed to start PostgreSQL as the postgres user")


def _make_root() -> Path:
    # Not pytest's tmp_path: root's /tmp/pytest-of-root is 0700, closed to the server's user.
    root = Path(tempfile.mkdtemp(prefix="goldenset-pg-"))
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    return root


def start_server(bin_dir: Path, attempts: int = 3) -> PostgresServer:
    """initdb a fresh cluster in a new temporary folder and start it; the caller stops it."""
    _check_can_run()
    root = _make_root()
    try:
        pwfile = root / "pwfile"
        pwfile.write_text(PASSWORD + "\n", encoding="utf-8")
        if os.geteuid() == 0:
            entry = pwd.getpwnam(SERVER_USER)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        sock = root / "sock"
        _run(["mkdir", "-m", "0700", str(sock)], cwd=root).check_returncode()
        init = _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(root / "data"),
                "-U",
                SUPERUSER,
                "--pwfile",
                str(pwfile),
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            cwd=root,
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed ({init.returncode}):\n{init.stdout}\n{init.stderr}")
        log = root / "server.log"
        for _ in range(attempts):
            # A port found free can be taken before the server binds it; then try another.
            port = _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            started = _run(
                [
                    str(bin_dir / "pg_ctl"),
                    "-D",
                    str(root / "data"),
                    "-l",
                    str(log),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    "120",
                    "start",
                ],
                cwd=root,
            )
            if started.returncode == 0:
                return PostgresServer(bin_dir=bin_dir, root=root, host="127.0.0.1", port=port, socket_dir=sock)
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:] if log.exists() else ""
        raise RuntimeError(f"pg_ctl start failed {attempts} times:\n{started.stdout}\n{started.stderr}\n{tail}")
    except BaseException:
        _stop_and_remove(bin_dir, root)
        raise


def _stop_and_remove(bin_dir: Path, root: Path) -> None:
    if (root / "data" / "postmaster.pid").exists():
        _run([str(bin_dir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "-w", "stop"], cwd=root)
    shutil.rmtree(root, ignore_errors=True)


def stop_server(server: PostgresServer) -> None:
    """Stop the server at once (nothing in it is worth a clean shutdown) and remove its folder."""
    _stop_and_remove(server.bin_dir, server.root)


def _unavailable(reason: str):
    if running_under_ci():
        pytest.fail(f"PostgreSQL is required under CI: {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL server to start: {reason}")


@pytest.fixture(scope="session", name="postgres_server")
def postgres_server_fixture() -> Iterator[PostgresServer]:
    """A PostgreSQL server running for the whole session; stopped and removed at its end."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        _unavailable(f"no initdb/pg_ctl under {PG_LIB}/<version>/bin or on PATH; {INSTALL_HINT}")
    try:
        server = start_server(bin_dir)
    except ServerUnavailable as exc:
        _unavailable(str(exc))
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture(name="postgres_db")
def postgres_db_fixture(postgres_server: PostgresServer, request) -> Iterator[str]:
    """A fresh, empty database on the session's server, named after the test; dropped afterwards."""
    name = "t_" + re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40] + "_" + uuid.uuid4().hex[:8]
    postgres_server.create_database(name)
    try:
        yield name
    finally:
        postgres_server.drop_database(name)
