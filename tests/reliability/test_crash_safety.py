"""`kill -9` of a real `goldenset build` at chosen moments: nothing half-written, and the next build heals.

A failpoint (goldenset.failpoints) stops the build exactly where a test wants it:
in the middle of an ingest transaction, after one ingest batch has committed and
before the next, after the labels are written but before their history, and just
before the build's COMMIT. After the kill the warehouse must open and still hold
the previous build; the next build, in the same GOLDENSET_HOME with its Dagster
instance as the kill left it (a STARTED run of a dead process, holding the
`duckdb` pool slot), must give what a build that was never killed gives.

Every world here starts as a copy of one built world (stage A: two log days and
corpus v1, build 1), then moves to stage B (a log file grows, a day arrives, the
corpus changes) and builds again; the reference is the same stage B build, not
killed. Builds ingest each changed file in a batch of its own (see
harness.CliWorld.run, `batch_lines`), so that a kill can fall between two committed batches.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from tests.reliability.harness import (
    BATCH,
    HANG_SECONDS,
    PUBLISHED,
    assert_same_tables,
    failpoint_env,
    finish,
    killed,
    make_world,
    ok,
    paused,
    read_tables,
    run_here,
    start_reader,
    write_stage_a,
)

# Each test kills a build process at a failpoint and rebuilds: tens of seconds each.
pytestmark = pytest.mark.slow

# Each moment, by the failpoint that stops the build there. The corpus snapshot comes first
# (corpus v2 is new content); then day 1's grown file is the first ingest batch (its old
# rows are replaced), day 3's new file the second.
MOMENTS = [
    pytest.param("snapshot.mid_transaction", id="corpus-snapshot-mid-transaction"),
    pytest.param("ingest.mid_transaction", id="ingest-first-batch-mid-transaction"),
    pytest.param("ingest.mid_transaction@2", id="ingest-second-batch-mid-transaction"),
    pytest.param("ingest.after_batch", id="ingest-between-two-committed-batches"),
    # build.before_history (between labels and history) is test_a_reader_polling_during_a_build_
    # killed_from_outside_sees_only_whole_builds: the same kill, from outside, with these checks.
    pytest.param("build.before_commit", id="build-just-before-commit"),
]


@pytest.mark.parametrize("point", MOMENTS)
def test_a_build_killed_at_any_moment_leaves_the_previous_build_and_the_next_build_equals_a_clean_one(
    at_stage_b, tables_a, tables_b, point
):
    proc = at_stage_b.build(batch_lines=BATCH, **failpoint_env(point))
    assert killed(proc), f"the failpoint {point} was not reached: exit {proc.returncode}\n{proc.stderr}"

    # The file opens, and what it publishes is build 1, whole; `status` says so.
    assert_same_tables(read_tables(at_stage_b.db, PUBLISHED), {k: tables_a[k] for k in PUBLISHED})
    status = json.loads(ok(run_here(at_stage_b, "status", "--json", "--db", str(at_stage_b.db))).stdout)
    assert status["build_id"] == 1

    ok(at_stage_b.build(batch_lines=BATCH))
    assert_same_tables(read_tables(at_stage_b.db), tables_b)


def test_a_build_killed_after_its_commit_and_before_its_checkpoint_is_published_whole(at_stage_b, tables_b):
    # The build commits to the WAL and checkpoints after dropping its staging tables
    # (warehouse.checkpoint_after): killed between the two, the WAL alone holds build 2.
    proc = at_stage_b.build(batch_lines=BATCH, **failpoint_env("build.after_commit"))
    assert killed(proc), f"the failpoint was not reached: exit {proc.returncode}\n{proc.stderr}"
    assert at_stage_b.db.with_name(at_stage_b.db.name + ".wal").stat().st_size > 0

    assert_same_tables(read_tables(at_stage_b.db), tables_b)
    status = json.loads(ok(run_here(at_stage_b, "status", "--json", "--db", str(at_stage_b.db))).stdout)
    assert status["build_id"] == 2
    # The next build finds nothing new: a repeat of build 2's labels.
    ok(at_stage_b.build(batch_lines=BATCH))
    assert read_tables(
        at_stage_b.db,
        {"latest": "SELECT computation, labels_build_id FROM golden_builds ORDER BY build_id DESC LIMIT 1"},
    ) == {"latest": [("repeat", 2)]}
    assert_same_tables(
        read_tables(at_stage_b.db, {"golden_set": PUBLISHED["golden_set"]}), {"golden_set": tables_b["golden_set"]}
    )


def test_a_first_build_killed_mid_ingest_leaves_no_build_and_the_next_build_equals_a_clean_one(tmp_path, tables_a):
    world = make_world(tmp_path / "world")
    write_stage_a(world)
    assert killed(world.build(batch_lines=BATCH, **failpoint_env("ingest.mid_transaction@2")))

    assert read_tables(
        world.db, {"builds": "SELECT count(*) FROM golden_builds", "labels": "SELECT count(*) FROM golden_set"}
    ) == {"builds": [(0,)], "labels": [(0,)]}
    ok(world.build(batch_lines=BATCH))
    assert_same_tables(read_tables(world.db), tables_a)


def test_a_reader_polling_during_a_build_killed_from_outside_sees_only_whole_builds(at_stage_b, tables_a, tables_b):
    """A reader process polls the warehouse read-only before, during and after a build paused
    between labels and history and then killed with SIGKILL from outside."""
    marker = at_stage_b.root / "paused"
    reader = start_reader(at_stage_b)
    try:
        reader.wait_for_looks(3)
        # The writer waits for the reader's read lock rather than failing on it.
        writer = at_stage_b.start_build(
            batch_lines=BATCH,
            GOLDENSET_LOCK_TIMEOUT=str(HANG_SECONDS),
            **failpoint_env("build.before_history:pause", marker),
        )
        pid = paused(at_stage_b, writer, marker)
        assert pid == writer.pid
        # While the writer holds its open transaction, a reader gets DuckDB's lock, not rows.
        reader.wait_for_looks(5)
        during = len(reader.looks())
        os.kill(pid, signal.SIGKILL)
        assert killed(finish(writer))
        reader.wait_for_looks(5, where=lambda look: not look["locked"])
    finally:
        looks = reader.stop()

    # The file opens, and what it publishes is build 1, whole; `status` says so.
    assert_same_tables(read_tables(at_stage_b.db, PUBLISHED), {k: tables_a[k] for k in PUBLISHED})
    status = json.loads(ok(run_here(at_stage_b, "status", "--json", "--db", str(at_stage_b.db))).stdout)
    assert status["build_id"] == 1

    published_a = len(tables_a["golden_set"])
    for look in looks:
        if look.get("error") and not look["locked"]:
            pytest.fail(f"the reader could not open the warehouse: {look['error']}")
        if not look["locked"]:
            assert look["builds"] == [1, 1] and look["funnel_build"] == [1], look
            assert look["labels"] == look["expected_labels"] == [published_a], look
            assert look["history_open"] == look["history_matches"] == [published_a], look
    paused_looks = looks[during - 5 : during]
    assert len(paused_looks) == 5, looks  # a short slice would make the next line vacuous
    assert all(look["locked"] for look in paused_looks), paused_looks

    ok(at_stage_b.build(batch_lines=BATCH))
    assert_same_tables(read_tables(at_stage_b.db), tables_b)


def test_a_reader_polling_across_a_paused_build_that_resumes_sees_the_old_build_then_the_new_one_whole(
    at_stage_b, tables_a, tables_b
):
    marker = at_stage_b.root / "paused"
    reader = start_reader(at_stage_b)
    try:
        reader.wait_for_looks(3)
        writer = at_stage_b.start_build(
            batch_lines=BATCH,
            GOLDENSET_LOCK_TIMEOUT=str(HANG_SECONDS),
            **failpoint_env("build.before_commit:pause", marker),
        )
        paused(at_stage_b, writer, marker)
        reader.wait_for_looks(5)
        marker.unlink()  # let it commit
        ok(finish(writer))
        reader.wait_for_looks(3, where=lambda look: not look["locked"])
    finally:
        looks = reader.stop()

    sizes = {1: len(tables_a["golden_set"]), 2: len(tables_b["golden_set"])}
    seen = []
    for look in looks:
        if look["locked"]:
            continue
        build = look["builds"][1]
        assert look["builds"][0] == build and look["funnel_build"] == [build], look
        assert look["labels"] == look["expected_labels"] == [sizes[build]], look
        assert look["history_open"] == look["history_matches"] == [sizes[build]], look
        seen.append(build)
    assert seen == sorted(seen) and seen[0] == 1 and seen[-1] == 2, seen
    assert_same_tables(read_tables(at_stage_b.db), tables_b)
