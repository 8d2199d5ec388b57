"""The `goldenset` command line: parse, call one library function, report.

This module holds every command that needs no orchestration (status, rejects,
export, bench, ...); `goldenset_dagster.cli` adds `build` and `demo`, which run
the Dagster jobs in-process, and is the installed `goldenset` program. Errors
are turned into exit codes in one place (`main`): 1 error, 2 usage, 3 golden set
too old, 4 a retrieval component down.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from goldenset import progress, settings
from goldenset.commands.options import CorpusOpt, DbOpt, WaitOpt
from goldenset.errors import GoldensetError, InputError, UsageError
from goldenset.settings import resolve_paths

app = typer.Typer(
    name="goldenset",
    help="Keep a retrieval golden set current from serve logs, and benchmark retrieval against it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: the README's CLI reference is generated from it and must not depend on the terminal.
    rich_markup_mode=None,
)
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def open_warehouse(db: Path, *, read_only: bool, wait: float | None = None):
    """Open the warehouse, waiting (and saying so on stderr) while another process writes it."""
    from goldenset.warehouse import connect

    return connect(db, read_only=read_only, wait=settings.lock_timeout(wait))


@contextmanager
def reading(db: Path, wait: float | None = None) -> Iterator:
    """A read-only connection for the length of a block; a DuckDB failure inside it names the file."""
    import duckdb

    con = open_warehouse(db, read_only=True, wait=wait)
    try:
        yield con
    except duckdb.Error as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(
            f"warehouse {db} could not be read ({first}); if the file is damaged, restore it from a "
            "backup, or move it aside and build again from the logs"
        ) from None
    finally:
        con.close()


@app.command()
def status(
    corpus: CorpusOpt = None,
    db: DbOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    wait: WaitOpt = None,
) -> None:
    """Build age, corpus drift since the build, funnel, rejected and orphan counts, relabel queue size."""
    from goldenset.status import golden_status

    paths = resolve_paths(None, corpus, db)
    with reading(paths.db, wait) as con:
        st = golden_status(con, paths.corpus)
    if as_json:
        typer.echo(json.dumps(st.to_json(), indent=1, default=str))
    else:
        print_status(st, title=f"golden set: build {st.build.build_id}")


@app.command()
def rejects(
    reason: Annotated[str | None, typer.Option(help="Only this reason (e.g. invalid_json).")] = None,
    file: Annotated[
        str | None, typer.Option(help="Only this file, relative to LOGS (a glob: 'dt=2026-11-*/*').")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many lines (0: all).")] = 50,
    width: Annotated[int, typer.Option(help="Cut the raw line to this many characters.")] = 120,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per line (JSON Lines).")] = False,
    db: DbOpt = None,
    wait: WaitOpt = None,
) -> None:
    """List quarantined lines: file, line, reason and the raw line, cut to a width."""
    from goldenset.quarantine import known_reasons, list_rejects

    if width < 10:
        raise UsageError(f"--width must be at least 10, got {width}")
    with reading(resolve_paths(db=db).db, wait) as con:
        rows, total = list_rejects(con, reason=reason, file=file, limit=limit or None)
        reasons = known_reasons(con) if reason and not total else []
    if reason and not total and reasons:
        err.print(
            f"no line rejected as {reason!r}; reasons present: {', '.join(reasons)}", markup=False, soft_wrap=True
        )
    if as_json:
        for r in rows:
            typer.echo(
                json.dumps(
                    {
                        "source_file": r.source_file,
                        "line": r.line,
                        "reason": r.reason,
                        "detail": r.detail,
                        "raw": r.raw,
                    },
                    ensure_ascii=False,
                )
            )
        return
    t = Table(title=f"{len(rows)} of {total} rejected line(s)", title_justify="left")
    for col in ("file", "line", "reason", "detail", "raw"):
        t.add_column(col, overflow="fold" if col in ("detail", "raw") else "ellipsis")
    for r in rows:
        t.add_row(r.source_file, "" if r.line is None else str(r.line), r.reason, r.detail or "", r.raw_cut(width))
    out.print(t)
    if total > len(rows):
        out.print(
            f"{total - len(rows)} more: raise --limit (0 shows all) or filter with --reason / --file", markup=False
        )


@app.command()
def export(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write (created if missing).")],
    build_id: Annotated[int | None, typer.Option("--build", help="Build to export (default: the latest).")] = None,
    db: DbOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Write the latest (or build N's) golden set as BEIR files plus TREC qrels, with a manifest."""
    from goldenset.export import export_build

    with reading(resolve_paths(db=db).db, wait) as con:
        res = export_build(con, out_dir, build_id)
    typer.echo(
        f"exported build {res.build_id} to {res.out}: {res.n_queries} queries, "
        f"{res.n_labels} labels, {res.n_documents} documents"
    )


