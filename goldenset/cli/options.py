"""Command-line options that several commands share, declared once (typer `Annotated` aliases)."""

from __future__ import annotations

from typing import Annotated

import typer

LogsOpt = Annotated[
    str | None, typer.Option("--logs", help="Serve-log directory (else GOLDENSET_LOGS, else HOME/logs).")
]
CorpusOpt = Annotated[
    str | None, typer.Option("--corpus", help="Corpus snapshot file (else GOLDENSET_CORPUS, else HOME/corpus.jsonl).")
]
DbOpt = Annotated[str | None, typer.Option("--db", help="DuckDB file (else GOLDENSET_DB, else HOME/goldenset.duckdb).")]
LabelsOpt = Annotated[
    str | None, typer.Option("--labels", help="Label-file directory (else GOLDENSET_LABELS, else HOME/labels).")
]
RubricOpt = Annotated[
    str | None, typer.Option("--rubric", help="Rubric YAML file (else GOLDENSET_RUBRIC, else HOME/rubric.yaml).")
]
WaitOpt = Annotated[
    float | None,
    typer.Option(
        "--wait",
        help="Seconds to wait for another process writing the DuckDB file (else GOLDENSET_LOCK_TIMEOUT, else 30).",
    ),
]
JudgeUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-url",
        metavar="URL",
        envvar="GOLDENSET_JUDGE_URL",
        show_envvar=True,
        help="OpenAI-compatible server of the judge (API key: GOLDENSET_JUDGE_API_KEY).",
    ),
]
JudgeModelOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        metavar="M",
        envvar="GOLDENSET_JUDGE_MODEL",
        show_envvar=True,
        help="Model name the judge server serves.",
    ),
]
