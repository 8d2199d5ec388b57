"""Shared fixtures: each names the state it hands over, and each test gets its own copy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from goldenset.settings import VARIABLES
from goldenset.warehouse import connect

# CI runs the same examples every time (a red CI then always means the same input); on a
# developer's machine Hypothesis keeps exploring new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


# Every setting's variable but the home, from the one table: none may leak in from the shell.
_SETTING_VARIABLES = tuple(v.env for v in VARIABLES if v.name != "home")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own GOLDENSET_HOME: nothing a test runs writes into the checkout's var/."""
    home = tmp_path / "goldenset-home"
    monkeypatch.setenv("GOLDENSET_HOME", str(home))
    for name in _SETTING_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # Commands that find the database busy fail fast in tests unless a test sets a wait.
    monkeypatch.setenv("GOLDENSET_LOCK_TIMEOUT", "0")
    return home


@pytest.fixture(autouse=True)
def no_dagster_state_between_tests():
    """Each test starts without a Dagster instance's state storage left current by an earlier one.

    A disposed test instance can leave its defs-state storage in Dagster's context variable;
    the next Definitions() load then dereferences the dead instance. Dagster's own context
    manager resets the variable around every test.
    """
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    with set_defs_state_storage(None):
        yield


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
