"""`goldenset labels`: bring labels made elsewhere into LABELS as label lines (contract 7.2, 7.6).

`import FILE` reads a Label Studio JSON export (of tasks made by `goldenset pool export
--format label-studio`) or a JSONL file of label lines, prints each rejected item with its
reason, and appends the valid ones to LABELS/dt=<UTC today>/import-<annotator>.jsonl. Exit 0
when some item was valid, 1 when none was. More commands (`agreement`) join this group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from goldenset import hooks, settings
from goldenset.cli.options import DbOpt, LabelsOpt, RubricOpt, WaitOpt
from goldenset.cli.shared import command_group
from goldenset.errors import GoldensetError

app = command_group("labels", "Work with label lines: import them from Label Studio or JSONL, measure agreement.")


@app.callback()
def _group() -> None:
    """Work with label lines."""
    # A callback keeps `labels` a command group, so `import` stays a subcommand while it is the only one.


@app.command("import")
def import_cmd(
    file: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="Label Studio JSON export, or JSONL of label lines.", show_default=False),
    ],
    annotator: Annotated[
        str | None,
        typer.Option(
            "--annotator",
            help="Name every label with this annotator (letters, digits, '.', '_', '-'); default: "
            "Label Studio's user email, sanitised, or the lines' own annotator.",
        ),
    ] = None,
    labels: LabelsOpt = None,
    rubric: RubricOpt = None,
) -> None:
    """Turn a Label Studio export or label JSONL into label lines; print each rejected item with its reason."""
    from goldenset.labelling.labelstudio import import_labels
    from goldenset.labelling.rubric_set import load_rubrics

    closed = load_rubrics(settings.resolve("rubric", rubric)).require_closed()
    labels_dir = settings.resolve("labels", labels)
    # A run of the import_labels job when the Dagster program runs this command (goldenset.hooks).
    result = hooks.perform(
        "labels_import",
        lambda: import_labels(file, rubric=closed, labels_dir=labels_dir, annotator=annotator),
        labels=labels_dir,
    )
    for reject in result.rejects:
        typer.echo(reject.line())
    for line in result.summary():
        typer.echo(line)
    if not result.ok:
        raise GoldensetError(result.failure())


@app.command("agreement")
def agreement_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print the contract's one JSON object.")] = False,
    details: Annotated[
        bool,
        typer.Option("--details", help="With --json: add the breakdown of disagreements by decided_by and by project."),
    ] = False,
    db: DbOpt = None,
    rubric: RubricOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Cohen's kappa between annotators and against the agent's verdicts, and the pairs people disagree on."""
    import json

    from goldenset.cli.shared import reading
    from goldenset.labelling.agreement import agreement_report, disagreement_breakdown
    from goldenset.labelling.agreement_notes import agreement_notes
    from goldenset.labelling.rubric_set import load_rubrics
    from goldenset.labelling.store import agreement_inputs

    closed = load_rubrics(settings.resolve("rubric", rubric)).require_closed().label_grades()
    with reading(settings.resolve("db", db), wait) as con:
        inputs = agreement_inputs(con)
    report: dict[str, Any] = agreement_report(inputs.lines, inputs.agent_labels, inputs.human_labels, closed)
    notes = agreement_notes(report, inputs.lines, inputs.agent_labels, inputs.log_judged_pairs)
    breakdown = disagreement_breakdown(inputs.lines)
    if as_json:
        # Contract 7.5's three keys, then `notes`: why a table is empty and what would fill it.
        report = {**report, "notes": [n.to_json() for n in notes]}
        if details:
            report = {
                **report,
                "breakdown": {
                    "total": breakdown.total,
                    "by_decided_by": {c.key: c.n for c in breakdown.by_decided_by},
                    "by_project": {c.key: c.n for c in breakdown.by_project},
                    "annotator_pairs": [
                        {
                            "a": p.a,
                            "b": p.b,
                            "shared": p.shared,
                            "pairs": [{"query_id": r.query_id, "doc_id": r.doc_id} for r in p.pairs],
                        }
                        for p in breakdown.annotator_pairs
                    ],
                },
            }
        typer.echo(json.dumps(report, ensure_ascii=False))
        return
    _print_agreement(report, breakdown, inputs.build_id, {n.table: n.line() for n in notes})


def _print_agreement(report: dict, breakdown, build_id: int, notes: dict[str, str]) -> None:
    from rich.table import Table

    from goldenset.cli.shared import out

    def fmt(v) -> str:
        return "n/a" if v is None else f"{v:.4f}"

    t = Table(title=f"agreement between annotators (labels as build {build_id} read them)", title_justify="left")
    for col in ("a", "b", "n", "po", "pe", "kappa"):
        t.add_column(col, justify="left" if col in ("a", "b") else "right")
    for e in report["annotators"]:
        t.add_row(e["a"], e["b"], str(e["n"]), fmt(e["po"]), fmt(e["pe"]), fmt(e["kappa"]))
    out.print(t)
    if "annotators" in notes:
        out.print(notes["annotators"], markup=False, soft_wrap=True)
    a = Table(title="agent verdicts (helped) against labels (grade >= 1)", title_justify="left")
    for col in ("annotator", "n", "po", "pe", "kappa"):
        a.add_column(col, justify="left" if col == "annotator" else "right")
    for e in report["agent"]:
        a.add_row(e["annotator"], str(e["n"]), fmt(e["po"]), fmt(e["pe"]), fmt(e["kappa"]))
    out.print(a)
    if "agent" in notes:
        out.print(notes["agent"], markup=False, soft_wrap=True)
    if not report["disagreements"]:
        out.print("no pair where annotators at the same version disagree", markup=False)
        return
    for title, counts in (
        ("disagreements by decided_by", breakdown.by_decided_by),
        ("disagreements by project", breakdown.by_project),
    ):
        b = Table(title=title, title_justify="left")
        b.add_column("key")
        b.add_column("pairs", justify="right")
        for c in counts:
            b.add_row(c.key, str(c.n))
        out.print(b)
    d = Table(title=f"{len(report['disagreements'])} pair(s) annotators disagree on", title_justify="left")
    d.add_column("query_id")
    d.add_column("doc_id")
    d.add_column("labels")
    for e in report["disagreements"]:
        d.add_row(e["query_id"], e["doc_id"], ", ".join(f"{k}: {v}" for k, v in e["labels"].items()))
    out.print(d)
