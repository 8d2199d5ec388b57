"""Two builds at once, a build while another process reads, `status` during a build.

DuckDB lets one process write a file, or several read it, never both. Whoever loses
must say so in one line ("database busy: held by PID n", exit 1) or, when told to
wait (GOLDENSET_LOCK_TIMEOUT, --wait), say it waits, then do its work; never a
traceback, never a damaged file, and the golden set that comes out is the one a
lone build makes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import dagster as dg
import pytest

from goldenset_dagster.assets import BUSY_RETRIES
from tests.reliability.harness import (
    HANG_SECONDS,
    NO_RETRY_WAIT,
    PUBLISHED,
    failpoint_env,
    finish,
    ok,
    paused,
    read_tables,
    run_here,
    wait_for,
)

pytestmark = pytest.mark.slow


def busy_line(pid: int) -> str:
    return f"Error: database busy: held by PID {pid}; try again when it finishes"


def assert_one_line(stderr: str, line: str) -> None:
    assert "Traceback" not in stderr
    assert stderr.strip() == line, stderr


def assert_published_like(world, tables_b) -> None:
    """The warehouse opens and publishes what a lone stage B build publishes (repeat builds aside)."""
    now = read_tables(world.db, PUBLISHED)
    for name in ("golden_set", "label_history", "label_changes", "relabel_queue"):
        assert now[name] == tables_b[name], f"{name} differs"
    builds = read_tables(world.db, {"b": "SELECT build_id, computation, labels_build_id FROM golden_builds"})["b"]
    assert builds[:2] == [(1, "full", 1), (2, "full", 2)]
    assert all(b[1:] == ("repeat", 2) for b in builds[2:]), builds


def test_a_build_and_every_reader_command_during_a_build_exit_1_with_database_busy_and_the_writers_pid(
    at_stage_b, tables_b
):
    marker = at_stage_b.root / "paused"
    writer = at_stage_b.start_build(**failpoint_env("ingest.after_batch:pause", marker))
    pid = paused(at_stage_b, writer, marker)

    db = ["--db", str(at_stage_b.db)]
    for args in (
        ["build", *at_stage_b.paths()],
        ["status", *db],
        ["status", "--json", *db],
        ["rejects", *db],
        ["export", "--out", str(at_stage_b.root / "out"), *db],
    ):
        proc = at_stage_b.run(*args)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert_one_line(proc.stderr, busy_line(pid))
        assert proc.stdout == ""

    marker.unlink()
    ok(finish(writer))
    assert_published_like(at_stage_b, tables_b)


def test_a_build_and_status_told_to_wait_say_whom_they_wait_for_then_succeed(at_stage_b, tables_b):
    marker = at_stage_b.root / "paused"
    writer = at_stage_b.start_build(**failpoint_env("build.before_commit:pause", marker))
    pid = paused(at_stage_b, writer, marker)

    waiting = f"waiting for PID {pid} to finish writing {at_stage_b.db} (up to {HANG_SECONDS:g} s)"
    second = at_stage_b.start_build(GOLDENSET_LOCK_TIMEOUT=str(HANG_SECONDS))
    status = at_stage_b.start("status", "--json", "--db", str(at_stage_b.db), "--wait", str(HANG_SECONDS))
    for proc in (second, status):
        wait_for(lambda proc=proc: waiting in proc.stderr(), "a waiting message", proc=proc)

    marker.unlink()
    ok(finish(writer))
    done = ok(finish(second))
    assert done.stderr.splitlines()[0] == waiting
    assert "Traceback" not in done.stderr
    shown = ok(finish(status))
    assert shown.stderr.splitlines() == [waiting]
    # It got in after the writer let go: whichever build was current then, whole.
    st = json.loads(shown.stdout)
    assert st["build_id"] in (2, 3) and st["counts"]["n_queries"] == len({r[0] for r in tables_b["golden_set"]})
    assert_published_like(at_stage_b, tables_b)


@pytest.mark.parametrize("wait", ["0", str(HANG_SECONDS)], ids=["fail-fast", "wait"])
def test_two_builds_started_together_publish_one_golden_set_and_the_loser_says_busy(at_stage_b, tables_b, wait):
    first = at_stage_b.start_build(GOLDENSET_LOCK_TIMEOUT=wait)
    second = at_stage_b.start_build(GOLDENSET_LOCK_TIMEOUT=wait)
    results = {first.pid: finish(first), second.pid: finish(second)}

    pids = list(results)
    codes = [r.returncode for r in results.values()]
    assert 0 in codes, [r.stderr for r in results.values()]
    for pid, r in results.items():
        assert "Traceback" not in r.stderr
        if r.returncode:
            other = pids[1 - pids.index(pid)]
            assert_one_line(r.stderr, busy_line(other))
    if wait != "0":
        assert codes == [0, 0]
    assert_published_like(at_stage_b, tables_b)
    ok(run_here(at_stage_b, "status", "--db", str(at_stage_b.db)))


HOLDER = """
import sys, time
from pathlib import Path
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
Path(sys.argv[2]).write_text("open")
while Path(sys.argv[2]).exists():
    time.sleep(0.05)
