"""A warehouse file that is damaged (a failed disk, a half-copied backup) or is no DuckDB file at all.

Nothing in goldenset damages the file (the crash and concurrency tests hold that); when
one is damaged all the same, every command says so in one line, exits 1 and leaves the
file as it found it, so that it can be restored or repaired.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.reliability.harness import copy_world

pytestmark = pytest.mark.slow


def _commands(world) -> list[list[str]]:
    db = ["--db", str(world.db)]
    return [
        ["status", *db],
        ["rejects", *db],
        ["export", "--out", str(world.root / "out"), *db],
        ["build", *world.paths()],
    ]


NOT_DUCKDB = {
    "text": lambda data: b"hello, I am not a database\n",
    "random-bytes": lambda data: os.urandom(len(data)),
    "cut-after-its-header": lambda data: data[: 3 * 4096],
}


@pytest.mark.parametrize("spoil", list(NOT_DUCKDB), ids=list(NOT_DUCKDB))
def test_a_file_that_is_not_a_warehouse_is_refused_in_one_line_by_every_command_and_left_as_it_is(
    built_a, tmp_path, spoil
):
    world = copy_world(built_a, tmp_path / "world")
    damaged = NOT_DUCKDB[spoil](world.db.read_bytes())
    world.db.write_bytes(damaged)
    for args in _commands(world):
        proc = world.run(*args)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert proc.stderr.startswith(f"Error: warehouse {world.db} cannot be opened: "), (args, proc.stderr)
        assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert world.db.read_bytes() == damaged, args


def _damaged_inside(world) -> bytes:
    """The warehouse with the second half of its blocks zeroed: it opens, and fails when read."""
    data = world.db.read_bytes()
    half = len(data) // 2
    damaged = data[:half] + b"\0" * (len(data) - half)
    world.db.write_bytes(damaged)
    return damaged


def test_read_commands_on_a_warehouse_damaged_inside_say_it_is_damaged_in_one_line(built_a, tmp_path):
    world = copy_world(built_a, tmp_path / "world")
    damaged = _damaged_inside(world)
    for args in _commands(world)[:3]:
        proc = world.run(*args)
        assert world.db.read_bytes() == damaged, args
        assert proc.returncode == 1, (args, proc.stderr)
        assert len(proc.stderr.splitlines()) == 1 and "bug in goldenset" not in proc.stderr, (args, proc.stderr)
        assert str(world.db) in proc.stderr and "damaged" in proc.stderr, (args, proc.stderr)


def test_a_build_on_a_warehouse_damaged_inside_fails_in_one_line_instead_of_hanging(built_a, tmp_path):
    world = copy_world(built_a, tmp_path / "world")
    _damaged_inside(world)
    try:
        proc = world.build(timeout=25)  # it fails in seconds once fixed
    except subprocess.TimeoutExpired:
        pytest.fail("goldenset build hung on a damaged warehouse")
    assert proc.returncode == 1
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(world.db) in proc.stderr, proc.stderr
