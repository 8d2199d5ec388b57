"""`goldenset pool`: fill the labelling queue from the rankers (contract 7.4), and export it.

`goldenset pool` alone runs the pool over the latest build and prints its report (a table
and the arithmetic, or `--json`); `goldenset pool export --out FILE` writes the queue for
annotators, as JSON Lines or as Label Studio tasks plus a labelling config. Library errors
propagate as GoldensetError subclasses; goldenset.cli.app turns them into "Error: ..." and
the exit code (1: no build yet, a ranker that fails, an open or invalid rubric; 2: an
unknown ranker or a bad option).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from goldenset import hooks, settings
from goldenset.cli.options import DbOpt, RubricOpt, WaitOpt
from goldenset.cli.shared import command_group
from goldenset.consoles import console

app = command_group(
    "pool",
    "Pool the rankers over the golden queries into the labelling queue, and export the queue.",
    # `goldenset pool` alone pools; its subcommands export the queue.
    no_args_is_help=False,
)


def _connect(db: str | None, wait: float | None, *, read_only: bool):
    from goldenset.warehouse import connect, missing_warehouse

    path = settings.resolve("db", db)
    if not path.exists():
        # Opening for writing would create an empty warehouse; say what to run instead.
        raise missing_warehouse(Path(path))
    err = console(stderr=True)
    return connect(
        path, read_only=read_only, wait=settings.lock_timeout(wait), notify=lambda msg: err.print(msg, markup=False)
    )


@app.callback(invoke_without_command=True)
def pool(
    ctx: typer.Context,
    rankers: Annotated[
        str | None,
        typer.Option(
            "--rankers",
            help="Rankers, comma-separated: lexical, dense, core (the reference retriever's parts and "
            "the whole of it) or a retriever as module:factory (default lexical,dense,core; none with --from-run).",
        ),
    ] = None,
    from_run: Annotated[
        list[str] | None,
        typer.Option(
            "--from-run",
            help="Pool what this stored benchmark run returned in its top --depth (its deciding row, as "
            "measured; the retriever is not run again); repeat for several. Combines with --rankers.",
        ),
    ] = None,
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy",
            help="Order of the pooled pairs: depth (best rank first), mtf (move-to-front), bandit "
            "(Thompson sampling over the rankers) or feedback (relevance feedback inside a query, the "
            "budget spread over queries by Thompson sampling); rounds resume from the state of the last "
            "pool. Default: feedback with --budget, depth without.",
        ),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            help="Pooled pairs queued this round at most, over all queries (stale and successor rows always).",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the bandit's and feedback's draws and of the --audit draw.")
    ] = 0,
    depth: Annotated[int, typer.Option("--depth", help="Documents asked of each ranker per query.")] = 5,
    db: DbOpt = None,
    index_dir: Annotated[
        Path | None,
        typer.Option(
            "--index-dir", help="Where the lexical index is cached (else GOLDENSET_BENCH_INDEX, else HOME/bench-index)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the pool's report as one JSON object.")] = False,
    wait: WaitOpt = None,
    rubric: RubricOpt = None,
    audit: Annotated[
        int | None,
        typer.Option(
            "--audit",
            help="Also draw a uniform random sample of this many golden queries and queue every pair of "
            "theirs the pool returned that no human labelled (reason audit), for prediction-powered estimates.",
        ),
    ] = None,
    active: Annotated[
        bool,
        typer.Option(
            "--active",
            help="Draw the --audit sample by the judge's uncertainty (--judge NAME): N is then the expected "
            "number of queries, each drawn with a stored probability the estimates weigh it by.",
        ),
    ] = False,
    judge: Annotated[
        str | None, typer.Option("--judge", help="The judge annotator whose labels set --active's probabilities.")
    ] = None,
) -> None:
    """Ask each ranker for its top documents on every golden query of the latest build, replace the
    labelling queue (stale, then successor, then audit, then pooled pairs) and print the pool's arithmetic."""
    if ctx.invoked_subcommand is not None:
        return
    from goldenset.labelling.audit import check_active
    from goldenset.labelling.pool import large_pool_note, run_pool
    from goldenset.labelling.rubric_set import load_rubrics

    # Contract 9.5: only pairs some rubric judges are queued; without a rubric yet, every pair is.
    rubric_path = settings.resolve("rubric", rubric)
    rubrics = load_rubrics(rubric_path).require_closed() if rubric_path.exists() else None

    def work():
        con = _connect(db, wait, read_only=False)
        try:
            # The names are checked after the build is found: with no build the lower exit code (1) wins.
            return run_pool(
                con,
                rankers=rankers if rankers is not None or from_run else "lexical,dense,core",
                depth=depth,
                index_dir=index_dir or settings.resolve("bench_index"),
                from_run=from_run,
                strategy=strategy,
                budget=budget,
                audit=audit,
                seed=seed,
                rubrics=rubrics,
                active_judge=check_active(active, judge),
            )
        finally:
            con.close()

    # A run of the pool_labelling_queue job when the Dagster program runs this command (goldenset.hooks).
    result = hooks.perform("pool", work, db=settings.resolve("db", db))
    note = large_pool_note(result, from_run or (), rankers=rankers, strategy=strategy, budget=budget)
    if note:
        console(stderr=True).print(note, markup=False, soft_wrap=True)
    if as_json:
        typer.echo(json.dumps(result.to_json()))
        return
    out = console()
    report = result.report
    t = Table(
        title=f"pool {result.pool_id} over golden build {result.build_id}: pairs returned and shared",
        title_justify="left",
    )
    t.add_column("ranker")
    t.add_column("returned", justify="right")
    for name in report.rankers:
        t.add_column(f"shared with {name}", justify="right")
    shared = {(a, b): n for a, b, n in report.shared}
    for a in report.rankers:
        cells = ["-" if a == b else str(shared.get((a, b), shared.get((b, a), 0))) for b in report.rankers]
        t.add_row(a, str(report.returned[a]), *cells)
    out.print(t)
    for line in report.lines():
        out.print(line, markup=False, soft_wrap=True)


