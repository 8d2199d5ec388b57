"""Staged ingestion (Parquet per log day, loaded by the one writer) holds exactly what direct ingestion holds.

The reference is the direct path, `ingest_all` into the warehouse, which the
conformance, property and reliability tests pin to the contract: staging must give
the same rows in every log table, through changes, appends, deletions and crashes.
"""

from __future__ import annotations

import gzip
import os
from datetime import date
from pathlib import Path

import duckdb
import pyarrow.dataset as pads
import pytest

from goldenset.demo import write_demo_data
from goldenset.logfiles import list_partitions
from goldenset.settings import Settings
from goldenset.staging import staged_days
from goldenset.warehouse import connect
from goldenset_dagster.cli import main
from tests.helpers import assert_same_log_tables, ingest_direct, ingest_staged, write_day

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def demo_logs(tmp_path) -> Path:
    """The demo's logs: 6 days with every malformed kind, gzip files, conflicting and repeated serves."""
    return write_demo_data(tmp_path / "demo", days=6, end=date(2026, 11, 28)).logs


def test_staged_days_hold_what_direct_ingestion_holds(tmp_path, demo_logs):
    ingest_direct(tmp_path / "d.duckdb", demo_logs)
    written, reports = ingest_staged(tmp_path / "s.duckdb", demo_logs, tmp_path / "staging")
    assert len(written) == 6 and all(written)  # one staged file a day
    assert_same_log_tables(tmp_path / "d.duckdb", tmp_path / "s.duckdb")
    # The per-day reports count what was loaded, and add up to the warehouse.
    con = connect(tmp_path / "s.duckdb", read_only=True)
    serves, rejects = con.execute(
        "SELECT (SELECT count(*) FROM log_serves), (SELECT count(*) FROM log_rejects)"
    ).fetchone()
    con.close()
    assert sum(r.serves for r in reports) == serves
    assert sum(r.rejected for r in reports) == rejects > 0
    assert sum(sum(r.reasons.values()) for r in reports) == rejects


def test_an_unchanged_day_is_not_written_again_nor_loaded(tmp_path, demo_logs):
    staging = tmp_path / "staging"
    ingest_staged(tmp_path / "s.duckdb", demo_logs, staging)
    generations = {p.resolve() for p in (staging / "log_files").iterdir()}
    written, reports = ingest_staged(tmp_path / "s.duckdb", demo_logs, staging)
    assert written == [False] * len(written)
    assert [r.files_ingested for r in reports] == [0] * len(reports)
    assert {p.resolve() for p in (staging / "log_files").iterdir()} == generations
    assert staged_days(staging) == list_partitions(demo_logs)


def test_changed_appended_and_deleted_files_end_as_direct_ingestion_ends(tmp_path):
    logs = tmp_path / "logs"
    for dt in ("2026-11-01", "2026-11-02", "2026-11-03"):
        write_day(logs, dt, "part-0001.jsonl", 6, "a")
    broken = logs / "dt=2026-11-02" / "part-0002.jsonl"
    broken.write_bytes(b'{"event": "serve"\n\xff\xfe not text\n\n')
    direct, staged, staging = tmp_path / "d.duckdb", tmp_path / "s.duckdb", tmp_path / "staging"
    ingest_direct(direct, logs)
    ingest_staged(staged, logs, staging)
    assert_same_log_tables(direct, staged)

    # A file rewritten, a file added, a file deleted (its rows stay: the warehouse is the record).
    write_day(logs, "2026-11-01", "part-0001.jsonl", 9, "b")
    os.utime(logs / "dt=2026-11-01" / "part-0001.jsonl", (1, 1))
    with gzip.open(logs / "dt=2026-11-02" / "part-0003.jsonl.gz", "wt") as fh:
        fh.write(
            '{"event": "verdict", "serve_id": "a-2026-11-02-1", "doc_id": "d1", "verdict": "wrong", '
            '"ts": "2026-11-02T12:00:00Z"}\n'
        )
    (logs / "dt=2026-11-03" / "part-0001.jsonl").unlink()
    ingest_direct(direct, logs)
    written, reports = ingest_staged(staged, logs, staging)
    assert written == [True, True, False]
    assert [r.files_ingested for r in reports] == [1, 1, 0]
    assert_same_log_tables(direct, staged)


def test_other_engines_read_the_staged_tables_as_hive_partitions(tmp_path, demo_logs):
    staging = tmp_path / "staging"
    _, reports = ingest_staged(tmp_path / "s.duckdb", demo_logs, staging)
    dataset = pads.dataset(staging / "log_serves", format="parquet", partitioning="hive")
    table = dataset.to_table(columns=["serve_id", "dt"])
    assert table.num_rows == sum(r.serves for r in reports)
    assert sorted(set(table.column("dt").to_pylist())) == list_partitions(demo_logs)
    con = duckdb.connect()
    n = con.execute(
        "SELECT count(*) FROM read_parquet(?, hive_partitioning = true)",
        [str(staging / "log_serve_items" / "*" / "*.parquet")],
    ).fetchall()[0][0]
    assert (
        n
        == connect(tmp_path / "s.duckdb", read_only=True)
        .execute("SELECT count(*) FROM log_serve_items")
        .fetchall()[0][0]
    )


