"""`goldenset traces`: retrieval spans in, serve and verdict lines out (contract section 14).

`import PATH --format otlp-json|openinference` reads span files (a file, or every
.jsonl/.json/.parquet under a folder), writes the lines under LOGS (judge label lines
under LABELS when the mapping has `judge:`), records the rejects in the warehouse
(`goldenset rejects --file 'traces/*'`), and prints one summary line per count. Exit 0
when something was imported or nothing was rejected; 1 when every record was rejected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from goldenset import settings
from goldenset.cli.options import DbOpt, LabelsOpt, LogsOpt, WaitOpt
from goldenset.cli.shared import command_group, open_warehouse
from goldenset.errors import GoldensetError

app = command_group("traces", "Import retrieval spans (OpenInference, OpenTelemetry GenAI) as serve and verdict lines.")


@app.callback()
def _group() -> None:
    """Import retrieval spans as serve and verdict lines."""
    # A callback keeps `traces` a command group, so `import` stays a subcommand.


@app.command("import")
def import_cmd(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH", help="Span file, or a folder of .jsonl/.json/.parquet span files.", show_default=False
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help="otlp-json (OTLP JSON export requests, one a line: the Collector's file exporter) or "
            "openinference (a Phoenix span table: JSON lines or Parquet; annotation rows beside it).",
        ),
    ],
    mapping: Annotated[
        Path | None,
        typer.Option("--mapping", metavar="FILE", help="Mapping YAML (project attribute, version key, labels)."),
    ] = None,
    logs: LogsOpt = None,
    labels: LabelsOpt = None,
    db: DbOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Turn retriever spans and their document annotations into serve and verdict lines under LOGS."""
    from goldenset.traces.importer import import_traces
    from goldenset.traces.mapping import load_mapping

    rules = load_mapping(mapping)
    labels_dir = settings.resolve("labels", labels) if rules.judge is not None else None
    con = open_warehouse(settings.resolve("db", db), read_only=False, wait=wait)
    try:
        result = import_traces(con, path, fmt, rules, settings.resolve("logs", logs), labels_dir)
    finally:
        con.close()
    for line in result.summary():
        typer.echo(line)
    if result.rejected and not (result.serves or result.verdicts or result.judge_labels):
        raise GoldensetError(
            f"nothing imported: all {sum(result.rejected.values())} records rejected; "
            "see `goldenset rejects --file 'traces/*'`"
        )
