"""`goldenset` processes for the tests, forked from an interpreter that has already imported
Dagster: a real process running the real program, without paying Python's imports each time.

Why: the reliability tests start about a hundred `goldenset build` processes (killed, raced,
healed), and each spent about 2 of its 5 CPU seconds importing Dagster, SQLAlchemy, alembic,
typer, rich and pydantic before doing anything; on CI's two cores that was a sixth of the suite.
The same idea as multiprocessing's `forkserver` start method: one server process per pytest
worker imports those libraries once, then forks a child per command.

What the child is: its own process (its own pid, killed by a signal like any other, its exit
status reported as `subprocess` reports it: the code, or minus the signal), with the command's
environment, working directory, argv and standard streams, running `python -m goldenset` through
`runpy` and ending through the interpreter's own exit (atexit handlers, flushed streams). What
differs from a fresh interpreter: modules imported before the fork are not imported again (none
of them is goldenset's, and none reads the environment at import), and the hash seed is the
server's. Libraries that start native threads when imported (numpy, pyarrow, polars) are
imported by the child, never by the server, since a fork keeps only the forking thread: the
server refuses to serve if it has more than one thread after preloading.

Tests that are about starting the program (the console script, `python -m goldenset`, the
benchmarks, `dagster dev`) still start a fresh interpreter; only tests/reliability/harness.py's
worlds use this.

The protocol, over a Unix socket: a request is one JSON object (argv, env, cwd, patches) sent
with the three file descriptors of the child's stdin, stdout and stderr; the server answers
with the child's pid on a line, then, when the child ends, its exit status on a line.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import importlib
import io
import json
import os
import select
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# Imported by the server before it forks: the pure-Python bulk of `goldenset build`'s imports.
PRELOAD = (
    "dagster",
    "dagster._core.storage.event_log.sqlite",
    "dagster._core.storage.runs.sqlite",
    "dagster._core.storage.schedules.sqlite",
    "alembic.command",
    "sqlalchemy",
    "typer",
    "click",
    "rich",
    "pydantic",
    "yaml",
    "duckdb",
)

_MAX_REQUEST = 1 << 20


def _send_fds(sock: socket.socket, data: bytes, fds: list[int]) -> None:
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def _recv_request(conn: socket.socket) -> tuple[dict, list[int]]:
    fds = array.array("i")
    msg, ancdata, _flags, _addr = conn.recvmsg(_MAX_REQUEST, socket.CMSG_LEN(3 * fds.itemsize))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    return json.loads(msg), list(fds)


# ---------------------------------------------------------------------------- the server


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def serve(path: str) -> tuple[dict, list[int]]:
    """Serve requests until stdin closes; return (request, fds) only in a forked child."""
    for module in PRELOAD:
        importlib.import_module(module)
    if _thread_count() != 1:
        sys.exit(f"forkserver: {_thread_count()} threads after preloading; a fork would lose them")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    selector.register(0, selectors.EVENT_READ)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for key, _ in selector.select():
            if key.fileobj == 0:
                if not os.read(0, 4096):  # the pytest worker is gone
                    os._exit(0)
            elif key.fileobj is listener:
                conn, _ = listener.accept()
                request, fds = _recv_request(conn)
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    selector.close()
                    for fd in (listener, conn, *children.values()):
                        fd.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    return request, fds
                for fd in fds:
                    os.close(fd)
                conn.sendall(f"{pid}\n".encode())
                children[pid] = conn
            else:
                with contextlib.suppress(BlockingIOError):  # a SIGCHLD woke the select: reap below
                    os.read(wake_r, 4096)
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = children.pop(pid)
            with contextlib.suppress(OSError):  # the test may have stopped listening
                conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            conn.close()


def become_the_command(request: dict, fds: list[int]) -> None:
    """In the forked child: take the request's streams, environment, directory and argv, then run
    `python -m goldenset` (which ends the process through SystemExit, like a fresh one)."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = os.getcwd()  # what `python -m` puts first
    for target, value in request.get("patches", {}).items():
        module_name, _, name = target.rpartition(".")
        module = importlib.import_module(module_name)
        if not hasattr(module, name):
            sys.exit(f"no constant {target} to set")
        setattr(module, name, value)
    sys.argv = ["goldenset", *request["args"]]
    import runpy

    runpy.run_module("goldenset", run_name="__main__", alter_sys=True)


# ---------------------------------------------------------------------------- the client


