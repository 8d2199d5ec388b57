"""`goldenset status`, `rejects`, `export` and `forget`: the top-level commands on the published golden set.

They are plain functions that `goldenset.cli.app` registers on the program; `print_status`
is also how `build` and `demo` (in the Dagster package) report.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from goldenset import hooks
from goldenset.cli.options import CorpusOpt, DbOpt, WaitOpt
from goldenset.cli.shared import err, open_warehouse, out, reading
from goldenset.errors import UsageError
from goldenset.settings import resolve_paths


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


def forget(
    logs: Annotated[
        str | None, typer.Option("--logs", metavar="GLOB", help="Log files to forget, relative to LOGS.")
    ] = None,
    labels: Annotated[
        str | None, typer.Option("--labels", metavar="GLOB", help="Label files to forget, relative to LABELS.")
    ] = None,
    undo: Annotated[
        str | None,
        typer.Option(
            "--undo",
            metavar="GLOB",
            help="Take back the forget of the matching files (either kind): builds ingest them again.",
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Do it without asking.")] = False,
    db: DbOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Remove every row of the matching ingested files, in one transaction (the files are not touched).

    The files are recorded as forgotten: every later build leaves them out while they hold the
    same bytes, refuses when their bytes changed (build --ingest-forgotten takes them in), and
    `--undo GLOB` takes the forget back. GLOB follows shell rules and is matched against the path
    relative to the root (`dt=2026-11-*/*`; `*` also crosses `/`).
    """
    from goldenset.sources import forget_files, plan_forget

    if sum(x is not None for x in (logs, labels, undo)) != 1:
        raise UsageError("forget takes exactly one of --logs GLOB, --labels GLOB or --undo GLOB")
    path = resolve_paths(db=db).db
    if undo is not None:
        typer.echo(_undo(path, undo, wait))
        return
    kind = "logs" if logs is not None else "labels"
    pattern = logs if logs is not None else (labels or "")
    with reading(path, wait) as con:
        plan = plan_forget(con, kind, pattern)
    if not plan.files:
        typer.echo(f"no ingested {kind} file matches {pattern!r}; nothing removed")
        return
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"would remove {plan.line()}; add --yes to do it (stdin is not a terminal to ask)")
        if not typer.confirm(f"remove {plan.line()}?", err=True):
            raise typer.Exit(1)

    def work():
        con = open_warehouse(path, read_only=False, wait=wait)
        try:
            return forget_files(con, kind, pattern)
        finally:
            con.close()

    # A run of the forget_files job when the Dagster program runs this command (goldenset.hooks).
    done = hooks.perform("forget", work, db=path)
    typer.echo(
        f"removed {done.line()}; every build leaves these files out while they hold the same bytes "
        f"(`goldenset forget --undo {shlex.quote(pattern)}` takes it back)"
    )


def _undo(path: Path, pattern: str, wait: float | None) -> str:
    """Take back the forget of the files matching `pattern`; the line that says what was taken back."""
    from goldenset.forgotten import take_back
    from goldenset.warehouse import missing_warehouse, transaction

    if not pattern:
        raise UsageError("forget --undo needs a non-empty GLOB (relative to the root, e.g. 'dt=2026-11-*/*')")
    if not Path(path).exists():
        raise missing_warehouse(Path(path))
    con = open_warehouse(path, read_only=False, wait=wait)
    try:
        with transaction(con):
            taken = take_back(con, pattern)
    finally:
        con.close()
    if not taken:
        return f"no forgotten file matches {pattern!r}; nothing taken back"
    counts = ", ".join(f"{kind} {len(files)}" for kind, files in taken.items())
    n = sum(len(files) for files in taken.values())
    return f"took back the forget of {n} file(s) ({counts}); the next build ingests them again where they are"


