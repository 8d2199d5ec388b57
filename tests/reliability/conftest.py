"""Worlds shared by the reliability tests: one clean build of stage A, and what stage B publishes.

Building is the slow part (a real `goldenset build` subprocess, Dagster included), so
each world is built once per test run, whichever xdist worker asks first
(tests.helpers.made_once_per_run), and every test that needs it works on a copy.
"""

from __future__ import annotations

import pytest

from tests.helpers import made_once_per_run
from tests.reliability.harness import BATCH, copy_world, make_world, ok, read_tables, write_stage_a, write_stage_b


@pytest.fixture(scope="session")
def built_a(tmp_path_factory):
    """A world after one clean build of stage A (two log days, corpus v1). Copy it; never change it."""

    def make(folder):
        world = make_world(folder / "world")
        write_stage_a(world)
        ok(world.build(batch_lines=BATCH))

    return make_world(made_once_per_run(tmp_path_factory, "stage-a", make) / "world")


@pytest.fixture(scope="session")
def tables_a(built_a):
    """What stage A's build published (and quarantined)."""
    return read_tables(built_a.db)


@pytest.fixture(scope="session")
def built_b(built_a, tmp_path_factory):
    """A copy of stage A's world moved to stage B and built again, never killed (builds 1 and 2).
    Read it; never change it."""

    def make(folder):
        world = copy_world(built_a, folder / "world")
        write_stage_b(world)
        ok(world.build(batch_lines=BATCH))

    return make_world(made_once_per_run(tmp_path_factory, "reference-b", make) / "world")


@pytest.fixture(scope="session")
def tables_b(built_b):
    """What a build of stage B, never killed, publishes after stage A's build."""
    return read_tables(built_b.db)


@pytest.fixture
def at_stage_b(built_a, tmp_path):
    """A copy of the built stage A world whose inputs have moved to stage B (not built yet)."""
    world = copy_world(built_a, tmp_path / "world")
    write_stage_b(world)
    return world
