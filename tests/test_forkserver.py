"""The fork server (tests/forkserver.py) gives the reliability tests what a fresh `python -m
goldenset` process would: the same exit codes and output, its own pid and signals, the
request's environment, directory and constants, and nothing left from another command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.forkserver import ForkServer
from tests.helpers import always, doc, serve, verdict, write_corpus, write_log
from tests.reliability.harness import wait_for

pytestmark = pytest.mark.slow


def fresh(args, env, cwd, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "goldenset", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def env(tmp_path):
    return {**os.environ, "GOLDENSET_HOME": str(tmp_path / "home"), "GOLDENSET_LOCK_TIMEOUT": "0"}


def test_a_forked_command_exits_and_prints_as_a_fresh_one(tmp_path, env):
    write_log(
        tmp_path / "logs",
        "2026-11-01",
        "part-0001.jsonl",
        [
            serve("s1", "2026-11-01T08:00:00Z", "Fix the bug", [always("d1")]),
            verdict("s1", "d1", "helped", "2026-11-01T09:00:00Z"),
        ],
    )
    write_corpus(tmp_path / "corpus.jsonl", [doc("d1")])
    server = ForkServer.get()
    status = ["status", "--db", str(tmp_path / "missing.duckdb")]
    forked, direct = server.run(status, env, tmp_path), fresh(status, env, tmp_path)
    assert forked.returncode == direct.returncode != 0
    assert (forked.stdout, forked.stderr) == (direct.stdout, direct.stderr)
    assert direct.stderr.strip()

    build = ["build", "--logs", "logs", "--corpus", "corpus.jsonl", "--db", "g.duckdb"]
    built = server.run(build, env, tmp_path)
    assert built.returncode == 0, built.stderr
    forked, direct = (
        server.run(["status", "--db", "g.duckdb"], env, tmp_path),
        fresh(["status", "--db", "g.duckdb"], env, tmp_path),
    )
    assert forked.returncode == direct.returncode == 0
    assert forked.stdout == direct.stdout and "1" in forked.stdout


def test_each_command_gets_its_own_environment_directory_and_constants(tmp_path, env):
    server = ForkServer.get()
    (tmp_path / "a").mkdir()
    # `bench` with an unknown subcommand is a usage error, exit 2, whatever the settings.
    wrong = server.run(["no-such-command"], env, tmp_path / "a")
    assert wrong.returncode == direct_code(["no-such-command"], env, tmp_path / "a") == 2
    patched = server.run(["--help"], env, tmp_path, patches={"goldenset.ingest.NO_SUCH_CONSTANT": 1})
    assert patched.returncode == 1 and "no constant goldenset.ingest.NO_SUCH_CONSTANT" in patched.stderr
    # A variable set for one command is not seen by the next.
    seen = server.run(
        ["status", "--db", "x.duckdb"], {**env, "GOLDENSET_DB": str(tmp_path / "elsewhere.duckdb")}, tmp_path
    )
    plain = server.run(["status", "--db", "x.duckdb"], env, tmp_path)
    assert seen.returncode == plain.returncode


def direct_code(args, env, cwd) -> int:
    return fresh(args, env, cwd).returncode


def test_a_started_command_has_its_own_pid_and_dies_of_a_signal(tmp_path, env):
    write_log(
        tmp_path / "logs",
        "2026-11-01",
        "part-0001.jsonl",
        [serve("s1", "2026-11-01T08:00:00Z", "Fix it", [always("d1")])],
    )
    write_corpus(tmp_path / "corpus.jsonl", [doc("d1")])
    server = ForkServer.get()
    paused = tmp_path / "paused"
    env = {**env, "GOLDENSET_FAILPOINT": "build.before_commit:pause", "GOLDENSET_FAILPOINT_FILE": str(paused)}
    proc = server.spawn(["build", "--logs", "logs", "--corpus", "corpus.jsonl", "--db", "g.duckdb"], env, tmp_path)
    wait_for(lambda: paused.exists() and paused.read_text().strip(), "the build to pause", proc=proc)
    # The pid the failpoint wrote is the one the test holds: the command's own process.
    assert int(paused.read_text()) == proc.pid not in (os.getpid(), os.getppid())
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert proc.poll() == -signal.SIGKILL
    assert proc.communicate() == ("", None)
