"""The installed `goldenset` program: the library's commands plus `build` and `demo`.

`build` and `demo` run the Dagster jobs in-process against the instance the UI
shows, so they live here, in the orchestration package, and join the program
through the library's one hook, `create_app(register=...)`; every other command
is `goldenset.cli`'s. Those that change an asset (`pool`, `bench run`, `traces import`,
`labels import`, `judge label`, `forget`) hand their change to this program, which runs
it as a run of the command's job (`goldenset.hooks`, `goldenset_dagster.commands`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from goldenset import hooks, settings
from goldenset.checks import BuildChecks
from goldenset.cli.app import create_app
from goldenset.cli.app import main as run_app
from goldenset.cli.golden import print_status
from goldenset.cli.options import CorpusOpt, DbOpt, LabelsOpt, LogsOpt, RubricOpt, WaitOpt
from goldenset.cli.shared import err, out
from goldenset.labelling.judge_gate import JudgeGate, deprecated_settings
from goldenset.neardup import NEAR_DUPLICATE_THRESHOLD
from goldenset.settings import Settings


def build(
    logs: LogsOpt = None,
    corpus: CorpusOpt = None,
    db: DbOpt = None,
    labels: LabelsOpt = None,
    rubric: RubricOpt = None,
    near_duplicates: Annotated[bool, typer.Option(help="Merge near-duplicate tasks by embedding similarity.")] = False,
    threshold: Annotated[
        float, typer.Option(help="Cosine threshold for --near-duplicates.")
    ] = NEAR_DUPLICATE_THRESHOLD,
    block_rejected_share: Annotated[
        float, typer.Option(help="Refuse to publish above this rejected-line share.")
    ] = BuildChecks.block_rejected_share,
    judge_min_pairs: Annotated[
        int | None,
        typer.Option(
            help="A judge's labels count only with at least this many pairs measured against the human label "
            "on the audit (else GOLDENSET_JUDGE_MIN_PAIRS, else 50)."
        ),
    ] = None,
    judge_min_kappa: Annotated[
        float | None,
        typer.Option(
            help="... and the lower bound of its Cohen's kappa's 95% interval at least this "
            "(else GOLDENSET_JUDGE_MIN_KAPPA, else 0.6)."
        ),
    ] = None,
    judge_audits: Annotated[
        int | None,
        typer.Option(
            help="The judge's gate reads the latest this many audits (pool --audit); 0 reads every audit "
            "(else GOLDENSET_JUDGE_AUDITS, else 0)."
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Stage log days as Parquet in this many parallel processes before loading them "
            "(else GOLDENSET_INGEST_WORKERS, else 0: ingest straight into the warehouse)."
        ),
    ] = None,
    new_source: Annotated[
        bool,
        typer.Option(
            "--new-source",
            help="LOGS or LABELS is meant to be another folder than the one the warehouse was built from "
            "(files with the same relative path and bytes are recognised, not ingested twice).",
        ),
    ] = False,
    accept_rubric_change: Annotated[
        bool,
        typer.Option(
            "--accept-rubric-change",
            help="Go on with a rubric edit that makes label lines invalid or changes a label's grade.",
        ),
    ] = False,
    ingest_forgotten: Annotated[
        bool,
        typer.Option(
            "--ingest-forgotten",
            help="Ingest the files `goldenset forget` removed whose bytes have changed since (without it, "
            "the build refuses naming them; unchanged ones stay left out).",
        ),
    ] = False,
    new_warehouse: Annotated[
        bool,
        typer.Option(
            "--new-warehouse",
            help="Make the warehouse --db names although this home has another one (without it, a --db "
            "that does not exist is refused naming the home's warehouses).",
        ),
    ] = False,
    wait: WaitOpt = None,
    trigger: Annotated[str, typer.Option(hidden=True)] = "manual",
) -> None:
    """Ingest new and changed log files, snapshot the corpus, rebuild the golden set (trigger manual)."""
    from goldenset_dagster.runner import run_refresh

    resolved = Settings.resolve(
        logs=logs, corpus=corpus, db=db, labels=labels, rubric=rubric, lock_timeout=wait, ingest_workers=workers
    )
    gate = JudgeGate.from_environment(judge_min_pairs, judge_min_kappa, judge_audits)
    for warning in deprecated_settings():
        err.print(f"WARNING: {warning}", markup=False, soft_wrap=True)
    result = run_refresh(
        resolved,
        trigger=trigger,
        golden_set_config={
            "near_duplicates": near_duplicates,
            "near_duplicate_threshold": threshold,
            "block_rejected_share": block_rejected_share,
            "judge_min_pairs": gate.min_pairs,
            "judge_min_kappa": gate.min_kappa,
            "judge_audits": gate.audits,
        },
        notify=lambda msg: err.print(msg, markup=False, soft_wrap=True),
        new_source=new_source,
        accept_rubric_change=accept_rubric_change,
        new_warehouse=new_warehouse,
        ingest_forgotten=ingest_forgotten,
    )
    for warning in result.warnings:
        err.print(f"WARNING: {warning}", markup=False, soft_wrap=True)
    print_status(result.status, title=f"build {result.status.build.build_id} published")


def demo(
    root: Annotated[
        Path | None, typer.Option("--dir", help="Where the sample data and warehouse go (default: the goldenset home).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for the sample data.")] = 7,
    force: Annotated[bool, typer.Option(help="Replace a warehouse the demo did not make.")] = False,
) -> None:
    """Run the whole loop on sample data: build, reindex, rubric, pool, two annotators, merge, agreement, bench, calibrate."""
    from goldenset_dagster.demo import run_demo

    summary = run_demo(
        root or settings.home(), seed=seed, force=force, echo=lambda m: out.print(m, markup=False, soft_wrap=True)
    )
    print_status(summary.status, title=f"demo: build {summary.status.build.build_id} (labels merged)")
    typer.echo(summary.epilogue)


def register(app: typer.Typer) -> None:
    """Add `build` and `demo`; they come first in `--help`, before the library's commands and groups."""
    app.command()(build)
    app.command()(demo)


app = create_app(register)


def main(argv: list[str] | None = None) -> int:
    """Run the program with `argv`; return its exit code (errors already reported on stderr).

    A command that changes an asset runs as a run of its job (goldenset_dagster.commands).
    """
    from goldenset_dagster.commands import perform_as_run, running_command

    with hooks.performing(perform_as_run), running_command(sys.argv[1:] if argv is None else list(argv)):
        return run_app(argv, application=app)


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
