"""Running the jobs in-process for the CLI, against the instance the UI shows."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from goldenset import build_marker, ingest, layout, progress, settings
from goldenset.checks import empty_reason
from goldenset.corpus import read_corpus, remembering_reads
from goldenset.errors import GoldensetError, InputError
from goldenset.labelling import ingest as label_ingest
from goldenset.labelling.rubric import load_rubric
from goldenset.logfiles import list_partitions
from goldenset.settings import Paths
from goldenset.snapshots import unchanged_load
from goldenset.status import Status, funnel_steps, golden_status
from goldenset.warehouse import connect, require_folder
from goldenset_dagster.instance import get_instance
from goldenset_dagster.jobs import build_run_config, trigger_tags
from goldenset_dagster.partitions import range_tags, register_days


@dataclass(frozen=True)
class RefreshResult:
    """The status after a published build, and warnings worth printing."""

    status: Status
    warnings: list[str] = field(default_factory=list)


def _unwrap(exc: BaseException) -> BaseException:
    """The library error behind a Dagster step failure, if there is one."""
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:  # a cause chain can loop back on itself
        if isinstance(seen, GoldensetError):
            return seen
        visited.add(id(seen))
        seen = seen.__cause__ or seen.__context__
    return exc


def _environment(paths: Paths, wait: float, workers: int = 0) -> None:
    # The code location reads its paths from the environment when it is loaded, so the
    # flags of this command travel the same way the UI's would.
    values = {
        "GOLDENSET_LOGS": paths.logs,
        "GOLDENSET_CORPUS": paths.corpus,
        "GOLDENSET_DB": paths.db,
        "GOLDENSET_LABELS": paths.labels,
        "GOLDENSET_RUBRIC": paths.rubric,
    }
    for env, value in values.items():
        if value is not None:
            os.environ[env] = str(Path(value).resolve())
    os.environ[settings.ENV_LOCK_TIMEOUT] = str(wait)
    if workers:
        os.environ[settings.ENV_INGEST_WORKERS] = str(workers)


def run_refresh(
    paths: Paths,
    trigger: str = "manual",
    golden_set_config: dict | None = None,
    wait: float = settings.DEFAULT_LOCK_TIMEOUT,
    notify: Callable[[str], None] | None = None,
    workers: int = 0,
) -> RefreshResult:
    """Ingest, snapshot and build in one in-process run; return the resulting status.

    With `workers` above 0 the log days are first staged as Parquet by the
    stage_serve_log job in up to that many processes, and the refresh loads them.
    """
    # remembering_reads: the corpus checked up front is the one the snapshot step reads;
    # marking: `status` can tell a build in progress from no build at all.
    if not Path(paths.db).exists():
        require_folder(Path(paths.db))  # a typo in --db is refused before anything is read
    with remembering_reads(), build_marker.marking(paths.db):
        return _run_refresh(paths, trigger, golden_set_config, wait, notify, workers)


def _run_refresh(
    paths: Paths,
    trigger: str,
    golden_set_config: dict | None,
    wait: float,
    notify: Callable[[str], None] | None,
    workers: int,
) -> RefreshResult:
    # A bad corpus or log directory must change nothing, so both are refused before any
    # log is ingested.
    logs = Path(paths.logs)
    if logs.exists() and not logs.is_dir():
        raise InputError(f"--logs {logs} is a file; give the directory that holds the dt=YYYY-MM-DD folders")
    days = list_partitions(logs)
    ingested, corpus_known = 0, False
    # The days the run covers: those with a file ingestion would read (new, or changed by
    # its size and mtime). A day whose files are all as ingested is not run again, so a
    # night costs what its new day costs in Dagster too, not one partition per day kept.
    to_read = set(days)
    if Path(paths.db).exists():
        # Wait for a writer here, with a word to the user, rather than fail inside a step.
        con = connect(paths.db, read_only=False, wait=wait, notify=notify)
        try:
            ingested = con.execute("SELECT count(*) FROM log_files").fetchall()[0][0]
            corpus_known = unchanged_load(con, paths.corpus) is not None
            if workers == 0:  # (staging compares each day by content, in its own processes)
                to_read = set(ingest.days_to_read(con, logs, days))
        finally:
            con.close()
    if not corpus_known:  # an unchanged corpus file is the last good snapshot: no need to read it again
        read_corpus(paths.corpus)
    if not ingested or days:
        # Logs rotate, so once files are ingested an emptied LOGS is a rebuild from the
        # warehouse; before that, a LOGS with nothing the contract reads is a mistake.
        layout.require_files(logs, "log", "--logs or GOLDENSET_LOGS")
    labels = Path(paths.labels) if paths.labels is not None else None
    if labels is not None and labels.exists():
        if not labels.is_dir():
            raise InputError(f"--labels {labels} is a file; give the directory that holds the dt=YYYY-MM-DD folders")
        # A LABELS directory needs a valid, closed rubric; refused before anything is ingested.
        rubric = load_rubric(paths.rubric or settings.default_path("rubric"))
        rubric.require_closed()
        label_days = list_partitions(labels)
        days = sorted(set(days) | set(label_days))
        to_read |= _label_days_to_read(paths, labels, rubric.content_sha256, label_days, wait, notify)
    _environment(paths, wait, workers)
    from goldenset_dagster.definitions import build_definitions  # reads the variables just set

    defs = build_definitions()
    with get_instance() as instance:
        for freed in reclaim_dead_runs(instance):
            (notify or progress.notice)(freed)
        known = register_days(instance, days) if days else []
        runs = [i for i, k in enumerate(known) if k in to_read]
        keys = known[runs[0] : runs[-1] + 1] if runs else []
        if workers and list_partitions(logs):
            _stage_in_parallel(instance, workers)
        job = defs.resolve_job_def("refresh_golden_set" if keys else "rebuild_golden_set")
        try:
            job.execute_in_process(
                instance=instance,
                run_config=build_run_config(trigger, log_level="CRITICAL", **(golden_set_config or {})),
                tags={**range_tags(keys), **trigger_tags(trigger), **_process_tags()},
            )
        except dg.Failure as exc:
            cause = _unwrap(exc)
            if isinstance(cause, GoldensetError):
                raise cause from None
            raise GoldensetError(exc.description or str(exc)) from None
        except Exception as exc:
            cause = _unwrap(exc)
            if isinstance(cause, GoldensetError):
                raise cause from None
            raise
    # The build has published; a build that was waiting for this one may hold the file now.
    # Wait for it at least the default, whatever --wait said about getting started.
    con = connect(paths.db, read_only=True, wait=max(wait, settings.DEFAULT_LOCK_TIMEOUT), notify=notify)
    try:
        status = golden_status(con, paths.corpus)
        warnings = []
        if status.build.n_labels == 0:
            warnings.append(empty_reason(funnel_steps(con, status.build.build_id), status.build))
        return RefreshResult(status, warnings)
    finally:
        con.close()


def _label_days_to_read(
    paths: Paths, labels: Path, rubric_sha256: str, label_days: list[str], wait: float, notify
) -> set[str]:
    if not label_days or not Path(paths.db).exists():
        return set(label_days)
    con = connect(paths.db, read_only=True, wait=wait, notify=notify)
    try:
        return set(label_ingest.days_to_read(con, labels, rubric_sha256, label_days))
    finally:
        con.close()


def _stage_in_parallel(instance: dg.DagsterInstance, workers: int) -> None:
    """Run stage_serve_log on the multiprocess executor; a failed day is one error line."""
    from goldenset_dagster.staging import run_config, stage_job_from_location

    with dg.execute_job(
        dg.reconstructable(stage_job_from_location),
        instance=instance,
        run_config=run_config(workers),
        tags={**_process_tags(), "goldenset/step": "staging"},
    ) as result:
        if result.success:
            return
        failures = [e for e in result.all_events if e.is_step_failure]
        data = failures[0].step_failure_data if failures else None
        message = data.error.message.strip() if data is not None and data.error is not None else ""
        raise GoldensetError(f"staging the log days failed: {message.splitlines()[-1] if message else 'see the run'}")


# An in-process run holds its `duckdb` pool slot in the instance; a process killed mid-run
# (kill -9, OOM) never gives it back, and the next build would wait for it forever. Runs the
# CLI starts carry the process's identity, so the next build can tell a dead one.
PID_TAG, HOST_TAG, START_TAG = "goldenset/pid", "goldenset/host", "goldenset/process-start"


def _process_start(pid: int) -> str | None:
    """The kernel's start time of process `pid` (field 22 of /proc/PID/stat), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    return stat.rsplit(")", 1)[-1].split()[19]


def _process_tags() -> dict[str, str]:
    pid = os.getpid()
    return {PID_TAG: str(pid), HOST_TAG: socket.gethostname(), START_TAG: _process_start(pid) or ""}


def reclaim_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Fail the CLI's runs whose process is gone and free their pool slots; say what was freed."""
    freed = []
    live = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=live, tags={HOST_TAG: socket.gethostname()})):
        pid = int(run.tags.get(PID_TAG, "0") or 0)
        if not pid or (_process_start(pid) == run.tags.get(START_TAG) and _process_start(pid) is not None):
            continue
        instance.report_run_failed(run, f"the goldenset process {pid} that ran it is gone")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        freed.append(f"freed the `duckdb` pool slot of run {run.run_id[:8]}: its process {pid} is gone")
    return freed
