"""Fixtures for the benchmark (the world they build is in bench_world.py).

Every test gets its own DuckDB file under tmp_path; nothing reads /work/shared.
The embedding model is the session-wide `embedder` of tests/conftest.py.
"""

from __future__ import annotations

import pytest
from bench_world import Golden, build_golden


@pytest.fixture
def golden(tmp_path) -> Golden:
    """A fresh golden build (built now) over the 16-document corpus and 6 queries."""
    return build_golden(tmp_path / "g")