class ForkedProcess:
    """What subprocess.Popen offers the tests, for a child of the fork server."""

    def __init__(self, args: list[str], sock: socket.socket, stdout=None):
        self.args = args
        self._sock = sock
        self._buffer = b""
        pid = self._line(None)
        if pid is None:
            raise RuntimeError("the fork server did not start the command")
        self.pid = int(pid)
        self.returncode: int | None = None
        self.stdout = stdout

    def _line(self, timeout: float | None) -> str | None:
        """The server's next line; None if none came within `timeout` (None: wait for it)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._sock], [], [], left)[0]:
                return None
            chunk = self._sock.recv(4096)
            if not chunk:
                raise RuntimeError("the fork server went away before reporting its child's exit")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("ascii")

    def poll(self) -> int | None:
        if self.returncode is None:
            self._ended(self._line(0))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._ended(self._line(timeout))
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def _ended(self, line: str | None) -> None:
        if line is not None:
            self.returncode = int(line)
            self._sock.close()

    def communicate(self, timeout: float | None = None) -> tuple[str | None, None]:
        out = None
        if self.stdout is not None:
            out = _read_all(self.stdout, timeout, self)
            self.stdout.close()
            self.stdout = None
        self.wait(timeout)
        return out, None

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def _read_all(stream, timeout: float | None, proc: ForkedProcess) -> str:
    if timeout is None:
        return stream.read()
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(stream.read()), daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        raise subprocess.TimeoutExpired(proc.args, timeout)
    return result[0]


class ForkServer:
    """The server of this pytest worker, started on first use and stopped when the worker ends."""

    _instance: ForkServer | None = None

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="goldenset-forkserver-")
        self.path = os.path.join(self._dir, "socket")
        # The server's own environment: none of a test's settings (each request carries its own).
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GOLDENSET_", "DAGSTER_"))}
        self._proc = subprocess.Popen(
            [sys.executable, __file__, self.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=self._dir,
        )
        assert self._proc.stdout is not None
        ready = self._proc.stdout.readline()
        if ready != "ready\n":
            raise RuntimeError(f"the fork server did not start: {ready!r} (exit {self._proc.wait()})")
        atexit.register(self.stop)

    @classmethod
    def get(cls) -> ForkServer:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def stop(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=30)
        Path(self.path).unlink(missing_ok=True)
        os.rmdir(self._dir)

    def spawn(
        self,
        args: list[str],
        env: dict[str, str],
        cwd: Path,
        patches: dict | None = None,
        stdout: int | None = None,
        stderr: int | None = None,
    ) -> ForkedProcess:
        """Start `goldenset ARGS`. `stdout`/`stderr`: file descriptors to write to (the caller
        keeps its own); None for a pipe whose read end becomes the process's `.stdout` (stdout
        only) or /dev/null (stderr)."""
        owned: list[int] = []
        read_end = None
        if stdout is None:
            read_end, stdout = os.pipe()
            owned.append(stdout)
        if stderr is None:
            stderr = os.open(os.devnull, os.O_WRONLY)
            owned.append(stderr)
        stdin = os.open(os.devnull, os.O_RDONLY)
        owned.append(stdin)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
            request = {"args": args, "env": env, "cwd": str(cwd), "patches": patches or {}}
            _send_fds(sock, json.dumps(request).encode(), [stdin, stdout, stderr])
        finally:
            for fd in owned:
                os.close(fd)
        out = os.fdopen(read_end, "r", encoding="utf-8") if read_end is not None else None
        return ForkedProcess(["goldenset", *args], sock, out)

    def run(
        self, args: list[str], env: dict[str, str], cwd: Path, patches: dict | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess:
        """Run `goldenset ARGS` to the end, its output captured (as subprocess.run(capture_output=True,
        text=True)); past `timeout` it is killed and TimeoutExpired raised."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = self.spawn(args, env, cwd, patches, stdout=out.fileno(), stderr=err.fileno())
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise
            out.seek(0)
            err.seek(0)
            # Decoded as subprocess.run(text=True) decodes: UTF-8 here, universal newlines.
            return subprocess.CompletedProcess(
                ["goldenset", *args],
                proc.returncode,
                io.TextIOWrapper(out, encoding="utf-8").read(),
                io.TextIOWrapper(err, encoding="utf-8").read(),
            )


if __name__ == "__main__":
    child_request, child_fds = serve(sys.argv[1])
    become_the_command(child_request, child_fds)