def test_build_with_workers_publishes_the_golden_set_of_a_direct_build(tmp_path, monkeypatch):
    data = write_demo_data(tmp_path / "demo", days=4, end=date(2026, 11, 28))
    rows = {}
    for name, extra in (("direct", []), ("staged", ["--workers", "2"])):
        monkeypatch.setenv("GOLDENSET_HOME", str(tmp_path / name))
        db = tmp_path / name / "g.duckdb"
        argv = ["build", "--logs", str(data.logs), "--corpus", str(data.corpus_before), "--db", str(db), *extra]
        assert main(argv) == 0
        con = connect(db, read_only=True)
        rows[name] = con.execute(
            "SELECT query_id, doc_id, doc_version, verdict, relevance, serve_id, judged_at, stale_reason FROM golden_set ORDER BY ALL"
        ).fetchall()
        con.close()
    assert rows["staged"] and rows["staged"] == rows["direct"]
    # The staging ran as its own Dagster job, on the multiprocess executor, before the refresh.
    assert staged_days(tmp_path / "staged" / "staging") == list_partitions(data.logs)


def test_the_daemon_path_stages_on_schedule_and_the_sensor_starts_the_refresh(tmp_path, monkeypatch):
    import dagster as dg

    from goldenset_dagster.definitions import build_definitions
    from goldenset_dagster.resources import LabelSource, LogSource
    from goldenset_dagster.schedules import nightly_schedules, refresh_after_staging

    data = write_demo_data(tmp_path / "demo", days=3, end=date(2026, 11, 28))
    db = tmp_path / "g.duckdb"
    monkeypatch.setenv("GOLDENSET_LOGS", str(data.logs))
    monkeypatch.setenv("GOLDENSET_CORPUS", str(data.corpus_before))
    monkeypatch.setenv("GOLDENSET_DB", str(db))
    staging = tmp_path / "staging"
    logs = LogSource(path=str(data.logs), staging_path=str(staging), workers=2)
    labels = LabelSource(path=str(tmp_path / "no-labels"))
    with dg.instance_for_test() as instance:
        nightly_staged_golden_set = nightly_schedules()[1]
        # Without workers the staged schedule stands aside.
        with dg.build_schedule_context(instance=instance, resources={"logs": LogSource(path=str(data.logs))}) as ctx:
            off = nightly_staged_golden_set(ctx)
        assert isinstance(off, dg.SkipReason) and "GOLDENSET_INGEST_WORKERS" in off.skip_message
        with dg.build_schedule_context(instance=instance, resources={"logs": logs}) as ctx:
            on = nightly_staged_golden_set(ctx)
        assert on.run_config == {"execution": {"config": {"max_concurrent": 2}}}

        monkeypatch.setenv("GOLDENSET_STAGING", str(staging))
        monkeypatch.setenv("GOLDENSET_INGEST_WORKERS", "2")
        defs = build_definitions(Settings.resolve())
        staged = defs.resolve_job_def("stage_serve_log").execute_in_process(instance=instance)
        assert staged.success and staged_days(staging) == list_partitions(data.logs)
        ctx = dg.build_run_status_sensor_context(
            sensor_name="refresh_after_staging",
            dagster_instance=instance,
            dagster_run=staged.dagster_run,
            dagster_event=staged.get_run_success_event(),
            resources={"logs": logs, "labels": labels},
        )
        request = refresh_after_staging(ctx)
        assert request.tags["dagster/asset_partition_range_start"] == "2026-11-26"
        assert request.tags["dagster/asset_partition_range_end"] == "2026-11-28"
        refresh = defs.resolve_job_def("refresh_golden_set").execute_in_process(
            instance=instance, run_config=request.run_config, tags=request.tags
        )
        assert refresh.success
    con = connect(db, read_only=True)
    try:
        # The refresh loaded the staged days: the warehouse holds every staged serve.
        loaded = con.execute("SELECT count(*) FROM log_serves").fetchall()[0][0]
        staged_serves = con.execute(
            "SELECT count(*) FROM read_parquet(?)", [str(staging / "log_serves" / "*" / "*.parquet")]
        ).fetchall()[0][0]
        assert loaded == staged_serves > 0
        # ... and loaded them, not read the logs again: each file's ingestion time is the staged one.
        assert con.execute(
            "SELECT count(*) FROM log_files w JOIN read_parquet(?) s USING (source_file, ingested_at)",
            [str(staging / "log_files" / "*" / "*.parquet")],
        ).fetchall()[0][0] == len(list(data.logs.rglob("*.jsonl*")))
        assert con.execute("SELECT count(*) FROM golden_set").fetchall()[0][0] > 0
    finally:
        con.close()
