"""The commands that change an asset, each performed as a run of its job (`goldenset.hooks`).

`goldenset pool`, `bench run`, `traces import`, `labels import`, `judge label` and `forget`
call the library; the library hands the call that changes data to `perform_as_run`, which
executes a run of the command's job in this process, against the instance the UI shows
(`launch.execute`), with the call as the body of the step that records it. So a command
is one run on the job's page and the Overview timeline, its asset shows one
materialization (or observation) with the metadata a run launched in the UI attaches,
and its checks are evaluated as theirs are. The command's options stay the command's: the
step runs exactly the call the command made, not the job's config.

The call travels to the step in a context variable (`_HANDOFF`): the steps run in this
thread (the jobs' default in-process executor), and a step finds the call only when it is
the one the running command hands over (`handed_over(event)`); a run launched anywhere
else finds none and does what its config says. A failing call fails its step for good
(no step retry: the command reports its own error, once).

This module imports Dagster only when a run is made: `goldenset status` and the other
commands that change nothing never pay for it (about 1.4 s).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from goldenset import progress
from goldenset.settings import PATH_NAMES, Settings

# The command's event (goldenset.hooks) -> the job whose run records it.
EVENT_JOBS = {
    "pool": "pool_labelling_queue",
    "bench_run": "retrieval_benchmark_job",
    "traces_import": "import_trace_export",
    "labels_import": "import_labels",
    "judge_label": "judge_label_queue",
    "forget": "forget_files",
}
# The log level of the console logger in a command's run: the command prints its own output.
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@dataclass(frozen=True)
class Handoff:
    """The call a command hands to the step of its run, and what the command said about it."""

    event: str
    work: Callable[[], Any]
    details: dict[str, Any] = field(default_factory=dict)


_HANDOFF: ContextVar[Handoff | None] = ContextVar("goldenset_handoff", default=None)
# The command line being run, as its user typed it after `goldenset` (set by the program's `main`).
_COMMAND: ContextVar[str] = ContextVar("goldenset_command", default="")


@contextmanager
def running_command(argv: list[str]) -> Iterator[None]:
    """Name the command line the runs started inside the block belong to (a command inside another: its own)."""
    token = _COMMAND.set(" ".join(["goldenset", *argv]))
    try:
        yield
    finally:
        _COMMAND.reset(token)


def current_command() -> str:
    """The command line being run (`goldenset pool ...`), or empty outside the program."""
    return _COMMAND.get()


def handed_over(event: str) -> Handoff | None:
    """The call the running command hands over for `event`, or None (a run launched elsewhere)."""
    handoff = _HANDOFF.get()
    return handoff if handoff is not None and handoff.event == event else None


@contextmanager
def handing(handoff: Handoff) -> Iterator[None]:
    """Make `handoff` the call of the steps run inside the block."""
    token = _HANDOFF.set(handoff)
    try:
        yield
    finally:
        _HANDOFF.reset(token)


def run_handed(handoff: Handoff) -> Any:
    """Run the command's call; any error fails the step for good (the command reports it itself)."""
    import dagster as dg

    try:
        return handoff.work()
    except Exception as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise dg.Failure(description=first, allow_retries=False) from exc


def concrete(settings: Settings) -> Settings:
    """The settings with every path absolute and resolved, none a reference to a variable.

    The runs get the paths themselves rather than references to variables: the values may
    come from an environment the caller scoped, which Dagster cannot see.
    """
    update: dict = {name: Path(getattr(settings, name)).resolve() for name in PATH_NAMES}
    return settings.model_copy(update={**update, "from_environment": frozenset()})


def _settings(details: dict[str, Any]) -> Settings:
    flags: dict[str, Any] = {k: str(v) for k, v in details.items() if k in PATH_NAMES and v is not None}
    return concrete(Settings.resolve(None, **flags))


def perform_as_run(event: str, work: Callable[[], Any], details: dict[str, Any]) -> None:
    """Execute a run of `event`'s job whose step calls `work` (goldenset.hooks' performer)."""
    job_name = EVENT_JOBS.get(event)
    if job_name is None:
        work()
        return
    from goldenset_dagster.definitions import build_definitions
    from goldenset_dagster.instance import get_instance
    from goldenset_dagster.launch import announce_process, cli_tags, execute, reclaim_dead_runs

    job = build_definitions(_settings(details)).resolve_job_def(job_name)
    with get_instance() as instance:
        for freed in reclaim_dead_runs(instance):
            progress.notice(freed)
        run_id = announce_process(instance, job.name)
        with handing(Handoff(event, work, details)):
            execute(job, instance, run_config=QUIET, tags=cli_tags(), run_id=run_id)
