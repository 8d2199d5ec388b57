"""`goldenset rubric`: check a labelling rubric (contract 7.1).

`check FILE` prints the closure (`closed: N assignments, M labels`, or one line per
assignment that matches no label or several) and exits 0 when closed, 1 when open. An
invalid file raises RubricError, which goldenset.cli.app turns into "Error: ..." and exit 1.
`check FOLDER` (contract 9.5) checks every rubric of the folder and that no two claim one
project, printing `FILE (NAME, projects P, ...):` before each closure; exit 1 when any is open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from goldenset.cli.shared import command_group
from goldenset.labelling.rubric import load_rubric
from goldenset.labelling.rubric_set import load_rubrics

app = command_group(
    "rubric", "Check a labelling rubric: every pass/fail assignment of its dimensions must match exactly one label."
)


@app.callback()
def _group() -> None:
    """Check a labelling rubric."""
    # A callback keeps `rubric` a command group, so `check` is a subcommand even while it is the only one.


@app.command("check")
def check(
    file: Annotated[
        Path, typer.Argument(metavar="FILE", help="The rubric YAML file, or a folder of them.", show_default=False)
    ],
) -> None:
    """Print the rubric's closure; exit 0 when closed, 1 when some assignment matches no label or several."""
    if not file.is_dir():
        report = load_rubric(file).closure()
        for line in report.lines():
            typer.echo(line)
        if not report.closed:
            raise typer.Exit(report.exit_code)
        return
    worst = 0
    for r in load_rubrics(file):
        covers = "projects " + ", ".join(r.projects) if r.projects is not None else "every other project"
        typer.echo(f"{r.source} ({r.name}, {covers}):")
        report = r.closure()
        for line in report.lines():
            typer.echo(f"  {line}")
        worst = max(worst, report.exit_code)
    if worst:
        raise typer.Exit(worst)
