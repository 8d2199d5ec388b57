"""Shared fixtures: each names the state it hands over, and each test gets its own copy."""

from __future__ import annotations

from pathlib import Path

import os

import pytest
from hypothesis import settings

from goldenset.warehouse import connect

# CI runs the same examples every time (a red CI then always means the same input); on a
# developer's machine Hypothesis keeps exploring new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def warehouse(tmp_path):
    """A fresh warehouse (schema created, nothing ingested) in its own DuckDB file."""
    con = connect(tmp_path / "g.duckdb")
    yield con
    con.close()


@pytest.fixture
def log_root(tmp_path) -> Path:
    """An empty LOGS folder; tests add dt=YYYY-MM-DD partitions to it."""
    root = tmp_path / "logs"
    root.mkdir()
    return root
