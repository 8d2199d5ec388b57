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

from goldenset import hooks, settings
from goldenset.cli.options import DbOpt, LabelsOpt, LogsOpt, WaitOpt
from goldenset.cli.shared import LOOPBACK_NAMES, bind_socket, command_group, is_loopback, open_warehouse
from goldenset.errors import GoldensetError, UsageError

app = command_group(
    "traces",
    "Import or receive retrieval spans (OpenInference, OpenTelemetry GenAI) as serve and verdict lines.",
)


@app.callback()
def _group() -> None:
    """Import or receive retrieval spans as serve and verdict lines."""
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
    db_path, logs_dir = settings.resolve("db", db), settings.resolve("logs", logs)

    def work():
        con = open_warehouse(db_path, read_only=False, wait=wait)
        try:
            return import_traces(con, path, fmt, rules, logs_dir, labels_dir)
        finally:
            con.close()

    # A run of the import_trace_export job when the Dagster program runs this command (goldenset.hooks).
    result = hooks.perform("traces_import", work, db=db_path, logs=logs_dir, labels=labels_dir)
    for line in result.summary():
        typer.echo(line)
    if result.rejected and not (result.serves or result.verdicts or result.judge_labels):
        raise GoldensetError(
            f"nothing imported: all {sum(result.rejected.values())} records rejected; "
            "see `goldenset rejects --file 'traces/*'`"
        )


@app.command("serve")
def serve_cmd(
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on; loopback by default, so only this machine can send.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on (OTLP/HTTP's 4318; 0 picks a free one).")
    ] = 4318,
    token_file: Annotated[
        str | None,
        typer.Option(
            "--token-file",
            metavar="FILE",
            help="File holding a bearer token every request must carry (else GOLDENSET_TRACE_TOKEN_FILE; "
            "none: no token).",
        ),
    ] = None,
    mapping: Annotated[
        Path | None,
        typer.Option(
            "--mapping",
            metavar="FILE",
            help="Mapping YAML (else GOLDENSET_TRACE_MAPPING when that file exists, else the defaults).",
        ),
    ] = None,
    spool: Annotated[
        str | None,
        typer.Option(
            "--spool", metavar="DIR", help="Spool folder (else GOLDENSET_TRACE_SPOOL, else HOME/trace_spool)."
        ),
    ] = None,
    max_body: Annotated[
        int | None,
        typer.Option(
            "--max-body",
            metavar="BYTES",
            help="Largest request body, sent or decompressed (else GOLDENSET_TRACE_MAX_BODY, else 16 MiB).",
        ),
    ] = None,
    spool_limit: Annotated[
        int | None,
        typer.Option(
            "--spool-limit",
            metavar="BYTES",
            help="Spool size past which requests get 503 (else GOLDENSET_TRACE_SPOOL_LIMIT, else 256 MiB).",
        ),
    ] = None,
    logs: LogsOpt = None,
    labels: LabelsOpt = None,
    db: DbOpt = None,
) -> None:
    """Receive OTLP/HTTP spans at /v1/traces and write them as `traces import` would (contract 14.8)."""
    from goldenset.traces.mapping import load_mapping
    from goldenset.traces.receiver import PATH, Receiver, ReceiverConfig, read_token, serve

    mapping_file = mapping if mapping is not None else settings.resolve("trace_mapping")
    rules = load_mapping(mapping_file if mapping is not None or mapping_file.is_file() else None)
    token_path = settings.text("trace_token_file", token_file)
    config = ReceiverConfig(
        spool=settings.resolve("trace_spool", spool),
        logs=settings.resolve("logs", logs),
        labels=settings.resolve("labels", labels) if rules.judge is not None else None,
        db=settings.resolve("db", db),
        mapping=rules,
        max_body=settings.count("trace_max_body", max_body),
        spool_limit=settings.count("trace_spool_limit", spool_limit),
        token=read_token(Path(token_path)) if token_path else None,
    )
    for flag, value in (("--max-body", config.max_body), ("--spool-limit", config.spool_limit)):
        if value < 1:
            raise UsageError(f"{flag} must be at least 1 byte, got {value}")
    receiver = Receiver(config, report=typer.echo)
    sock = bind_socket(host, port)
    try:
        receiver.start()
    except BaseException:
        sock.close()
        raise
    shown = f"[{host}]" if ":" in host else host

    def ready() -> None:
        typer.echo(f"receiving OTLP/HTTP spans at http://{shown}:{sock.getsockname()[1]}{PATH}")
        typer.echo(f"spool: {config.spool}; lines to {config.logs}/dt=<day>/traces.jsonl")
        if not is_loopback(host):
            who = "anyone who reaches it" if config.token is None else "anyone with the token who reaches it"
            typer.echo(f"WARNING: listening on {host}: {who} can send spans", err=True)
        typer.echo("Ctrl+C stops the receiver.")

    serve(receiver, sock, list(LOOPBACK_NAMES) if host in LOOPBACK_NAMES else None, ready)
