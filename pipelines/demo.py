"""`goldenset demo`: sample data through the whole loop, each step printed as the command a user runs.

The steps: write a month of sample logs, two corpus snapshots and a folder of rubrics,
one per task (python-stdlib for the four developer projects, support-policies for the
support project: contract 9.5); check them (and an open one); build; reindex and build again; pool the
rankers into the labelling queue and export it; two simulated annotators label part of
it (one file with a bad line per reject reason); the agents' re-marks of today arrive,
one taking back the only `helped` of a question the annotators just labelled; build again,
merging the labels; print the rejected label lines, `explain` of that question (only the
people's label keeps it: contract v5), agreement, a benchmark on the grown set, and a
calibration of the dense score, which shows that no single floor separates the superseded
refund page from the page in force.

Builds go through `run_refresh`, what `goldenset build` runs; every other step runs the
command itself through `goldenset_dagster.cli.main`, so its output is what a user gets.
While the demo runs, GOLDENSET_HOME is the demo's folder (and no per-path variable is
set), so each command finds everything the way `goldenset status` finds it afterwards.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path

from goldenset import settings
from goldenset.demo import DemoData, flipped, write_demo_data
from goldenset.demo.annotators import (
    LabelFile,
    bad_label_lines,
    label_sessions,
    read_queue_export,
    superseded_pairs,
    write_label_file,
)
from goldenset.demo.policies import PAGE_IN_FORCE, STALE_PAGE
from goldenset.errors import InputError
from goldenset.records import normalise_task, query_id
from goldenset.settings import Paths, Settings
from goldenset.status import Status
from goldenset.warehouse import connect
from goldenset_dagster.runner import RefreshResult, run_refresh

DEMO_MARKER = ".goldenset-demo"
RUBRICS = "rubrics"  # the home's rubric folder (settings' fallback when rubric.yaml is absent)
DEMO_RUBRICS = ("python-stdlib.yaml", "support-policies.yaml")
CASE_QUESTION = "How many days does a customer have to request a refund?"
CASE_QUERY_ID = query_id("support", normalise_task(CASE_QUESTION))
EXAMPLE_SQL = """\
-- What changed between the last two builds, and why?
SELECT change, count(*) FROM label_changes
WHERE to_build = (SELECT max(build_id) FROM golden_builds) GROUP BY change ORDER BY change;

-- The full history of one label: the refund page the agents found helpful, then the people did not.
SELECT valid_from_build, valid_to_build, source, verdict, label, doc_version, stale_reason FROM label_history
WHERE query_id = '{case}' AND doc_id = '{stale}' ORDER BY valid_from_build;