def print_status(st, title: str) -> None:
    """The status table and the funnel, as `status` and `build` print them.

    Every count is `st.counts` (goldenset.counts), the figures `status --json` and the Dagster
    metadata show under the same keys; shares print as percentages (docs/reference/counts.md).
    """
    b, c = st.build, st.counts
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
    for kind, root in st.roots.items():
        t.add_row(f"{kind} root", root)
    if b.rubric_sha256:
        t.add_row("rubric", f"{st.rubric_name or '(name not recorded)'} ({b.rubric_sha256[:16]})")
    t.add_row("queries / projects", f"{b.n_queries} / {b.n_projects}")
    t.add_row("golden rows", str(c.golden_rows))
    t.add_row("log labels helped / noise / wrong", f"{b.n_helped} / {b.n_noise} / {b.n_wrong}")
    if b.n_human_labels or b.human_labels_unused or c.lines.label_lines_read:
        t.add_row(
            "human labels (unused / overriding a log label)",
            f"{b.n_human_labels} ({b.human_labels_unused} / {b.log_labels_overridden})",
        )
    if b.n_judge_labels or b.judge_labels_held_back:
        t.add_row("judge labels (held back)", f"{b.n_judge_labels} ({b.judge_labels_held_back})")
    judges = [(j["annotator"], f"admitted: {j['figures']}") for j in st.judges_admitted]
    judges += [(j["annotator"], f"held back: {j['why']}") for j in st.judges_held_back]
    for annotator, text in sorted(judges, key=lambda row: row[0]):  # one row per judge, by annotator (13.3)
        t.add_row(f"judge {annotator}", text)
    for h in st.judge_health:
        for w in h["warnings"]:
            t.add_row("judge health", f"WARN {w}")
    _rejected_rows(t, c)
    t.add_row("orphan verdicts", str(b.orphan_verdicts))
    t.add_row("verdicts on unserved items", str(b.unserved_item_verdicts))
    t.add_row("unjudged items", str(b.unjudged_items))
    t.add_row("relabel queue", f"{c.relabel_queue}{_breakdown(c.relabel_queue_by_reason)}")
    if c.labelling_queue:
        t.add_row("labelling queue", f"{c.labelling_queue}{_breakdown(c.labelling_queue_by_reason)}")
    if c.ingested_since_build:
        t.add_row(
            "ingested since the build",
            "[yellow]lines were ingested since this build: the lines' counts are the warehouse's now, the rest "
            "this build's (`goldenset build` brings them together)[/yellow]",
        )
    out.print(t)
    f = Table(title="funnel: lines read to golden rows", title_justify="left")
    for col in ("step", "unit", "count", "left", "units left"):
        f.add_column(col, justify="left" if col in ("step", "unit") else "right")
    for row in c.funnel:
        f.add_row(
            row.step,
            row.unit,
            str(row.count),
            "" if row.left is None else str(row.left),
            "" if row.units_left is None else str(row.units_left),
        )
    out.print(f)


def _rejected_rows(t: Table, c) -> None:
    """Rejected lines: the total (`rejected_records`), then each source by reason."""
    q = c.quarantine
    by = q.by_source()
    listed = "  (`goldenset rejects` lists them)" if q.rejected_records else ""
    t.add_row(
        "rejected lines",
        f"{q.rejected_records} = log {q.log_lines_rejected} + label {q.label_lines_rejected} "
        f"+ trace {q.trace_records_rejected}{listed}",
    )
    t.add_row("  log lines rejected", f"{q.log_lines_rejected} of {c.lines.log_lines_read} read{_breakdown(by['log'])}")
    if c.lines.label_lines_read or q.label_lines_rejected:
        held = (
            f"; {q.label_lines_held_back} held back until a snapshot holds their version"
            if q.label_lines_held_back
            else ""
        )
        t.add_row(
            "  label lines rejected",
            f"{q.label_lines_rejected} of {c.lines.label_lines_read} read{_breakdown(by['label'])}{held}",
        )
    if q.trace_records_rejected:
        t.add_row("  trace records rejected", f"{q.trace_records_rejected}{_breakdown(by['trace'])}")


def _breakdown(counts: dict[str, int]) -> str:
    return " (" + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")" if counts else ""


def explain(
    query: Annotated[str | None, typer.Argument(metavar="QUERY_ID", help="The query's 16-hex-digit id.")] = None,
    task: Annotated[
        str | None,
        typer.Option(
            "--task", metavar="TEXT", help="The query by its text (case, spacing and full-width forms do not matter)."
        ),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", metavar="P", help="With --task: the project, when several served it.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object (what the explorer shows).")] = False,
    db: DbOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Why a query is (not) in the golden set: its serves, each filter's decision, labels, pools, runs."""
    from goldenset.explain import explain as explain_query
    from goldenset.explain import explain_lines, resolve_query

    if project is not None and task is None:
        raise UsageError("--project goes with --task; give --task TEXT too, or a QUERY_ID alone")
    with reading(resolve_paths(db=db).db, wait) as con:
        found = explain_query(con, resolve_query(con, query, task, project))
    if as_json:
        typer.echo(json.dumps(found, indent=1, ensure_ascii=False))
    else:
        for line in explain_lines(found):
            out.print(line, markup=False, highlight=False, soft_wrap=True)


COMMANDS = (status, rejects, export, forget, explain)
