"""`refresh_now`: the full refresh in one click is the command line's build, launched from the UI (contract 18.6).

Each test launches the job as the UI does (Dagster's `dagster/from_ui` tag, a run created in
the instance the UI shows, executed by `launch.execute` as a run worker executes it); the
click itself, in Chromium against `dagster dev`, is in tests/test_dagster_ui_browser.py.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from goldenset.settings import Settings
from goldenset_dagster.cli import main
from goldenset_dagster.definitions import build_definitions
from goldenset_dagster.instance import get_instance
from goldenset_dagster.launch import execute

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data" / "conformance"
TRACES = Path(__file__).resolve().parents[1] / "docs" / "examples" / "traces"
FROM_UI = {"dagster/from_ui": "true"}


def _inputs(root: Path, monkeypatch) -> None:
    """Conformance logs, corpus, labels and rubric, named by the variables `dagster dev` would see."""
    shutil.copytree(DATA / "logs", root / "logs")
    shutil.copytree(DATA / "labels", root / "labels")
    for name, path in {
        "LOGS": root / "logs",
        "CORPUS": DATA / "corpus.jsonl",
        "LABELS": root / "labels",
        "RUBRIC": DATA / "rubric.yaml",
        "DB": root / "ui.duckdb",
    }.items():
        monkeypatch.setenv(f"GOLDENSET_{name}", str(path))


def _click(job_name: str = "refresh_now") -> tuple[dg.DagsterRun, list[dg.DagsterRun], str]:
    """Launch `job_name` as the UI does; its run, the runs it requested, and the messages of its log."""
    job = build_definitions(Settings.resolve()).resolve_job_def(job_name)
    with get_instance() as instance:
        before = {r.run_id for r in instance.get_runs()}
        with contextlib.suppress(Exception):  # a refused build fails the step: the run and its log say why
            execute(job, instance, tags=FROM_UI)
        new = [r for r in instance.get_runs() if r.run_id not in before]
        (run,) = [r for r in new if r.job_name == job_name]
        requested = [r for r in new if r.tags.get("goldenset/requested_by") == run.run_id]
        events = instance.all_logs(run.run_id)
        # A failed step's message is its error's, not the event's.
        errors = [
            e.dagster_event.step_failure_data.error
            for e in events
            if e.dagster_event and e.dagster_event.is_step_failure
        ]
        log = "\n".join([*(e.message for e in events), *(f"{err.message}" for err in errors if err)])
        return run, requested[::-1], log  # (get_runs lists the newest first)


def _golden(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT * FROM golden_set ORDER BY ALL").fetchall()
    finally:
        con.close()


def test_one_launch_is_the_command_lines_build_run_as_its_own_tagged_run(tmp_path, monkeypatch):
    _inputs(tmp_path, monkeypatch)
    run, requested, log = _click()
    assert run.status == dg.DagsterRunStatus.SUCCESS and run.tags["goldenset/trigger"] == "ui"
    # Nothing in the trace_export folder: the import is skipped with a note (an info line), not run.
    with get_instance() as instance:
        step_logs = [e for e in instance.all_logs(run.run_id) if e.step_key and not e.is_dagster_event]
        (note,) = [e for e in step_logs if e.message.startswith("trace import skipped: no span files in")]
        assert note.level == logging.INFO
        # The step's last line names the build it published.
        assert step_logs[-1].message.startswith("published build 1: 2 golden queries, 7 labels")
    (refresh,) = requested
    assert refresh.job_name == "refresh_golden_set" and refresh.status == dg.DagsterRunStatus.SUCCESS
    assert refresh.tags["goldenset/trigger"] == "ui" and refresh.tags["dagster/max_retries"] == "0"
    # Every day of the conformance logs and labels, as `goldenset build` reads them.
    days = sorted(
        p.name.removeprefix("dt=") for p in [*(tmp_path / "logs").iterdir(), *(tmp_path / "labels").iterdir()]
    )
    assert (refresh.tags["dagster/asset_partition_range_start"], refresh.tags["dagster/asset_partition_range_end"]) == (
        days[0],
        days[-1],
    )
    # Listed as the command line's runs are: the job page's tag, the location's origin, the command it ran.
    assert refresh.tags[".dagster/repository"] == "__repository__@goldenset"
    assert refresh.remote_job_origin.location_name == "goldenset"
    with get_instance() as instance:
        first = instance.all_logs(refresh.run_id)[0].dagster_event
    assert first.event_specific_data.metadata["goldenset/command"].value == "goldenset build"

    # The same inputs through the command line give the same golden set: the job reads what the location was
    # given (labels and rubric included), not the defaults of the home.
    cli_db = tmp_path / "cli.duckdb"
    assert main(["build", "--db", str(cli_db), "--new-warehouse"]) == 0
    assert _golden(tmp_path / "ui.duckdb") == _golden(cli_db) != []

    # Nothing new since: the second launch is a rebuild, as a second `goldenset build` is.
    _, again, _ = _click()
    assert [(r.job_name, r.status) for r in again] == [("rebuild_golden_set", dg.DagsterRunStatus.SUCCESS)]


def test_span_files_are_imported_first_in_a_run_of_their_own(tmp_path, monkeypatch):
    _inputs(tmp_path, monkeypatch)
    shutil.copytree(TRACES / "export", tmp_path / "trace_export")
    monkeypatch.setenv("GOLDENSET_TRACE_EXPORT", str(tmp_path / "trace_export"))
    monkeypatch.setenv("GOLDENSET_TRACE_MAPPING", str(TRACES / "mapping.yaml"))
    run, requested, log = _click()
    assert run.status == dg.DagsterRunStatus.SUCCESS and "trace import skipped" not in log
    assert [r.job_name for r in requested] == ["import_trace_export", "refresh_golden_set"]
    assert all(r.tags["goldenset/trigger"] == "ui" for r in requested)
    # The days the import wrote are read by the refresh that follows (the conformance days and two of spans).
    with get_instance() as instance:
        events = instance.all_logs(requested[1].run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
        read = {e.dagster_event.partition for e in events if e.dagster_event.asset_key == dg.AssetKey("serve_log")}
    assert read >= {p.name.removeprefix("dt=") for p in (tmp_path / "logs").iterdir()} >= {"2026-11-28", "2026-11-29"}


def test_a_refusal_fails_the_run_with_the_commands_line_and_changes_nothing(tmp_path, monkeypatch):
    _inputs(tmp_path, monkeypatch)
    assert _click()[0].status == dg.DagsterRunStatus.SUCCESS
    before = _golden(tmp_path / "ui.duckdb")
    # Another log folder, none of its files ingested: `goldenset build` refuses without --new-source, and so
    # does the click.
    (tmp_path / "moved" / "dt=2026-11-09").mkdir(parents=True)
    shutil.copy(next((tmp_path / "logs").glob("dt=*/*.jsonl")), tmp_path / "moved" / "dt=2026-11-09" / "a.jsonl")
    monkeypatch.setenv("GOLDENSET_LOGS", str(tmp_path / "moved"))
    run, requested, log = _click()
    assert run.status == dg.DagsterRunStatus.FAILURE and requested == []
    (failure,) = [line for line in log.splitlines() if "the build refused: " in line]
    # The command's one line, naming the variable the location was given (not a flag nobody typed).
    assert "the build refused: GOLDENSET_LOGS=" in failure and "--new-source" in failure
    assert failure.endswith("the command there is `goldenset build`)")
    assert _golden(tmp_path / "ui.duckdb") == before


def test_a_failed_trace_import_fails_the_run_with_its_line_and_builds_nothing(tmp_path, monkeypatch):
    _inputs(tmp_path, monkeypatch)
    shutil.copytree(TRACES / "export", tmp_path / "trace_export")
    (tmp_path / "mapping.yaml").write_text("serve: [not, a, mapping\n")
    monkeypatch.setenv("GOLDENSET_TRACE_EXPORT", str(tmp_path / "trace_export"))
    monkeypatch.setenv("GOLDENSET_TRACE_MAPPING", str(tmp_path / "mapping.yaml"))
    run, requested, log = _click()
    assert run.status == dg.DagsterRunStatus.FAILURE
    # The import's run failed on the mapping; no build was started after it.
    assert [(r.job_name, r.status) for r in requested] == [("import_trace_export", dg.DagsterRunStatus.FAILURE)]
    (failure,) = [line for line in log.splitlines() if "the trace import refused: " in line]
    assert "mapping" in failure and failure.endswith("the command there is `goldenset traces import`)")
    assert not (tmp_path / "ui.duckdb").exists()
