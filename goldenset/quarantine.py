"""Quarantined lines: what `goldenset rejects` lists (contract section 1, `rejected_records`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from goldenset.connection import Connection
from goldenset.errors import UsageError

DEFAULT_WIDTH = 160


@dataclass(frozen=True)
class Reject:
    """One quarantined line (or unreadable file)."""

    source_file: str
    line: int | None
    reason: str
    raw: str | None
    detail: str | None
    rejected_at: datetime

    def raw_cut(self, width: int = DEFAULT_WIDTH) -> str:
        """The raw line on one line, cut to `width` characters (an ellipsis marks a cut)."""
        text = (self.raw or "").replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
        return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def list_rejects(
    con: Connection, *, reason: str | None = None, file: str | None = None, limit: int | None = 50
) -> tuple[list[Reject], int]:
    """Rejected lines in (file, line) order, filtered by reason and file (a glob); and how many match.

    `file` matches `source_file` (relative to LOGS, label files under `labels/`) as a
    glob (`dt=2026-11-*/*`), or exactly.
    """
    if limit is not None and limit < 0:
        raise UsageError(f"--limit must be 0 or more, got {limit}")
    where, params = [], []
    if reason:
        where.append("reason = ?")
        params.append(reason)
    if file:
        where.append("(source_file = ? OR source_file GLOB ?)")
        params += [file, file]
    clause = (" WHERE " + " AND ".join(where)) if where else ""
    total = con.execute("SELECT count(*) FROM rejected_records" + clause, params).fetchall()[0][0]
    rows = con.execute(
        "SELECT source_file, line, reason, raw, detail, rejected_at FROM rejected_records"
        + clause
        + " ORDER BY source_file, line NULLS FIRST, reason"
        + (" LIMIT ?" if limit is not None else ""),
        params + ([limit] if limit is not None else []),
    ).fetchall()
    return [Reject(*r) for r in rows], int(total)


def known_reasons(con: Connection) -> list[str]:
    """The reasons present in the quarantine, for a helpful error on a mistyped --reason."""
    return [r[0] for r in con.execute("SELECT DISTINCT reason FROM rejected_records ORDER BY 1").fetchall()]