-- Labels to re-check now, oldest flag first.
SELECT project, task, doc_id, judged_version, current_version, superseded_by, reason, first_flagged_build
FROM relabel_queue ORDER BY first_flagged_build, project, task, doc_id LIMIT 10;
"""


@dataclass(frozen=True)
class CommandRun:
    """One command the demo ran: what a user types after `goldenset`, and its exit code."""

    argv: tuple[str, ...]
    exit_code: int


@dataclass(frozen=True)
class CalibrationCase:
    """The two refund pages under the dense score, for the same question, and the single cutoff chosen."""

    query_id: str
    stale_score: float
    in_force_score: float
    single_cutoff: float | None

    def describe(self) -> str:
        """The two scores, and what the chosen single cutoff does to the pair."""
        c = self.single_cutoff
        passes = [
            name
            for name, s in (("the superseded page", self.stale_score), ("the page in force", self.in_force_score))
            if c is not None and s >= c
        ]
        verdict = "passes both" if len(passes) == 2 else "fails both" if not passes else f"passes only {passes[0]}"
        shown = "none passes" if c is None else f"{c:.4f}"
        head = (
            f"for {CASE_QUESTION!r} the superseded page {STALE_PAGE} scores {self.stale_score:.4f} and the page "
            f"in force {PAGE_IN_FORCE} {self.in_force_score:.4f}"
        )
        if self.stale_score >= self.in_force_score:
            head += ": a floor that passes the page in force passes the superseded page too"
        return f"{head}; the chosen single cutoff ({shown}) {verdict}"


@dataclass(frozen=True)
class DemoSummary:
    """What the demo did: the final status, the commands it ran, the label files and the calibration case."""

    status: Status
    epilogue: str
    data: DemoData | None = None
    commands: tuple[CommandRun, ...] = ()
    label_files: tuple[LabelFile, ...] = ()
    calibration: CalibrationCase | None = None


def _quote(arg: str) -> str:
    """The argument as a POSIX shell needs it: quoted when it holds anything but plain path characters."""
    return arg if arg and all(c.isalnum() or c in "-_./=:,@" for c in arg) else "'" + arg.replace("'", "'\\''") + "'"


def _home(root: Path):
    """For the demo's length, settings resolve as if GOLDENSET_HOME were `root` and no path variable
    were set (the process's environment is left as it is). DAGSTER_HOME is kept: the demo's runs
    show in the UI of the instance the user set."""
    cleared = {settings.ENV_HOME} | {
        var.env for var in settings.VARIABLES if var.kind == "path" and var.name != "dagster_home"
    }
    values = {k: v for k, v in os.environ.items() if k not in cleared}
    return settings.scoped_environment({**values, settings.ENV_HOME: str(root)})


def _claim_demo_home(root: Path, force: bool) -> None:
    """Refuse to overwrite a warehouse the demo did not make (a user's real one)."""
    db = root / "goldenset.duckdb"
    if db.exists() and not (root / DEMO_MARKER).exists() and not force:
        raise InputError(
            f"{db} exists and was not made by the demo; run the demo elsewhere with --dir DIR, "
            "or pass --force to replace it"
        )
    root.mkdir(parents=True, exist_ok=True)
    (root / DEMO_MARKER).write_text("made by `goldenset demo`; safe to delete\n", encoding="utf-8")


def _clear(root: Path) -> None:
    """Start from an empty warehouse: the demo's own files of an earlier run go."""
    for name in ("goldenset.duckdb", "goldenset.duckdb.wal", "queue.jsonl", "rubric.yaml"):
        (root / name).unlink(missing_ok=True)
    for name in ("logs", "labels", "rubrics"):
        if (root / name).exists():
            shutil.rmtree(root / name)


class _Steps:
    """Runs and prints the steps; keeps what the summary reports."""

    def __init__(self, echo: Callable[[str], None]) -> None:
        self.echo = echo
        self.commands: list[CommandRun] = []

    def heading(self, text: str) -> None:
        self.echo(f"\n== {text}")

    def run(self, *argv: str) -> CommandRun:
        """Print `$ goldenset ARGV`, then run it in-process: it prints what it prints for a user."""
        from goldenset_dagster.cli import main

        self.echo("$ goldenset " + " ".join(_quote(a) for a in argv))
        # Not captured: each command sizes its tables to the terminal it finds, as it would for a user.
        done = CommandRun(tuple(argv), main(list(argv)))
        if done.exit_code != 0:
            self.echo(f"(exit {done.exit_code})")
        self.commands.append(done)
        return done

    def build(self, paths: Paths, trigger: str, note: str = "") -> RefreshResult:
        """One build, as `goldenset build` runs it, with its short summary.

        The command printed is the one that records what this build records: a build the
        sensor would start is shown with its trigger, since `goldenset build` alone records
        `manual`.
        """
        command = "$ goldenset build" + (f" --trigger {trigger}" if trigger != "manual" else "")
        self.echo(command + (f"   # {note}" if note else ""))
        result = run_refresh(
            Settings.resolve(
                logs=paths.logs, corpus=paths.corpus, db=paths.db, labels=paths.labels, rubric=paths.rubric
            ),
            trigger=trigger,
        )
        b, st = result.status.build, result.status
        self.echo(
            f"build {b.build_id} ({b.trigger}): {b.n_queries} queries in {b.n_projects} projects, "
            f"{b.n_labels} labels ({b.n_helped} helped, {b.n_noise} noise, {b.n_wrong} wrong"
            + (f", {b.n_human_labels} human" if b.n_human_labels else "")
            + "), "
            f"{st.relabel_queue} to relabel {_counts(st.relabel_queue_by_reason)}"
        )
        if b.label_lines_read:
            self.echo(
                f"label lines: {b.label_lines_read} read, {b.label_lines_rejected} rejected; human labels "
                f"unused {b.human_labels_unused}, overriding a log label {b.log_labels_overridden}"
            )
        for warning in result.warnings:
            self.echo(f"WARNING: {warning}")
        return result


def _deliver_late_verdicts(steps: _Steps, data: DemoData, root: Path) -> None:
    """The agents' re-marks of today reach the logs: the one that takes back the only `helped` of
    flipped.QUESTION, after the people labelled its page relevant (goldenset.demo.flipped)."""
    if data.late_verdicts is None or data.late_verdicts_into is None:
        return
    shutil.copyfile(data.late_verdicts, data.late_verdicts_into)
    steps.echo(
        f"$ cp {data.late_verdicts.relative_to(root)} {data.late_verdicts_into.relative_to(root)}   "
        f"# the agent takes back its only helped for {flipped.QUESTION!r}: {flipped.ANSWER} is noise now"
    )


def _counts(counts: dict[str, int]) -> str:
    return "(" + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")" if counts else ""


def _example_answers(db: Path) -> str:
    con = connect(db, read_only=True)
    try:
        out = []
        for block in EXAMPLE_SQL.format(case=CASE_QUERY_ID, stale=STALE_PAGE).strip().split("\n\n"):
            out.append(block)
            out.append(str(con.sql(block)))
        return "\n".join(out)
    finally:
        con.close()


def _label(steps: _Steps, root: Path, now: datetime, seed: int) -> tuple[LabelFile, ...]:
    """The simulated annotators label the exported queue and the superseded support pages."""
    from goldenset.labelling.rubric_set import load_rubrics

    rubrics = load_rubrics(root / RUBRICS).require_closed()
    # The annotators are the support team: they label under the support project's rubric.
    rubric = rubrics.for_project("support") or rubrics.only("the demo's annotators")
    queue = read_queue_export(root / "queue.jsonl")
    con = connect(root / "goldenset.duckdb", read_only=True)
    try:
        review = superseded_pairs(con)
    finally:
        con.close()
    ana, ben = label_sessions(queue, review, rubric, now.date(), seed)
    files_written = (
        write_label_file(root / "labels", now.date(), ana),
        write_label_file(root / "labels", now.date(), ben, bad_label_lines(ben.lines[0])),
    )
    ours = sum(1 for p in queue if p.project == "support")
    steps.echo(
        f"{ours} of the {len(queue)} queued pairs are the support project's; "
        f"{len(review)} support labels sit on the superseded refund page (relabel_queue)"
    )
    for f in files_written:
        bad = f" and {len(f.bad)} bad lines ({', '.join(b.reason for b in f.bad)})" if f.bad else ""
        steps.echo(f"{f.annotator}: {f.labels} label lines{bad} -> {f.path.relative_to(root)}")
    return files_written


def _calibration_case(root: Path) -> CalibrationCase | None:
    """The dense scores of the two refund pages for the case question, and calibrate's single cutoff.

    None when the sample holds no human label on one of the two pages for that question.
    """
    from goldenset.scoring.workflow import CalibrationRequest, calibrate_latest

    # Scores come from the score cache the command just filled, so this costs no model time.
    con = connect(root / "goldenset.duckdb")
    try:
        outcome = calibrate_latest(con, CalibrationRequest(scorer="dense"))
    finally:
        con.close()
    scores = {(s.pair.query_id, s.pair.doc_id): s.values[0] for s in outcome.run.scored}
    return CalibrationCase(
        CASE_QUERY_ID,
        scores[(CASE_QUERY_ID, STALE_PAGE)],
        scores[(CASE_QUERY_ID, PAGE_IN_FORCE)],
        outcome.calibration.measurement.single.row.cutoff,
    )


def run_demo(root: Path, seed: int = 7, force: bool = False, echo: Callable[[str], None] = print) -> DemoSummary:
    """Write sample data into `root` and run the whole loop on it (see the module doc)."""
    root = Path(root).resolve()
    default = root == settings.home()
    _claim_demo_home(root, force)
    _clear(root)
    with _home(root):
        return _run_steps(root, seed, default, echo)


def _run_steps(root: Path, seed: int, default: bool, echo: Callable[[str], None]) -> DemoSummary:
    steps = _Steps(echo)
    now = datetime.now(UTC)
    data = write_demo_data(root, seed=seed, end=now.date())
    corpus = root / "corpus.jsonl"
    shutil.copyfile(data.corpus_before, corpus)
    # One rubric per task (contract 9.5): the stdlib projects' and the support project's.
    rubric = root / RUBRICS
    rubric.mkdir()
    shipped = files("goldenset") / "data" / "demo-rubrics"
    for name in DEMO_RUBRICS:
        (rubric / name).write_bytes((shipped / name).read_bytes())
    paths = Paths(logs=data.logs, corpus=corpus, db=root / "goldenset.duckdb", labels=root / "labels", rubric=rubric)
    if not default:
        echo(f"(the demo's home is {root}: prefix the commands below with GOLDENSET_HOME={root} to rerun them)")
    echo(
        f"sample data: {data.n_serves} serves, {data.n_verdicts} verdicts, {data.n_malformed} malformed lines "
        f"under {data.logs.relative_to(root)}/; corpus {corpus.name}; rubrics under {rubric.name}/ "
        "(python-stdlib for the four developer projects, support-policies for support)"
    )

    steps.heading("1. The rubrics, one per task: closed, and an open one")
    steps.run("rubric", "check", str(rubric))
    steps.run("rubric", "check", str(files("goldenset") / "data" / "open-rubric.yaml"))

    steps.heading("2. Build from the logs, then reindex")
    steps.build(paths, "manual")
    shutil.copyfile(data.corpus_after, corpus)
    echo(f"$ cp {data.corpus_after.name} {corpus.name}   # the reindex: new, revised and superseded pages")
    steps.build(paths, "reindex", "as corpus_reindex_sensor starts it when the corpus changes")

    steps.heading("3. Pool the rankers into the labelling queue, export it for the annotators")
    steps.run("pool")
    steps.run("pool", "export", "--out", str(root / "queue.jsonl"))

    steps.heading("4. Two annotators label the support project's pairs (simulated)")
    label_files = _label(steps, root, now, seed)

    steps.heading("5. Today's verdicts arrive; build again: the labels merge into the golden set")
    _deliver_late_verdicts(steps, data, root)
    steps.build(paths, "manual")
    steps.run("rejects", "--file", "labels/*", "--width", "40")
    # Why is that query still in the set? Only the people's label keeps it (contract v5).
    steps.run("explain", "--task", flipped.QUESTION, "--project", flipped.PROJECT)

    steps.heading("6. Agreement, a benchmark on the grown set, calibration of the dense score")
    steps.run("labels", "agreement")
    steps.run("bench", "run")
    steps.run("calibrate", "--scorer", "dense")
    case = _calibration_case(root)
    echo(case.describe() if case else f"(no human label on both refund pages for {CASE_QUESTION!r} in this sample)")

    con = connect(paths.db, read_only=True)
    try:
        from goldenset.status import golden_status

        final = golden_status(con, corpus)
    finally:
        con.close()
    where = "" if default else f"GOLDENSET_HOME={root} "
    epilogue = (
        f"\nDuckDB file: {paths.db}\n"
        "Query it from Python (duckdb.connect(PATH, read_only=True).sql(...)) or any DuckDB client. "
        "Three questions about label history, with their answers:\n\n" + _example_answers(paths.db) + "\nNext:\n"
        f"  {where}goldenset status\n"
        f"  {where}goldenset bench run\n"
        f"  {where}goldenset label serve --annotator YOU   # label the rest of the queue in a browser;\n"
        "                                                  # its /set pages explore the set, builds and runs\n"
        + (
            "  dagster dev        # in this folder; the UI shows these runs\n"
            if default
            else f"  {where}DAGSTER_HOME={root / 'dagster'} dagster dev\n"
        )
    )
    return DemoSummary(final, epilogue, data, tuple(steps.commands), label_files, case)
