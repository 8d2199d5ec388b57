"""Where things are: flags, else environment, else the defaults the README names."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_LOGS = "var/logs"
DEFAULT_CORPUS = "var/corpus.jsonl"
DEFAULT_DB = "var/goldenset.duckdb"


@dataclass(frozen=True)
class Paths:
    logs: Path
    corpus: Path
    db: Path


def resolve_paths(logs: str | None = None, corpus: str | None = None, db: str | None = None) -> Paths:
    """Flag value if given, else GOLDENSET_LOGS / _CORPUS / _DB, else the default under var/."""
    return Paths(
        logs=Path(logs or os.environ.get("GOLDENSET_LOGS") or DEFAULT_LOGS),
        corpus=Path(corpus or os.environ.get("GOLDENSET_CORPUS") or DEFAULT_CORPUS),
        db=Path(db or os.environ.get("GOLDENSET_DB") or DEFAULT_DB),
    )
