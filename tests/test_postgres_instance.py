"""The Dagster instance on a real PostgreSQL server: a real materialization of the pipeline stored there.

The instance's dagster.yaml is docs/deploy/dagster.yaml (the one docs/guides/scale-out.md shows) with
its connection pointed at a server the session starts itself (tests/pg_server.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from goldenset.settings import Settings
from goldenset_dagster.definitions import build_definitions
from goldenset_dagster.instance import INSTANCE_YAML
from goldenset_dagster.jobs import TRIGGER_TAG, build_run_config, trigger_tags
from goldenset_dagster.partitions import range_tags
from tests.deploy_units import DEPLOY, make_layout, service_command
from tests.helpers import doc, ranked, serve, verdict, write_corpus, write_log
from tests.pg_server import PostgresServer, postgres_db_fixture, postgres_server_fixture  # noqa: F401 (fixtures)

# A real PostgreSQL server: left out of make test-fast.
pytestmark = pytest.mark.postgres

DEPLOY_YAML = DEPLOY / "dagster.yaml"
PASSWORD_ENV = "DAGSTER_PG_PASSWORD"
DAYS = ["2026-11-01", "2026-11-02"]


def write_inputs(root: Path) -> tuple[Path, Path]:
    """Two days of logs (a repeated task, a query with no positive, one malformed line) and a corpus."""
    logs = root / "logs"
    write_log(
        logs,
        DAYS[0],
        "a.jsonl",
        [
            serve("s1", "2026-11-01T09:00:00Z", "How do refunds work?", [ranked("d1", 1), ranked("d2", 2)]),
            verdict("s1", "d1", "helped", "2026-11-01T09:01:00Z"),
            verdict("s1", "d2", "noise", "2026-11-01T09:01:00Z"),
            serve("s2", "2026-11-01T10:00:00Z", "reset my password", [ranked("d3", 1), ranked("d4", 2)]),
            verdict("s2", "d3", "helped", "2026-11-01T10:01:00Z"),
            verdict("s2", "d4", "wrong", "2026-11-01T10:01:00Z"),
        ],
    )
    write_log(
        logs,
        DAYS[1],
        "a.jsonl",
        [
            serve("s3", "2026-11-02T09:00:00Z", "how do  REFUNDS work?", [ranked("d1", 1), ranked("d5", 2)]),
            verdict("s3", "d1", "helped", "2026-11-02T09:01:00Z"),
            verdict("s3", "d5", "helped", "2026-11-02T09:01:00Z"),
            serve("s4", "2026-11-02T11:00:00Z", "export invoices", [ranked("d2", 1)], project="reports"),
            verdict("s4", "d2", "noise", "2026-11-02T11:01:00Z"),
            serve("s5", "2026-11-02T12:00:00Z", "close my account", [ranked("d6", 1), ranked("d4", 2)]),
            verdict("s5", "d6", "helped", "2026-11-02T12:01:00Z"),
            verdict("s5", "d4", "helped", "2026-11-02T12:01:00Z"),
            '{"event": "serve", "serve_id": ',
        ],
    )
    corpus = write_corpus(
        root / "corpus.jsonl",
        [
            doc("d1"),
            doc("d2"),
            doc("d3", version="v2"),
            doc("d4"),
            doc("d5"),
            doc("d6", status="retired", text=None, superseded_by="d7"),
            doc("d7"),
        ],
    )
    return logs, corpus


def postgres_instance_yaml(server: PostgresServer, db_name: str) -> str:
    """docs/deploy/dagster.yaml with its connection (not its password) pointed at the test server."""
    cfg = yaml.safe_load(DEPLOY_YAML.read_text(encoding="utf-8"))
    cfg["storage"]["postgres"]["postgres_db"].update(
        username=server.user, hostname=server.host, port=server.port, db_name=db_name
    )
    return yaml.safe_dump(cfg, sort_keys=False)


@pytest.fixture
def postgres_home(tmp_path, postgres_server, postgres_db, monkeypatch) -> Path:
    """A DAGSTER_HOME whose instance lives in a fresh database of the session's PostgreSQL server."""
    home = tmp_path / "dagster-home"
    home.mkdir()
    (home / "dagster.yaml").write_text(postgres_instance_yaml(postgres_server, postgres_db), encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv(PASSWORD_ENV, postgres_server.password)
    return home


@pytest.fixture
def pipeline_env(tmp_path, monkeypatch) -> dict[str, Path]:
    """Logs, corpus and a DuckDB path under tmp_path, handed to the code location by its variables."""
    logs, corpus = write_inputs(tmp_path / "input")
    paths = {"logs": logs, "corpus": corpus, "db": tmp_path / "pg" / "goldenset.duckdb"}
    for name, path in paths.items():
        monkeypatch.setenv(f"GOLDENSET_{name.upper()}", str(path))
    return paths


def days_partitions() -> str:
    """The name of the dynamic partitions (one per dt= day) the refresh job runs over."""
    return build_definitions(Settings.resolve()).resolve_job_def("refresh_golden_set").partitions_def.name


def refresh(instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """What `goldenset build` does: register the days as partitions, run refresh_golden_set over all of them."""
    defs = build_definitions(Settings.resolve())  # reads GOLDENSET_* now
    job = defs.resolve_job_def("refresh_golden_set")
    name = job.partitions_def.name
    known = instance.get_dynamic_partitions(name)
    instance.add_dynamic_partitions(name, [d for d in DAYS if d not in known])
    return job.execute_in_process(
        instance=instance,
        run_config=build_run_config("manual", log_level="CRITICAL"),
        tags={**range_tags(list(instance.get_dynamic_partitions(name))), **trigger_tags("manual")},
        raise_on_error=False,
    )


def failures(result: dg.ExecuteInProcessResult) -> str:
    """The step failures of a run, for an assertion message."""
    return "\n".join(
        f"{e.step_key}: {e.step_failure_data.error.to_string()}" for e in result.all_events if e.is_step_failure
    )


def golden_rows(db: Path) -> tuple[list[tuple], list[tuple]]:
    """The published golden set and its funnel, in a fixed order."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        labels = con.execute("SELECT * FROM golden_set ORDER BY query_id, doc_id").fetchall()
        funnel = con.execute("SELECT * EXCLUDE (build_id) FROM filter_funnel ORDER BY build_id, step_order").fetchall()
        return labels, funnel
    finally:
        con.close()


def sql_duckdb(db: Path, query: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def sql(server: PostgresServer, db_name: str, query: str, *params) -> list[tuple]:
    con = server.connect(db_name)
    try:
        with con.cursor() as cur:
            cur.execute(query, params)
            return cur.fetchall()
    finally:
        con.close()


def test_deploy_yaml_is_the_generated_instance_plus_postgres_storage():
    deploy = yaml.safe_load(DEPLOY_YAML.read_text(encoding="utf-8"))
    storage = deploy.pop("storage")
    assert deploy == yaml.safe_load(INSTANCE_YAML)
    assert storage["postgres"]["postgres_db"]["password"] == {"env": PASSWORD_ENV}


def test_a_refresh_run_is_stored_in_postgres_with_its_materializations_checks_and_partitions(
    postgres_home, postgres_server, postgres_db, pipeline_env, tmp_path, monkeypatch
):
    with dg.DagsterInstance.get() as instance:
        result = refresh(instance)
        assert result.success, failures(result)
        run_id = result.run_id
        materialized = len(result.get_asset_materialization_events())

    # A new instance object, so everything below is read back from the server.
    with dg.DagsterInstance.from_config(str(postgres_home)) as instance:
        from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage

        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        assert instance.run_retries_enabled and instance.run_retries_max_retries == 1

        run = instance.get_run_by_id(run_id)
        assert run.status == dg.DagsterRunStatus.SUCCESS
        assert run.job_name == "refresh_golden_set" and run.tags[TRIGGER_TAG] == "manual"

        golden = instance.fetch_materializations(dg.AssetKey("golden_set"), limit=10).records
        assert [r.run_id for r in golden] == [run_id]
        meta = golden[0].asset_materialization.metadata
        assert meta["build_id"].value == 1 and meta["trigger"].value == "manual"
        assert [(r.data["step"], r.data["judgments_left"]) for r in meta["funnel"].value.records] == sql_duckdb(
            pipeline_env["db"], "SELECT step, judgments_left FROM filter_funnel WHERE build_id = 1 ORDER BY step_order"
        )
        assert instance.get_materialized_partitions(dg.AssetKey("serve_log")) == set(DAYS)

        checks = {}
        for name in ("funnel_adds_up", "labels_point_at_active_documents", "rejected_share", "rejected_share_warning"):
            record = instance.get_latest_asset_check_evaluation_record(
                dg.AssetCheckKey(dg.AssetKey("golden_set"), name)
            )
            assert record.run_id == run_id
            checks[name] = record.status
        # One malformed line of 14: under the 10% block, over the 1% warning.
        assert checks == {
            "funnel_adds_up": AssetCheckExecutionRecordStatus.SUCCEEDED,
            "labels_point_at_active_documents": AssetCheckExecutionRecordStatus.SUCCEEDED,
            "rejected_share": AssetCheckExecutionRecordStatus.SUCCEEDED,
            "rejected_share_warning": AssetCheckExecutionRecordStatus.FAILED,
        }

        assert list(instance.get_dynamic_partitions(days_partitions())) == DAYS
        # The pool the DuckDB writers claimed a slot in lives in the instance: one slot, now free.
        pool = instance.event_log_storage.get_concurrency_info("duckdb")
        assert pool.slot_count == 1 and pool.active_slot_count == 0

    # And in PostgreSQL itself, not in files next to dagster.yaml.
    assert sql(postgres_server, postgres_db, "SELECT run_id, status FROM runs") == [(run_id, "SUCCESS")]
    assert sql(
        postgres_server,
        postgres_db,
        "SELECT partition FROM dynamic_partitions WHERE partitions_def_name = %s ORDER BY partition",
        days_partitions(),
    ) == [(d,) for d in DAYS]
    assert (
        sql(
            postgres_server,
            postgres_db,
            "SELECT count(*) FROM event_logs WHERE run_id = %s AND dagster_event_type = 'ASSET_MATERIALIZATION'",
            run_id,
        )[0][0]
        == materialized
        >= 6  # two serve_log partitions, corpus_snapshot, golden_set, relabel_queue, golden_set_export
    )
    assert not list(postgres_home.rglob("*.db"))

    # The same input through a throwaway SQLite instance publishes the same golden set.
    monkeypatch.setenv("GOLDENSET_DB", str(tmp_path / "sqlite" / "goldenset.duckdb"))
    with dg.instance_for_test() as sqlite_instance:
        assert (reference := refresh(sqlite_instance)).success, failures(reference)
    labels, funnel = golden_rows(pipeline_env["db"])
    assert labels and (labels, funnel) == golden_rows(tmp_path / "sqlite" / "goldenset.duckdb")


def test_goldenset_build_runs_against_the_postgres_instance_from_the_command_line(
    postgres_home, postgres_server, postgres_db, tmp_path, monkeypatch, capsys
):
    # The command's own code in this process (DAGSTER_HOME set by postgres_home): what is checked
    # is where the runs land, not a process of its own (the deploy test runs the unit's command).
    from goldenset_dagster.cli import main

    home = tmp_path / "home"
    write_inputs(home)  # logs/ and corpus.jsonl where GOLDENSET_HOME puts them by default
    then = time.time() - 3600  # written an hour ago: the second build sees them unchanged by their stat
    for f in (home / "logs").rglob("*.jsonl"):
        os.utime(f, (then, then))
    monkeypatch.setenv("GOLDENSET_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    for expected_build in (1, 2):
        code = main(["build"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert f"build {expected_build} published" in out

    with dg.DagsterInstance.from_config(str(postgres_home)) as instance:
        runs = instance.get_runs()
        # Newest first: the second build had no file to read, so it ran no day.
        assert [(r.job_name, r.status, r.tags[TRIGGER_TAG]) for r in runs] == [
            ("rebuild_golden_set", dg.DagsterRunStatus.SUCCESS, "cli"),
            ("refresh_golden_set", dg.DagsterRunStatus.SUCCESS, "cli"),
        ]
        golden = instance.fetch_materializations(dg.AssetKey("golden_set"), limit=10).records
        assert [r.asset_materialization.metadata["build_id"].value for r in golden] == [2, 1]
        assert list(instance.get_dynamic_partitions(days_partitions())) == DAYS
    assert sql(postgres_server, postgres_db, "SELECT count(*) FROM runs")[0][0] == 2
    assert (home / "goldenset.duckdb").is_file()
    assert not (home / "dagster").exists()  # DAGSTER_HOME was given: nothing made under GOLDENSET_HOME/dagster


def stop_daemon(daemon: subprocess.Popen) -> None:
    """Stop the daemon and what it started (its code server, run workers): its own process group."""
    if daemon.poll() is None:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(daemon.pid, signal.SIGKILL)  # a run worker or code server left behind


def wait_for_run(dagster_home: Path, tags: dict[str, str], daemon: subprocess.Popen, log: Path) -> dg.DagsterRun:
    """The run carrying `tags`, once finished. A bound on waiting, not a timing assertion."""
    deadline = time.monotonic() + 600
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        while True:
            runs = instance.get_runs(filters=dg.RunsFilter(tags=tags))
            if runs and runs[0].is_finished:
                return runs[0]
            assert daemon.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"run not finished: {runs}\n{log.read_text()[-3000:]}"
            time.sleep(1)


def test_the_services_of_docs_deploy_share_one_postgres_instance(postgres_server, postgres_db, tmp_path, monkeypatch):
    """The daemon unit runs a queued run in step workers that take turns on DuckDB; the build unit adds its run."""
    monkeypatch.setenv(PASSWORD_ENV, postgres_server.password)  # for this process's own look at the instance
    layout = make_layout(tmp_path)
    write_inputs(layout.home)
    dagster_home = layout.home / "dagster"  # the units' DAGSTER_HOME, and where `goldenset build` looks without it
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text(postgres_instance_yaml(postgres_server, postgres_db), encoding="utf-8")
    secrets = (DEPLOY / "secrets.env").read_text(encoding="utf-8").replace("change-me", postgres_server.password)
    (layout.etc / "secrets.env").write_text(secrets, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"  # the working directory of every command: nothing may land there
    elsewhere.mkdir()
    daemon_argv, env = service_command("dagster-daemon.service", layout)
    assert env["DAGSTER_HOME"] == str(dagster_home) and env[PASSWORD_ENV] == postgres_server.password

    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        instance.add_dynamic_partitions(days_partitions(), DAYS)
    mark = {"goldenset/test": uuid.uuid4().hex}
    log = tmp_path / "daemon.log"
    with log.open("w") as out:
        daemon = subprocess.Popen(
            daemon_argv, cwd=elsewhere, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        tags = {**range_tags(DAYS), **trigger_tags("manual"), **mark}
        launched = subprocess.run(
            [
                str(layout.programs / "dagster"),
                "job",
                "launch",
                "-m",
                "goldenset_dagster.definitions",
                "-j",
                "refresh_golden_set",
                "--tags",
                json.dumps(tags),
                # A process per step, asked for (the jobs run in one process unless asked).
                "--config-json",
                json.dumps({"execution": {"config": {"multiprocess": {}}}}),
            ],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert launched.returncode == 0, launched.stderr
        run = wait_for_run(dagster_home, mark, daemon, log)
        with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
            heartbeats = instance.get_daemon_heartbeats()
    finally:
        stop_daemon(daemon)

    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        events = [e for e in instance.all_logs(run.run_id) if e.dagster_event]
        assert run.status == dg.DagsterRunStatus.SUCCESS, [e.user_message for e in events if e.level >= 40]
        kinds = [e.dagster_event.event_type for e in events]
        # Submitted to the queue in PostgreSQL (the CLI only enqueues it), launched from there by the
        # daemon, whose heartbeat the webserver reads from the same place.
        assert dg.DagsterEventType.RUN_ENQUEUED in kinds and dg.DagsterEventType.RUN_SUCCESS in kinds
        assert "QUEUED_RUN_COORDINATOR" in heartbeats
        # Each step ran in its own worker process (the multiprocess executor), yet no two steps that
        # write DuckDB overlapped, not even serve_log and corpus_snapshot, which do not depend on each
        # other: the pool's one slot is held in PostgreSQL, where every worker claims it.
        starts = {
            e.step_key: (e.timestamp, e.dagster_event.pid)
            for e in events
            if e.dagster_event.event_type == dg.DagsterEventType.STEP_START
        }
        ends = {
            e.step_key: e.timestamp for e in events if e.dagster_event.event_type == dg.DagsterEventType.STEP_SUCCESS
        }
        assert {"serve_log", "corpus_snapshot", "golden_set"} <= set(starts) and set(ends) == set(starts)
        assert len({pid for _, pid in starts.values()}) == len(starts)
        spans = sorted((starts[k][0], ends[k]) for k in starts)
        assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:], strict=False))

    # The nightly build unit has no DAGSTER_HOME: `goldenset build` finds GOLDENSET_HOME/dagster/dagster.yaml.
    build_argv, build_env = service_command("goldenset-build.service", layout)
    assert "DAGSTER_HOME" not in build_env
    built = subprocess.run(build_argv, cwd=elsewhere, env=build_env, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    assert "build 2 published" in built.stdout

    # The scale-out guide's `dagster schedule start` keeps the schedule's state in PostgreSQL too.
    started = subprocess.run(
        [
            str(layout.programs / "dagster"),
            "schedule",
            "start",
            "nightly_golden_set",
            "-m",
            "goldenset_dagster.definitions",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert started.returncode == 0, started.stderr

    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        runs = instance.get_runs()
        # Newest first: the unit's `goldenset build` (a CLI run, section 18), then the queued launch.
        assert [(r.status, r.tags[TRIGGER_TAG]) for r in runs] == [
            (dg.DagsterRunStatus.SUCCESS, "cli"),
            (dg.DagsterRunStatus.SUCCESS, "manual"),
        ]
        golden = instance.fetch_materializations(dg.AssetKey("golden_set"), limit=10).records
        assert [r.run_id for r in golden] == [runs[0].run_id, run.run_id]
        assert [r.asset_materialization.metadata["build_id"].value for r in golden] == [2, 1]
        states = {s.name: s.status.value for s in instance.all_instigator_state()}
    assert states == {"nightly_golden_set": "RUNNING"}
    assert sql(postgres_server, postgres_db, "SELECT status FROM instigators") == [("RUNNING",)]
    assert sql(postgres_server, postgres_db, "SELECT count(*) FROM runs") == [(2,)]
    assert not list(dagster_home.rglob("*.db"))
    assert (layout.home / "goldenset.duckdb").is_file() and not list(elsewhere.iterdir())
    assert not list(layout.user_home.iterdir())


def test_missing_postgres_fails_under_ci_and_skips_elsewhere(monkeypatch):
    from tests.pg_server import _unavailable

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="PostgreSQL is required under CI: no initdb"):
        _unavailable("no initdb")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL server to start: no initdb"):
        _unavailable("no initdb")
