"""Fixtures of the labelling tests: pool_rankers.py's world copied from a template."""

from __future__ import annotations

import pytest
from pool_rankers import World, build_world, copy_world

from tests.helpers import isolated_settings


@pytest.fixture(scope="session")
def pool_worlds(tmp_path_factory):
    """`pool_worlds(tmp, labels=True)`: what `build_world(tmp, labels=labels)` makes, at the cost of a copy.

    Each kind is built once per session (per xdist worker) into a template under
    tmp_path_factory, with the settings a test gets (tests.helpers), and copied per test;
    a test changes only its own copy.
    """
    templates: dict[bool, World] = {}

    def make(tmp, labels: bool = True) -> World:
        if labels not in templates:
            base = tmp_path_factory.mktemp("pool-world-template")
            with isolated_settings(base / "home"):
                templates[labels] = build_world(base / "w", labels=labels)
        return copy_world(templates[labels], tmp)

    return make
