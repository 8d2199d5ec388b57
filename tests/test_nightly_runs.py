"""What a `goldenset build` runs in Dagster: the days with files to read, not every day kept."""

from __future__ import annotations

import os
import time
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from goldenset_dagster.cli import main
from goldenset_dagster.instance import get_instance
from goldenset_dagster.partitions import RANGE_END, RANGE_START
from tests.helpers import doc, ranked, serve, verdict, write_corpus, write_log

pytestmark = pytest.mark.slow

HOUR = 3600.0


@pytest.fixture
def project_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    for env in ("GOLDENSET_LOGS", "GOLDENSET_CORPUS", "GOLDENSET_DB", "GOLDENSET_LABELS"):
        monkeypatch.delenv(env, raising=False)
    return tmp_path


def _day(logs: Path, dt: str, n: int) -> Path:
    sid = f"s-{dt}"
    path = write_log(
        logs,
        dt,
        "part-0001.jsonl",
        [
            serve(sid, f"{dt}T10:00:00Z", f"task {n}", [ranked("d1", 1), ranked("d2", 2)]),
            verdict(sid, "d1", "helped", f"{dt}T10:05:00Z"),
            verdict(sid, "d2", "noise", f"{dt}T10:06:00Z"),
        ],
    )
    _age(path)
    return path


def _age(path: Path) -> None:
    # Written an hour ago: outside the window in which an unchanged size and mtime prove nothing.
    then = time.time() - HOUR
    os.utime(path, (then, then))


def _build(root: Path) -> int:
    return main(
        [
            "build",
            "--logs",
            str(root / "logs"),
            "--corpus",
            str(root / "corpus.jsonl"),
            "--db",
            str(root / "gs.duckdb"),
        ]
    )


def _last_run() -> tuple[str, tuple[str, str] | None, list[str]]:
    """The latest run's job, partition range and the serve_log days it materialized."""
    with get_instance() as instance:
        run = instance.get_runs(limit=1)[0]
        days = sorted(
            e.dagster_event.partition
            for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
            if e.dagster_event is not None and e.dagster_event.asset_key == dg.AssetKey("serve_log")
        )
        span = (run.tags[RANGE_START], run.tags[RANGE_END]) if RANGE_START in run.tags else None
        return run.job_name, span, days


def _rows(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def _labels(db: Path) -> list[tuple]:
    return _rows(db, "SELECT query_id, doc_id, verdict FROM golden_set ORDER BY ALL")


def _verdict(db: Path, serve_id: str, doc_id: str) -> str | None:
    rows = _rows(db, "SELECT verdict FROM golden_set WHERE serve_id = ? AND doc_id = ?", [serve_id, doc_id])
    return rows[0][0] if rows else None


def _three_days_built(root: Path) -> Path:
    """LOGS with three days, built once; returns LOGS."""
    logs = root / "logs"
    write_corpus(root / "corpus.jsonl", [doc("d1"), doc("d2")])
    for n, dt in enumerate(("2026-11-01", "2026-11-02", "2026-11-03")):
        _day(logs, dt, n)
    assert _build(root) == 0
    return logs


def test_a_night_runs_the_new_day_and_an_unchanged_night_runs_no_day(project_dir):
    logs = _three_days_built(project_dir)
    assert _last_run() == (
        "refresh_golden_set",
        ("2026-11-01", "2026-11-03"),
        ["2026-11-01", "2026-11-02", "2026-11-03"],
    )

    _day(logs, "2026-11-04", 4)
    assert _build(project_dir) == 0
    assert _last_run() == ("refresh_golden_set", ("2026-11-04", "2026-11-04"), ["2026-11-04"])
    assert len(_labels(project_dir / "gs.duckdb")) == 8

    assert _build(project_dir) == 0
    assert _last_run() == ("rebuild_golden_set", None, [])


def test_a_changed_or_added_file_of_an_old_day_runs_that_day(project_dir):
    logs = _three_days_built(project_dir)

    # A late file in an old day: that day is read, the days after it are only looked at.
    late = write_log(
        logs, "2026-11-01", "part-0002.jsonl", [verdict("s-2026-11-01", "d2", "helped", "2026-11-02T09:00:00Z")]
    )
    _age(late)
    assert _build(project_dir) == 0
    job, span, days = _last_run()
    assert (job, span, days) == ("refresh_golden_set", ("2026-11-01", "2026-11-01"), ["2026-11-01"])
    assert _verdict(project_dir / "gs.duckdb", "s-2026-11-01", "d2") == "helped"

    # The same content written again (a new mtime): the day is read and found unchanged.
    first = logs / "dt=2026-11-02" / "part-0001.jsonl"
    first.write_bytes(first.read_bytes())
    then = time.time() - HOUR / 2
    os.utime(first, (then, then))
    before = _labels(project_dir / "gs.duckdb")
    assert _build(project_dir) == 0
    assert _last_run()[1:] == (("2026-11-02", "2026-11-02"), ["2026-11-02"])
    assert _labels(project_dir / "gs.duckdb") == before