def print_status(st, title: str) -> None:
    """The status table and the funnel, as `status` and `build` print them."""
    b = st.build
    t = Table(title=title, show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value")
    t.add_row(
        "built at", f"{b.built_at:%Y-%m-%d %H:%M:%S} UTC ({b.trigger}, {b.computation}, {st.age_days:.2f} days ago)"
    )
    corpus = st.corpus
    t.add_row("corpus at build", f"{corpus.fingerprint_at_build[:16]} ({b.corpus_active_docs} active documents)")
    if corpus.drift_since_build is not None:
        flag = "  [yellow]above 5%[/yellow]" if corpus.drift_since_build > 0.05 else ""
        t.add_row("drift since build", f"{corpus.drift_since_build:.1%}{flag}")
    elif corpus.error:
        t.add_row("drift since build", f"[red]{corpus.error}[/red]")
    t.add_row("queries / projects", f"{b.n_queries} / {b.n_projects}")
    t.add_row("log labels helped / noise / wrong", f"{b.n_helped} / {b.n_noise} / {b.n_wrong}")
    if b.n_human_labels or b.human_labels_unused or b.label_lines_read:
        t.add_row(
            "human labels (unused / overriding a log label)",
            f"{b.n_human_labels} ({b.human_labels_unused} / {b.log_labels_overridden})",
        )
    if b.n_judge_labels or b.judge_labels_held_back:
        t.add_row("judge labels (held back)", f"{b.n_judge_labels} ({b.judge_labels_held_back})")
    for j in st.judges_held_back:
        t.add_row(f"judge {j['annotator']}", f"held back: {j['why']}")
    rejected = f"{st.rejected_records}{_breakdown(st.rejected_by_reason)}"
    if st.rejected_records:
        rejected += "  (`goldenset rejects` lists them)"
    t.add_row("rejected lines", rejected)
    t.add_row("orphan verdicts", str(b.orphan_verdicts))
    t.add_row("verdicts on unserved items", str(b.unserved_item_verdicts))
    t.add_row("unjudged items", str(b.unjudged_items))
    t.add_row("relabel queue", f"{st.relabel_queue}{_breakdown(st.relabel_queue_by_reason)}")
    if st.labelling_queue_by_reason:
        t.add_row(
            "labelling queue", f"{sum(st.labelling_queue_by_reason.values())}{_breakdown(st.labelling_queue_by_reason)}"
        )
    out.print(t)
    f = Table(title="filter funnel", title_justify="left")
    for col in ("step", "dropped", "judgments left", "units left"):
        f.add_column(col, justify="left" if col == "step" else "right")
    for s in st.funnel:
        f.add_row(s["step"], str(s["judgments_dropped"]), str(s["judgments_left"]), str(s["units_left"]))
    out.print(f)


def _breakdown(counts: dict[str, int]) -> str:
    return " (" + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")" if counts else ""


def _mount() -> None:
    from goldenset.bench.cli import bench_app
    from goldenset.commands import calibrate, judge, label, labels, pool, rubric

    app.add_typer(rubric.app, name="rubric")
    app.add_typer(pool.app, name="pool")
    app.add_typer(label.app, name="label")
    app.add_typer(labels.app, name="labels")
    app.add_typer(bench_app, name="bench")
    app.add_typer(calibrate.app, name="calibrate")
    app.add_typer(judge.app, name="judge")


_mount()


class RichReporter:
    """Progress bars on stderr for long steps when it is a terminal; notices on stderr always."""

    def __init__(self, console: Console):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = console
        self.bars = console.is_terminal
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.active = 0

    def start(self, description: str, total: int | None) -> object:
        if not self.bars:
            return None
        if self.active == 0:
            self.progress.start()
        self.active += 1
        return self.progress.add_task(description, total=total)

    def advance(self, handle: object, n: int) -> None:
        if handle is not None:
            self.progress.advance(handle, n)  # type: ignore[arg-type]

    def finish(self, handle: object) -> None:
        if handle is None:
            return
        self.progress.remove_task(handle)  # type: ignore[arg-type]
        self.active -= 1
        if self.active == 0:
            self.progress.stop()

    def notice(self, message: str) -> None:
        self.console.print(message, markup=False, highlight=False, soft_wrap=True)


def main(argv: list[str] | None = None, application: typer.Typer | None = None) -> int:
    """Run the app, turning library errors into their exit codes; no traceback reaches a user."""
    application = application or app
    previous = progress.set_reporter(RichReporter(err))
    try:
        # Without standalone mode click returns a command's exit code (typer.Exit(1)) instead
        # of exiting; it must not be lost (`rubric check` on an open rubric exits 1).
        code = application(args=argv, standalone_mode=False)
    except GoldensetError as exc:
        _report(exc)
        return exc.exit_code
    except typer.Exit as exc:
        return int(exc.exit_code)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    except (typer.Abort, KeyboardInterrupt):
        err.print("Aborted.")
        return 130
    except Exception as exc:
        # Usage errors from the (vendored) click parser carry their own exit code, 2.
        exit_code = getattr(exc, "exit_code", None)
        show = getattr(exc, "show", None)
        if callable(show) and isinstance(exit_code, int):
            show()
            return exit_code
        if isinstance(exc, OSError):
            sys.stderr.write(f"Error: {exc.strerror or exc}: {exc.filename or ''}\n".replace(": \n", "\n"))
            return 1
        sys.stderr.write(
            f"Error: unexpected {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}\n"
            "This is a bug in goldenset; please report it with the command you ran. "
            "GOLDENSET_DEBUG=1 shows the traceback.\n"
        )
        import os

        if os.environ.get("GOLDENSET_DEBUG"):
            raise
        return 1
    finally:
        progress.set_reporter(previous)
    return code if isinstance(code, int) else 0


def _report(exc: GoldensetError) -> None:
    msg = str(exc)
    if msg.startswith("COMPONENT DOWN"):
        sys.stderr.write(msg + "\n")
    else:
        sys.stderr.write(f"Error: {msg}\n")
