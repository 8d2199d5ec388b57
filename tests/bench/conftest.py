"""Fixtures for the benchmark (the world they build is in bench_world.py).

Every test gets its own DuckDB file under tmp_path; nothing reads /work/shared.
The embedding model is the session-wide `embedder` of tests/conftest.py.
"""

from __future__ import annotations

import json

import pytest
from bench_world import World, build_golden, copy_golden

from tests.helpers import isolated_settings


@pytest.fixture(scope="session")
def goldens(tmp_path_factory):
    """`goldens(tmp, **kw)`: what `build_golden(tmp, **kw)` makes (built now), at the cost of a copy.

    Each distinct set of keywords (queries, superseded; never built_at: a build of a given
    age is made by build_golden itself) is built once per session (per xdist worker) into a
    template, with the settings a test gets (tests.helpers), and copied per test. "Now" is
    then the template's build time, minutes at most before the test: no check of the
    benchmark reads a build's age finer than days.
    """
    templates: dict[str, World] = {}

    def make(tmp, **kw) -> World:
        assert "built_at" not in kw, "a build of a given age: call build_golden"
        key = json.dumps(kw, sort_keys=True)
        if key not in templates:
            base = tmp_path_factory.mktemp("golden-template")
            with isolated_settings(base / "home"):
                templates[key] = build_golden(base / "g", **kw)
        return copy_golden(templates[key], tmp)

    return make


@pytest.fixture
def golden(tmp_path, goldens) -> World:
    """A golden build (built now) over the 16-document corpus and 6 queries, this test's own copy."""
    return goldens(tmp_path / "g")