con.close()
"""


def test_a_build_while_another_process_reads_fails_busy_or_waits_for_the_reader_then_builds(at_stage_b, tables_b):
    flag = at_stage_b.root / "reading"
    reader = subprocess.Popen([sys.executable, "-c", HOLDER, str(at_stage_b.db), str(flag)], env=at_stage_b.env())
    try:
        wait_for(flag.exists, "the reader to open the warehouse", proc=reader)
        refused = at_stage_b.build()
        assert refused.returncode == 1
        assert_one_line(refused.stderr, busy_line(reader.pid))

        waiting = at_stage_b.start_build("--wait", str(HANG_SECONDS))
        wait_for(lambda: f"waiting for PID {reader.pid}" in waiting.stderr(), "a waiting message", proc=waiting)
        flag.unlink()  # the reader closes its connection
        done = ok(finish(waiting))
        assert "Traceback" not in done.stderr
    finally:
        flag.unlink(missing_ok=True)
        reader.wait(timeout=HANG_SECONDS)
    assert_published_like(at_stage_b, tables_b)


def test_a_build_that_meets_a_reader_between_its_steps_retries_then_says_busy_in_one_line(at_stage_b, tables_a):
    """The build gets past its first look at the warehouse, then a reader takes the file between
    two of its steps and keeps it: the step retries (Dagster), then the build gives up with the
    reader's PID, and the warehouse still publishes build 1."""
    marker, flag = at_stage_b.root / "paused", at_stage_b.root / "reading"
    # The retries without the program's 15 s between them: the reader keeps the file until the
    # writer has ended, so waiting longer could not change how the retries end.
    writer = at_stage_b.start_build(patches=NO_RETRY_WAIT, **failpoint_env("ingest.after_batch:pause", marker))
    paused(at_stage_b, writer, marker)
    # The reader waits for the file to be free and takes it the moment the ingest step lets go.
    grab = HOLDER.replace(
        "con = duckdb.connect(sys.argv[1], read_only=True)",
        "while True:\n"
        "    try:\n"
        "        con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "        break\n"
        "    except duckdb.Error:\n"
        "        time.sleep(0.001)",
    )
    reader = subprocess.Popen([sys.executable, "-c", grab, str(at_stage_b.db), str(flag)], env=at_stage_b.env())
    try:
        marker.unlink()
        wait_for(flag.exists, "the reader to take the warehouse", proc=reader)
        refused = finish(writer)
        assert refused.returncode == 1
        assert_one_line(refused.stderr, busy_line(reader.pid))
    finally:
        flag.unlink(missing_ok=True)
        reader.wait(timeout=HANG_SECONDS)
    assert read_tables(at_stage_b.db, PUBLISHED) == {k: tables_a[k] for k in PUBLISHED}
    # The step that met the reader was retried as many times as the program allows, then failed.
    with dg.DagsterInstance.from_config(str(at_stage_b.dagster_home)) as instance:
        [run] = instance.get_runs(limit=1)
        events = [e.dagster_event for e in instance.all_logs(run.run_id) if e.dagster_event]
    retried = Counter(e.step_key for e in events if e.event_type_value == "STEP_UP_FOR_RETRY")
    assert retried and set(retried.values()) == {BUSY_RETRIES}, retried


def test_goldenset_sql_during_a_build_waits_for_it_and_never_blocks_it(at_stage_b, tables_b):
    marker = at_stage_b.root / "paused"
    writer = at_stage_b.start_build(**failpoint_env("ingest.after_batch:pause", marker))
    pid = paused(at_stage_b, writer, marker)
    db = ["--db", str(at_stage_b.db)]

    refused = at_stage_b.run("sql", "SELECT count(*) FROM golden_builds", *db)  # GOLDENSET_LOCK_TIMEOUT=0
    assert refused.returncode == 1 and refused.stdout == ""
    assert len(refused.stderr.splitlines()) == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith(f"Error: database busy: a build is running (PID {pid}, since ")

    query = ["sql", "SELECT max(build_id) AS latest FROM golden_builds", "--format", "csv", *db]
    waiting = at_stage_b.start(*query, "--wait", str(HANG_SECONDS))
    wait_for(lambda: f"waiting for the build (PID {pid})" in waiting.stderr(), "a waiting message", proc=waiting)
    marker.unlink()
    ok(finish(writer))  # the build went on to publish, the waiting query in no way in its path
    done = ok(finish(waiting))
    assert done.stdout == "latest\n2\n"
    assert_published_like(at_stage_b, tables_b)
