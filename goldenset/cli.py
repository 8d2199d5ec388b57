"""The `goldenset` command line: parse, call one library function or job, report.

Errors are turned into exit codes in one place (`main`): 1 error, 2 usage,
3 golden set too old, 4 a retrieval component down.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from goldenset.errors import GoldensetError
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
out = Console()
err = Console(stderr=True)

LogsOpt = Annotated[Optional[str], typer.Option("--logs", help="Serve-log directory (else GOLDENSET_LOGS, else var/logs).")]
CorpusOpt = Annotated[Optional[str], typer.Option("--corpus", help="Corpus snapshot file (else GOLDENSET_CORPUS, else var/corpus.jsonl).")]
DbOpt = Annotated[Optional[str], typer.Option("--db", help="DuckDB file (else GOLDENSET_DB, else var/goldenset.duckdb).")]


@app.command()
def build(
    logs: LogsOpt = None,
    corpus: CorpusOpt = None,
    db: DbOpt = None,
    near_duplicates: Annotated[bool, typer.Option(help="Merge near-duplicate tasks by embedding similarity.")] = False,
    threshold: Annotated[float, typer.Option(help="Cosine threshold for --near-duplicates.")] = 0.92,
    block_rejected_share: Annotated[float, typer.Option(help="Refuse to publish above this rejected-line share.")] = 0.10,
    trigger: Annotated[str, typer.Option(hidden=True)] = "manual",
) -> None:
    """Ingest new and changed log files, snapshot the corpus, rebuild the golden set (trigger manual)."""
    from pipelines.runner import run_refresh

    paths = resolve_paths(logs, corpus, db)
    result = run_refresh(
        paths, trigger=trigger,
        golden_set_config={"near_duplicates": near_duplicates, "near_duplicate_threshold": threshold,
                           "block_rejected_share": block_rejected_share},
    )
    _print_status(result, title=f"build {result['build_id']} published")


@app.command()
def status(
    corpus: CorpusOpt = None,
    db: DbOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Build age, corpus drift since the build, funnel, rejected and orphan counts, relabel queue size."""
    from goldenset.status import golden_status
    from goldenset.warehouse import connect

    paths = resolve_paths(None, corpus, db)
    con = connect(paths.db, read_only=True)
    try:
        st = golden_status(con, paths.corpus)
    finally:
        con.close()
    if as_json:
        typer.echo(json.dumps(st, indent=1, default=str))
    else:
        _print_status(st, title=f"golden set: build {st['build_id']}")


@app.command()
def export(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write (created if missing).")],
    build_id: Annotated[Optional[int], typer.Option("--build", help="Build to export (default: the latest).")] = None,
    db: DbOpt = None,
) -> None:
    """Write the latest (or build N's) golden set as BEIR files plus TREC qrels, with a manifest."""
    from goldenset.export import export_build
    from goldenset.warehouse import connect

    con = connect(resolve_paths(None, None, db).db, read_only=True)
    try:
        res = export_build(con, out_dir, build_id)
    finally:
        con.close()
    typer.echo(f"exported build {res.build_id} to {res.out}: {res.n_queries} queries, "
               f"{res.n_labels} labels, {res.n_documents} documents")


@app.command()
def demo(
    root: Annotated[Path, typer.Option("--dir", help="Where the sample data and warehouse go.")] = Path("var/demo"),
    seed: Annotated[int, typer.Option(help="Seed for the sample data.")] = 7,
) -> None:
    """Generate realistic sample logs and corpus, build, reindex, and show what to query."""
    from pipelines.runner import run_demo

    summary = run_demo(root, seed=seed, echo=typer.echo)
    _print_status(summary["status"], title=f"demo: build {summary['status']['build_id']} (after reindex)")
    typer.echo(summary["epilogue"])


def _print_status(st: dict, title: str) -> None:
    t = Table(title=title, show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value")
    c = st["counts"]
    t.add_row("built at", f"{st['built_at']} ({st['trigger']}, {st['age_days']:.2f} days ago)")
    corpus = st["corpus"]
    t.add_row("corpus at build", corpus["fingerprint_at_build"][:16])
    if "drift_since_build" in corpus:
        flag = "  [yellow]above 5%[/yellow]" if corpus["drift_since_build"] > 0.05 else ""
        t.add_row("drift since build", f"{corpus['drift_since_build']:.1%}{flag}")
    elif "error" in corpus:
        t.add_row("drift since build", f"[red]{corpus['error']}[/red]")
    t.add_row("queries / projects", f"{c['n_queries']} / {c['n_projects']}")
    t.add_row("labels helped / noise / wrong", f"{c['n_helped']} / {c['n_noise']} / {c['n_wrong']}")
    t.add_row("rejected lines", f"{st['rejected_records']}{_breakdown(st['rejected_by_reason'])}")
    t.add_row("orphan verdicts", str(c["orphan_verdicts"]))
    t.add_row("verdicts on unserved items", str(c["unserved_item_verdicts"]))
    t.add_row("unjudged items", str(c["unjudged_items"]))
    t.add_row("relabel queue", f"{st['relabel_queue']}{_breakdown(st['relabel_queue_by_reason'])}")
    out.print(t)
    f = Table(title="filter funnel", title_justify="left")
    for col in ("step", "dropped", "judgments left", "units left"):
        f.add_column(col, justify="left" if col == "step" else "right")
    for s in st["funnel"]:
        f.add_row(s["step"], str(s["judgments_dropped"]), str(s["judgments_left"]), str(s["units_left"]))
    out.print(f)


def _breakdown(counts: dict[str, int]) -> str:
    return " (" + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")" if counts else ""


def _mount_bench() -> None:
    try:
        from goldenset.bench.cli import bench_app
    except ImportError:  # pragma: no cover - the benchmark is part of the package
        return
    app.add_typer(bench_app, name="bench")


_mount_bench()


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turning library errors into their exit codes."""
    try:
        app(args=argv, standalone_mode=False)
    except GoldensetError as exc:
        _report(exc)
        return exc.exit_code
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", None)
        return code if code is not None else (exc.code if isinstance(exc.code, int) else 0)
    except typer.Abort:
        err.print("Aborted.")
        return 1
    except Exception as exc:
        # Usage errors from the (vendored) click parser carry their own exit code, 2.
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            return exc.exit_code
        raise
    return 0


def _report(exc: GoldensetError) -> None:
    msg = str(exc)
    if msg.startswith("COMPONENT DOWN"):
        sys.stderr.write(msg + "\n")
    else:
        sys.stderr.write(f"Error: {msg}\n")


def entry() -> None:
    sys.exit(main())