@app.command("export")
def export(
    out: Annotated[
        Path, typer.Option("--out", help="File to write (Label Studio: its config goes to FILE.config.xml).")
    ],
    fmt: Annotated[
        str, typer.Option("--format", help="jsonl (one task a line) or label-studio (tasks JSON + labelling config).")
    ] = "jsonl",
    rubric: RubricOpt = None,
    db: DbOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Write the labelling queue for annotators, in priority order, with the rubric they label by."""
    from goldenset.labelling.queue_export import export_queue
    from goldenset.labelling.rubric_set import load_rubrics

    closed = load_rubrics(settings.resolve("rubric", rubric)).require_closed()
    con = _connect(db, wait, read_only=True)
    try:
        result = export_queue(con, out, closed, fmt)
    finally:
        con.close()
    for line in result.lines():
        typer.echo(line)


@app.command("report")
def report(
    leave_one_out: Annotated[
        bool,
        typer.Option(
            "--leave-one-out",
            help="For each ranker (a stored benchmark run), leave out the relevant documents only it found "
            "in its top --depth and measure every ranker again (Zobel 1998).",
        ),
    ] = False,
    run: Annotated[
        list[str] | None,
        typer.Option("--run", help="Benchmark run to take part; repeat (default: the newest run of each config)."),
    ] = None,
    depth: Annotated[int, typer.Option("--depth", help="Depth at which a ranker contributed its documents.")] = 5,
    metric: Annotated[str, typer.Option("--metric", help="Metric measured, e.g. map, ndcg@10, recall@24.")] = "map",
    db: DbOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    wait: WaitOpt = None,
) -> None:
    """How reusable the labels are: leave-one-run-out, the largest change of a metric and Kendall's tau."""
    from goldenset.bench.reusability import stored_leave_one_out
    from goldenset.errors import UsageError

    if not leave_one_out:
        raise UsageError("pool report needs --leave-one-out (the only report so far)")
    con = _connect(db, wait, read_only=True)
    try:
        result = stored_leave_one_out(con, run, depth=depth, metric=metric)
    finally:
        con.close()
    if as_json:
        typer.echo(json.dumps(result.to_json()))
        return
    out = console()
    t = Table(
        title=f"leave-one-out: {result.metric} over {result.queries} golden queries, contributions at depth {result.depth}",
        title_justify="left",
    )
    for col, justify in (
        ("left out", "left"),
        ("unique relevant", "right"),
        ("its own before", "right"),
        ("after", "right"),
        ("largest change", "right"),
        ("of", "left"),
        ("Kendall's tau", "right"),
    ):
        t.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in result.rows:
        t.add_row(
            r.ranker,
            str(r.unique_relevant),
            f"{r.own_before:.4f}",
            f"{r.own_after:.4f}",
            f"{r.largest_change:+.4f}",
            r.largest_change_ranker,
            f"{r.kendall_tau:.2f}",
        )
    out.print(t)
    out.print("A tau well below 1 says a ranker that fed no labels would be ranked unfairly by this set.", markup=False)
