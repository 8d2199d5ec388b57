"""`goldenset judge label`: the LLM judge labels the labelling queue as an annotator (contract 8.3).

It reads the queue and the passages, closes DuckDB, asks the judge about each row and
appends one label line (kind `judge`) per valid answer to
LABELS/dt=<UTC today>/judge-NAME.jsonl. The next `goldenset build` ingests them; the
gate (--judge-min-pairs, --judge-min-kappa) decides whether they join the golden set.
Exit 0 when the run went through (invalid answers and errors are counted, not fatal);
1 when the judge cannot be reached or lacks the model, when every row asked was a
transport error, or when a line failed the label-line check; 2 for a bad option; 6
(incomplete) when more than --max-unusable of the rows asked were invalid or errors.
Every run that asked the judge is recorded in `judge_runs` (contract 13.1).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from goldenset import hooks, settings
from goldenset.cli.options import DbOpt, JudgeModelOpt, JudgeUrlOpt, LabelsOpt, RubricOpt, WaitOpt
from goldenset.cli.shared import command_group
from goldenset.errors import GoldensetError, UsageError

app = command_group("judge", "The LLM judge as an annotator: label the labelling queue with label lines of kind judge.")


@app.callback()
def _group() -> None:
    """The LLM judge."""
    # A callback keeps `judge` a command group, so `label` stays a subcommand while it is the only one.


@app.command("label")
def label_cmd(
    annotator: Annotated[
        str,
        typer.Option(
            "--annotator",
            metavar="NAME",
            help="The judge's annotator name (letters, digits, '.', '_', '-'); its file is "
            "LABELS/dt=<UTC today>/judge-NAME.jsonl.",
        ),
    ],
    judge_url: JudgeUrlOpt = None,
    judge_model: JudgeModelOpt = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", metavar="SECONDS", help="Seconds one row may take, retries included; a slower one is an error."
        ),
    ] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the contract's one JSON object.")] = False,
    max_unusable: Annotated[
        float,
        typer.Option(
            "--max-unusable",
            metavar="SHARE",
            help="Exit 6 (incomplete) when more than this share of the rows asked gave an invalid answer or a "
            "transport error; the usable lines are written and the run recorded first.",
        ),
    ] = 0.5,
    labels: LabelsOpt = None,
    rubric: RubricOpt = None,
    db: DbOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Ask the judge about every row of the labelling queue; write a label line per valid answer."""
    from goldenset.cli.shared import open_warehouse, reading
    from goldenset.clock import utcnow
    from goldenset.labelling.rubric_set import load_rubrics
    from goldenset.scoring.judge import PROMPT_VERSION, JudgeClient, JudgeSettings
    from goldenset.scoring.judge_health import check_share, raise_if_incomplete, record_run
    from goldenset.scoring.judge_label import check_annotator, judge_queue
    from goldenset.scoring.pairs import queue_rows
    from goldenset.scoring.workflow import scoring_progress

    check_annotator(annotator)
    check_share(max_unusable, "--max-unusable")
    if not judge_url or not judge_model:
        raise UsageError(
            "judge label needs --judge-url and --judge-model (or GOLDENSET_JUDGE_URL and GOLDENSET_JUDGE_MODEL)"
        )
    closed = load_rubrics(settings.resolve("rubric", rubric)).require_closed().only("judge label")
    as_of = None if closed.as_of is None else str(closed.as_of)
    db_path, labels_dir = settings.resolve("db", db), settings.resolve("labels", labels)

    def work():
        client = JudgeClient(JudgeSettings(judge_url, judge_model, task=closed.task, as_of=as_of), timeout=timeout)
        started_at = utcnow()
        try:
            # Read, then close: the judge may take minutes, and a build must not wait for it.
            with reading(db_path, wait) as con:
                rows = queue_rows(con)
            with scoring_progress(f"asking the judge ({annotator})") as report:
                result = judge_queue(rows, client, closed, annotator, labels_dir, progress=report)
        finally:
            client.close()
        # The run's figures are recorded whatever its outcome (contract 13.1): health reads them.
        con = open_warehouse(db_path, read_only=False, wait=wait)
        try:
            run = record_run(
                con,
                result,
                started_at=started_at,
                finished_at=utcnow(),
                scorer_version=f"{judge_model}/prompt-{PROMPT_VERSION}",
                max_unusable=max_unusable,
            )
        finally:
            con.close()
        return rows, result, run

    # A run of the judge_label_queue job when the Dagster program runs this command (goldenset.hooks).
    rows, result, run = hooks.perform("judge_label", work, db=db_path, labels=labels_dir)
    if as_json:
        typer.echo(json.dumps(result.to_json()))
    else:
        _print(result, len(rows))
    _warn(result, len(rows))
    if result.refused:
        first = result.refused[0]
        raise GoldensetError(
            f"{len(result.refused)} label line(s) failed the label-line check and were not "
            f"written, the first ({first.query_id}, {first.doc_id}): {first.reason}: "
            f"{first.detail}; this is a bug in goldenset, please report it"
        )
    if result.scored and result.errors == result.scored:
        raise GoldensetError(f"the judge answered none of the {result.scored} rows asked: {result.problems[0].detail}")
    raise_if_incomplete(run, max_unusable)


def _warn(result, queued: int) -> None:
    from goldenset.cli.shared import err

    if not queued:
        err.print("the labelling queue is empty: run `goldenset pool` first", markup=False)
    if result.unasked:
        err.print(
            f"WARNING: {result.unasked} queue row(s) not asked: no loaded corpus snapshot holds their version",
            markup=False,
        )


def _print(result, queued: int) -> None:
    from goldenset.cli.shared import out

    answers = result.answers
    out.print(
        f"judge {result.annotator}: asked {result.scored} of {queued} queue rows; {result.labels_written} "
        f"label line{'s' if result.labels_written != 1 else ''} written to {result.file}",
        markup=False,
        soft_wrap=True,
    )
    out.print(
        f"health: {result.invalid['hallucinated_span']} hallucinated span"
        f"{'s' if result.invalid['hallucinated_span'] != 1 else ''} in {answers} answer"
        f"{'s' if answers != 1 else ''} ({result.hallucinated_span_share:.1%}); {result.errors} transport "
        f"error{'s' if result.errors != 1 else ''}",
        markup=False,
        soft_wrap=True,
    )
    t = Table(title="invalid answers by reason", title_justify="left")
    t.add_column("reason")
    t.add_column("answers", justify="right")
    for reason, n in result.invalid.items():
        t.add_row(reason, str(n))
    out.print(t)
    if result.problems:
        p = Table(title="rows without a label line", title_justify="left")
        for col in ("query_id", "doc_id", "reason", "detail"):
            p.add_column(col, overflow="fold")
        for x in result.problems:
            p.add_row(x.query_id, x.doc_id, x.reason, x.detail)
        out.print(p)
