"""Staged ingestion under kill -9: a staging process or a load killed midway loses nothing committed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from goldenset.staging import load_staged, stage_partition
from goldenset.warehouse import connect
from tests.helpers import assert_same_log_tables, ingest_direct, ingest_staged, write_day

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _stage_in_child(logs: Path, dt: str, staging: Path, failpoint: str) -> int:
    code = (
        "import sys; from pathlib import Path; from goldenset.staging import stage_partition; "
        "stage_partition(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))"
    )
    env = {**os.environ, "GOLDENSET_FAILPOINT": failpoint}
    return subprocess.run([sys.executable, "-c", code, str(logs), dt, str(staging)], env=env, cwd=ROOT).returncode


def test_a_staging_process_killed_before_the_switch_leaves_the_day_as_it_was(tmp_path):
    logs, staging = tmp_path / "logs", tmp_path / "staging"
    write_day(logs, "2026-11-01", "part-0001.jsonl", 4, "a")
    ingest_staged(tmp_path / "s.duckdb", logs, staging)
    before = (staging / "log_files" / "dt=2026-11-01").resolve()
    write_day(logs, "2026-11-01", "part-0002.jsonl", 5, "b")
    assert _stage_in_child(logs, "2026-11-01", staging, "staging.before_switch") == -9
    assert (staging / "log_files" / "dt=2026-11-01").resolve() == before
    con = connect(tmp_path / "s.duckdb")
    try:
        assert [r.files_ingested for r in load_staged(con, staging, ["2026-11-01"])] == [0]
    finally:
        con.close()
    # The dead process's generation is named by no link; past an hour, the next staging of
    # the day removes it (a younger one may belong to a process still writing).
    generations = staging / ".generations" / "log_files"
    current = before.name
    (abandoned,) = [g for g in generations.iterdir() if g.name != current]
    # The next staging finishes the job, and the load then matches direct ingestion.
    for folder in (staging / ".generations").glob("*/" + abandoned.name):
        os.utime(folder, (1, 1))
    ingest_direct(tmp_path / "d.duckdb", logs)
    ingest_staged(tmp_path / "s.duckdb", logs, staging)
    assert_same_log_tables(tmp_path / "d.duckdb", tmp_path / "s.duckdb")
    now = (staging / "log_files" / "dt=2026-11-01").resolve().name
    assert [g.name for g in generations.iterdir()] == [now]
    assert list((staging / ".generations").glob("*/" + abandoned.name)) == []


def test_a_load_killed_mid_transaction_commits_nothing(tmp_path):
    logs, staging = tmp_path / "logs", tmp_path / "staging"
    write_day(logs, "2026-11-01", "part-0001.jsonl", 4, "a")
    stage_partition(logs, "2026-11-01", staging)
    connect(tmp_path / "s.duckdb").close()
    code = (
        "import sys; from pathlib import Path; from goldenset.staging import load_staged; "
        "from goldenset.warehouse import connect; "
        "load_staged(connect(sys.argv[1]), Path(sys.argv[2]), ['2026-11-01'])"
    )
    env = {**os.environ, "GOLDENSET_FAILPOINT": "staging.mid_load"}
    rc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s.duckdb"), str(staging)], env=env, cwd=ROOT)
    assert rc.returncode == -9
    con = connect(tmp_path / "s.duckdb", read_only=True)
    assert con.execute("SELECT (SELECT count(*) FROM log_serves) + (SELECT count(*) FROM log_files)").fetchone() == (0,)
    con.close()
