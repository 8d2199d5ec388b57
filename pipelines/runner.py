"""Running the jobs in-process for the CLI, against the instance the UI shows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import duckdb

from goldenset import build_marker, forgotten, ingest, layout, progress, sources
from goldenset.build import label_reject_reasons
from goldenset.checks import empty_reason, label_rejects_line
from goldenset.corpus import read_corpus, remembering_reads
from goldenset.counts import filter_funnel
from goldenset.errors import GoldensetError, InputError, InputMoved
from goldenset.labelling import ingest as label_ingest
from goldenset.labelling.rubric_change import rubric_change
from goldenset.labelling.rubric_set import load_rubrics
from goldenset.logfiles import list_partitions
from goldenset.settings import DEFAULT_LOCK_TIMEOUT, Paths, Settings, named
from goldenset.snapshots import unchanged_load
from goldenset.status import Status, golden_status
from goldenset.warehouse import check_new_warehouse, connect, remember_warehouse, require_folder, transaction
from goldenset_dagster.assets import damaged_message
from goldenset_dagster.commands import concrete
from goldenset_dagster.instance import get_instance
from goldenset_dagster.jobs import build_run_config
from goldenset_dagster.launch import announce_process, cli_tags, execute, reclaim_dead_runs
from goldenset_dagster.partitions import range_tags, register_days


@dataclass(frozen=True)
class RefreshResult:
    """The status after a published build, and warnings worth printing."""

    status: Status
    warnings: list[str] = field(default_factory=list)


def unwrap(exc: BaseException, kinds: tuple[type[BaseException], ...] = (GoldensetError,)) -> BaseException:
    """The first error of `kinds` (the library's, by default) behind a Dagster step failure, else `exc`."""
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:  # a cause chain can loop back on itself
        if isinstance(seen, kinds):
            return seen
        visited.add(id(seen))
        seen = seen.__cause__ or seen.__context__
    return exc


def run_refresh(
    settings: Settings,
    trigger: str = "manual",
    golden_set_config: dict | None = None,
    notify: Callable[[str], None] | None = None,
    new_source: bool = False,
    accept_rubric_change: bool = False,
    new_warehouse: bool = False,
    ingest_forgotten: bool = False,
    instance: dg.DagsterInstance | None = None,
    tags: Mapping[str, str] | None = None,
) -> RefreshResult:
    """Ingest, snapshot and build in one in-process run with `settings`; return the resulting status.

    With `settings.ingest_workers` above 0 the log days are first staged as Parquet by the
    stage_serve_log job in up to that many processes, and the refresh loads them.
    A LOGS or LABELS root other than the recorded one, or a rubric edit that changes
    labels, refuses (InputMoved) before anything is written unless `new_source` or
    `accept_rubric_change` says the change is meant (contract 9), and so does a forgotten file
    whose bytes changed, unless `ingest_forgotten` (contract 9.6). A warehouse that does not
    exist is made only where the home has none, or with `new_warehouse` (contract 17.1).

    The runs go to `instance` (default: the command line's, `get_instance()`) with `tags`
    (default: the command line's, `cli_tags()`); `refresh_now` gives its own.
    """
    guard = Guard(new_source, accept_rubric_change, ingest_forgotten)
    db = Path(settings.db)
    if not db.exists():
        # A typo in --db is refused before anything is read or made.
        check_new_warehouse(db, settings.home, new_warehouse=new_warehouse)
        require_folder(db, settings.home)
    # remembering_reads: the corpus checked up front is the one the snapshot step reads;
    # marking: `status` can tell a build in progress from no build at all.
    try:
        with remembering_reads(), build_marker.marking(db):
            return _run_refresh(concrete(settings), trigger, golden_set_config, notify, guard, instance, tags)
    finally:
        remember_warehouse(settings.home, db)


@dataclass(frozen=True)
class Guard:
    """What the user said a build may change: its source roots, labels through a rubric edit, forgotten files."""

    new_source: bool = False
    accept_rubric_change: bool = False
    ingest_forgotten: bool = False


def _run_refresh(
    settings: Settings,
    trigger: str,
    golden_set_config: dict | None,
    notify: Callable[[str], None] | None,
    guard: Guard,
    given_instance: dg.DagsterInstance | None = None,
    given_tags: Mapping[str, str] | None = None,
) -> RefreshResult:
    paths, wait, workers = settings.paths, settings.lock_timeout, settings.ingest_workers
    say = notify or progress.notice
    labels = Path(paths.labels) if paths.labels is not None else None
    roots: dict[str, Path | None] = {"logs": Path(paths.logs), "labels": labels if labels and labels.is_dir() else None}
    moves: list[str] = []
    revived: dict[str, list[str]] = {}  # forgotten files whose bytes changed, ingested again (--ingest-forgotten)
    # A bad corpus or log directory must change nothing, so both are refused before any
    # log is ingested.
    logs = Path(paths.logs)
    if logs.exists() and not logs.is_dir():
        where = named("logs", logs)
        raise InputError(f"the logs {where} is a file; point {where.fix} at the directory of dt=YYYY-MM-DD folders")
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
            try:
                moves = sources.check_roots(con, roots, new_source=guard.new_source)
                revived = forgotten.check(con, roots, ingest=guard.ingest_forgotten)
            except duckdb.Error as exc:  # a damaged warehouse: one line naming it, as the steps say it
                raise InputError(damaged_message(str(paths.db), exc)) from None
            ingested = con.execute("SELECT count(*) FROM log_files").fetchall()[0][0]
            corpus_known = unchanged_load(con, paths.corpus) is not None
            if workers == 0:  # (staging compares each day by content, in its own processes)
                to_read = set(ingest.days_to_read(con, logs, days)) | _days_of(revived.get("logs", []))
        finally:
            con.close()
    if not corpus_known:  # an unchanged corpus file is the last good snapshot: no need to read it again
        read_corpus(paths.corpus)
    if not ingested or days:
        # Logs rotate, so once files are ingested an emptied LOGS is a rebuild from the
        # warehouse; before that, a LOGS with nothing the contract reads is a mistake.
        layout.require_files(logs, "log", named("logs", logs))
    if labels is not None and labels.exists():
        if not labels.is_dir():
            where = named("labels", labels)
            raise InputError(
                f"the labels {where} is a file; point {where.fix} at the directory of dt=YYYY-MM-DD folders"
            )
        # A LABELS directory needs a valid, closed rubric; refused before anything is ingested.
        rubric = load_rubrics(settings.rubric)
        rubric.require_closed()
        _check_rubric(paths, rubric, guard, wait, notify)
        label_days = list_partitions(labels)
        days = sorted(set(days) | set(label_days))
        to_read |= _label_days_to_read(paths, labels, rubric.content_sha256, label_days, wait, notify)
        to_read |= _days_of(revived.get("labels", []))
    _revive(paths, revived, wait, say)
    from goldenset_dagster.definitions import build_definitions

    defs = build_definitions(settings)
    run_tags = dict(given_tags) if given_tags is not None else cli_tags()
    with nullcontext(given_instance) if given_instance is not None else get_instance() as instance:
        for freed in reclaim_dead_runs(instance):
            (notify or progress.notice)(freed)
        known = register_days(instance, days) if days else []
        runs = [i for i, k in enumerate(known) if k in to_read]
        keys = known[runs[0] : runs[-1] + 1] if runs else []
        if workers and list_partitions(logs):
            _stage_in_parallel(instance, settings, run_tags)
        job = defs.resolve_job_def("refresh_golden_set" if keys else "rebuild_golden_set")
        run_id = announce_process(instance, job.name)
        try:
            try:
                execute(
                    job,
                    instance,
                    run_config=build_run_config(trigger, log_level="CRITICAL", **(golden_set_config or {})),
                    tags={**range_tags(keys), **run_tags},
                    run_id=run_id,
                )
            finally:
                _record_roots(paths, roots, wait)
        except dg.Failure as exc:
            cause = unwrap(exc)
            if isinstance(cause, GoldensetError):
                raise cause from None
            raise GoldensetError(exc.description or str(exc)) from None
        except Exception as exc:
            cause = unwrap(exc)
            if isinstance(cause, GoldensetError):
                raise cause from None
            raise
    for line in moves:  # said once the build has published: a refused build's one line stays alone
        say(line)
    # The build has published; a build that was waiting for this one may hold the file now.
    # Wait for it at least the default, whatever --wait said about getting started.
    con = connect(paths.db, read_only=True, wait=max(wait, DEFAULT_LOCK_TIMEOUT), notify=notify)
    try:
        status = golden_status(con, paths.corpus)
        warnings = []
        if status.build.n_labels == 0:
            warnings.append(empty_reason(filter_funnel(con, status.build.build_id), status.build))
        if status.build.label_lines_rejected:
            reasons = label_reject_reasons(con, status.build.corpus_content_sha256)
            warnings.append(label_rejects_line(status.build.label_lines_rejected, reasons))
        return RefreshResult(status, warnings)
    finally:
        con.close()


def _check_rubric(paths: Paths, rubric, guard: Guard, wait: float, notify) -> None:
    """Refuse a rubric edit that changes labels unless accepted; say in one line what an edit does."""
    if not Path(paths.db).exists():
        return
    con = connect(paths.db, read_only=True, wait=wait, notify=notify)
    try:
        change = rubric_change(con, rubric)
    except duckdb.Error as exc:
        raise InputError(damaged_message(str(paths.db), exc)) from None
    finally:
        con.close()
    if change is None:
        return
    say = notify or progress.notice
    old = ", ".join(sha[:12] for sha in change.old_sha256)
    head = f"the rubric {paths.rubric} changed ({old} -> {change.new_sha256[:12]})"
    if not change.changes_labels:
        say(f"{head}: no label changes ({change.lines_checked} stored label lines checked again)")
        return
    if guard.accept_rubric_change:
        say(f"{head}: {change.summary()}; going on (--accept-rubric-change)")
        return
    sample = "".join(f"\n  {c.text()}" for c in change.sample)
    more = change.become_invalid + change.grade_changes + change.become_valid - len(change.sample)
    raise InputMoved(
        f"{head}: {change.summary()}; nothing was changed. Restore the rubric, or run the build again with "
        f"--accept-rubric-change to go on. "
        f"{'The first ' + str(len(change.sample)) + ':' if more > 0 else 'They are:'}{sample}"
    )


def _days_of(files: list[str]) -> set[str]:
    """The days (dt=YYYY-MM-DD folders) files relative to a root are in."""
    return {f.split("/", 1)[0].removeprefix("dt=") for f in files}


def _revive(paths: Paths, revived: dict[str, list[str]], wait: float, say: Callable[[str], None]) -> None:
    """Take back the forget of the changed forgotten files `--ingest-forgotten` lets in, once
    every refusal has been passed; say which (contract 9.6)."""
    if not revived:
        return
    con = connect(paths.db, read_only=False, wait=wait)
    try:
        with transaction(con):
            for kind, files in revived.items():
                forgotten.lift(con, kind, files)
    finally:
        con.close()
    for kind, files in revived.items():
        named = ", ".join(files[: forgotten.NAMED]) + (
            f" and {len(files) - forgotten.NAMED} more" if len(files) > forgotten.NAMED else ""
        )
        say(
            f"{len(files)} {kind} file(s) forgotten by `goldenset forget` changed since: {named}; "
            "ingesting their new content (--ingest-forgotten)"
        )


def _record_roots(paths: Paths, roots: dict[str, Path | None], wait: float) -> None:
    """After a run (published or not), remember the roots it ingested from; a busy file is left for next time."""
    if not Path(paths.db).exists():
        return
    try:
        con = connect(paths.db, read_only=False, wait=wait, notify=lambda _m: None)
    except GoldensetError:
        return
    try:
        sources.record_roots(con, roots)
    except duckdb.Error:
        pass  # (a damaged warehouse: the run's own error says so; this must not hide it)
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


def _stage_in_parallel(instance: dg.DagsterInstance, settings: Settings, tags: Mapping[str, str]) -> None:
    """Run stage_serve_log on the multiprocess executor; a failed day is one error line."""
    from goldenset_dagster.staging import JOB_NAME, run_config, stage_job_with

    # The worker processes rebuild the job from the settings themselves (JSON), not from an
    # environment this process would have had to write.
    recon = dg.build_reconstructable_job(
        "goldenset_dagster.staging", stage_job_with.__name__, reconstructable_args=(settings.model_dump_json(),)
    )
    run_id = announce_process(instance, JOB_NAME)
    try:
        execute(
            recon.get_definition(),
            instance,
            run_config=run_config(settings.ingest_workers),
            tags={**tags, "goldenset/step": "staging"},
            run_id=run_id,
            reconstructable=recon,
        )
    except Exception:
        failures = [e.dagster_event for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)]
        data = failures[0].step_failure_data if failures and failures[0] is not None else None
        message = data.error.message.strip() if data is not None and data.error is not None else ""
        raise GoldensetError(
            f"staging the log days failed: {message.splitlines()[-1] if message else 'see the run'}"
        ) from None
