"""`goldenset labels`: bring labels made elsewhere into LABELS as label lines (contract 7.2, 7.6).

`import FILE` reads a Label Studio JSON export (of tasks made by `goldenset pool export
--format label-studio`) or a JSONL file of label lines, prints each rejected item with its
reason, and appends the valid ones to LABELS/dt=<UTC today>/import-<annotator>.jsonl. Exit 0
when some item was valid, 1 when none was. More commands (`agreement`) join this group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from goldenset import settings
from goldenset.errors import GoldensetError

app = typer.Typer(
    name="labels",
    help="Work with label lines: import them from Label Studio or JSONL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: the README's CLI reference is generated from it and must not depend on the terminal.
    rich_markup_mode=None,
)


@app.callback()
def _group() -> None:
    """Work with label lines."""
    # A callback keeps `labels` a command group, so `import` stays a subcommand while it is the only one.


@app.command("import")
def import_cmd(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="Label Studio JSON export, or JSONL of label lines.",
                                         show_default=False)],
    annotator: Annotated[str | None, typer.Option(
        "--annotator", help="Name every label with this annotator (letters, digits, '.', '_', '-'); default: "
                            "Label Studio's user email, sanitised, or the lines' own annotator.")] = None,
    labels: Annotated[str | None, typer.Option(
        "--labels", help="Label-file directory (else GOLDENSET_LABELS, else HOME/labels).")] = None,
    rubric: Annotated[str | None, typer.Option(
        "--rubric", help="Rubric YAML file (else GOLDENSET_RUBRIC, else HOME/rubric.yaml).")] = None,
) -> None:
    """Turn a Label Studio export or label JSONL into label lines; print each rejected item with its reason."""
    from goldenset.labelling.labelstudio import import_labels
    from goldenset.labelling.rubric import load_rubric

    closed = load_rubric(settings.resolve("rubric", rubric)).require_closed()
    result = import_labels(file, rubric=closed, labels_dir=settings.resolve("labels", labels), annotator=annotator)
    for reject in result.rejects:
        typer.echo(reject.line())
    for line in result.summary():
        typer.echo(line)
    if not result.ok:
        raise GoldensetError(result.failure())
