"""Runs the command line starts: in this process, against the instance the UI shows, listed as the UI's are.

A run `job.execute_in_process` makes is on the Runs list but nowhere else: the job's page
selects runs by the `.dagster/repository` tag, and the Overview timeline drops every run
without a `repositoryOrigin` (its `useRunsForTimeline` skips them), which only a run
launched through a code location has. So the command line creates its run itself, with
the tag and the origin of the `goldenset` location of workspace.yaml, and executes it in
this process (`execute_run`, what a run worker does with a launched run).

The run says who started it: `goldenset/trigger: cli` and Dagster's `user` tag, which the
UI's "Launched by" column shows (a run launched there shows "Manually launched"). The
daemon's run retries do not restart a command-line run (`dagster/max_retries: 0`): the
command has reported its outcome to the person who ran it, who decides.

An in-process run holds its `duckdb` pool slot in the instance; a process killed mid-run
(kill -9, OOM) never gives it back, and the next build would wait for it forever. Runs the
command line starts record the process's identity, so the next one can tell a dead one. The
identity is metadata of an engine event at the head of the run's log, not run tags: as tags,
host, pid and process start cluttered every row of the UI's run lists.
"""

from __future__ import annotations

import getpass
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

import dagster as dg

from goldenset_dagster.jobs import CLI, TRIGGER_TAG

PROCESS_EVENT = "goldenset process"
PID_KEY, HOST_KEY, START_KEY = "goldenset/pid", "goldenset/host", "goldenset/process-start"
COMMAND_KEY = "goldenset/command"
# The run lists of a job's page select runs by this tag (`name@location`); the UI's own
# launches carry it, the command line's runs must say it to be listed there.
REPOSITORY_TAG = ".dagster/repository"
REPOSITORY_NAME, LOCATION_NAME = "__repository__", "goldenset"  # a Definitions' repository; workspace.yaml
REPOSITORY_LABEL = f"{REPOSITORY_NAME}@{LOCATION_NAME}"
DEFINITIONS_MODULE = "goldenset_dagster.definitions"
USER_TAG, MAX_RETRIES_TAG = "user", "dagster/max_retries"


def location_tags() -> dict[str, str]:
    """The tag that lists a command-line run on its job's page, as if launched from the UI."""
    return {REPOSITORY_TAG: REPOSITORY_LABEL}


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (some containers)
        return str(os.getuid())


def cli_tags() -> dict[str, str]:
    """The tags of every run the command line starts: its trigger, who ran it, its job page, no retry."""
    return {
        TRIGGER_TAG: CLI,
        USER_TAG: f"cli:{_login()}",
        MAX_RETRIES_TAG: "0",
        **location_tags(),
    }


def remote_origin(job_name: str):
    """The origin a run of `job_name` launched from the UI of the `goldenset` location would carry."""
    from dagster._core.remote_origin import (
        ManagedGrpcPythonEnvCodeLocationOrigin,
        RemoteJobOrigin,
        RemoteRepositoryOrigin,
    )
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    location = ManagedGrpcPythonEnvCodeLocationOrigin(
        LoadableTargetOrigin(executable_path=sys.executable, module_name=DEFINITIONS_MODULE),
        location_name=LOCATION_NAME,
    )
    return RemoteJobOrigin(RemoteRepositoryOrigin(location, REPOSITORY_NAME), job_name)


def execute(
    job: dg.JobDefinition,
    instance: dg.DagsterInstance,
    *,
    run_config: Mapping | None = None,
    tags: Mapping[str, str] | None = None,
    run_id: str | None = None,
    reconstructable=None,
) -> None:
    """Create a run of `job` as the UI would list it, then execute it here; a failure is raised.

    `reconstructable` (a `ReconstructableJob` of the same job) is for a job whose executor
    starts processes of its own; every other job runs its steps in this process.
    """
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.execution.api import create_execution_plan, execute_run

    target = reconstructable if reconstructable is not None else InMemoryJob(job)
    config = dict(run_config or {})
    plan = create_execution_plan(target, run_config=config, instance_ref=instance.get_ref())
    run = instance.create_run_for_job(
        job_def=job,
        execution_plan=plan,
        run_id=run_id,
        run_config=config,
        tags={**job.run_tags, **(tags or {})},
        remote_job_origin=remote_origin(job.name),
        status=dg.DagsterRunStatus.NOT_STARTED,
    )
    result = execute_run(target, run, instance, raise_on_error=True)
    if not result.success:  # a step failed in another process, where raising cannot reach this one
        raise RunFailed(f"run {run.run_id[:8]} of {job.name} failed; see its log in the Dagster UI")


class RunFailed(dg.DagsterError):
    """A run the command line executed failed without an error this process could raise."""


def _process_start(pid: int) -> str | None:
    """The kernel's start time of process `pid` (field 22 of /proc/PID/stat), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    return stat.rsplit(")", 1)[-1].split()[19]


def announce_process(instance: dg.DagsterInstance, job_name: str) -> str:
    """A new run id, whose log opens with this process's identity (host, pid, start) and command; return the id.

    Written before the run is created, so a run that is live always has it.
    """
    from dagster._core.events import EngineEventData
    from dagster._core.utils import make_new_run_id

    run_id = make_new_run_id()
    from goldenset_dagster.commands import current_command

    pid, command = os.getpid(), current_command()
    metadata = {
        PID_KEY: dg.MetadataValue.int(pid),
        HOST_KEY: dg.MetadataValue.text(socket.gethostname()),
        START_KEY: dg.MetadataValue.text(_process_start(pid) or ""),
    }
    if command:
        metadata[COMMAND_KEY] = dg.MetadataValue.text(command)
    instance.report_engine_event(
        f"{PROCESS_EVENT} {pid} on {socket.gethostname()} runs this run" + (f": {command}" if command else ""),
        engine_event_data=EngineEventData(metadata=metadata),
        job_name=job_name,
        run_id=run_id,
    )
    return run_id


def _process_of(instance: dg.DagsterInstance, run: dg.DagsterRun) -> tuple[str, int, str | None] | None:
    """(host, pid, process start) of the CLI process that runs `run`, or None for a run the CLI did not start."""
    if PID_KEY in run.tags:  # runs started before the identity moved out of the tags
        return run.tags.get(HOST_KEY, ""), int(run.tags.get(PID_KEY) or 0), run.tags.get(START_KEY)
    for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        meta = getattr(event.event_specific_data, "metadata", None) if event is not None else None
        if meta and PID_KEY in meta:
            values = {k: str(meta[k].value) for k in (HOST_KEY, PID_KEY, START_KEY)}
            return values[HOST_KEY], int(values[PID_KEY]), values[START_KEY] or None
    return None


def reclaim_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Fail the CLI's runs whose process is gone and free their pool slots; say what was freed."""
    freed = []
    live = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=live)):
        process = _process_of(instance, run)
        if process is None or process[0] != socket.gethostname():
            continue
        _, pid, started = process
        if not pid or (_process_start(pid) == started and started is not None):
            continue
        instance.report_run_failed(run, f"the goldenset process {pid} that ran it is gone")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        freed.append(f"freed the `duckdb` pool slot of run {run.run_id[:8]}: its process {pid} is gone")
    return freed
