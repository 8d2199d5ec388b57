"""Every count a screen shows, computed once and named once (docs/reference/counts.md, contract 15.9).

`goldenset status` (its table and `--json`), the `golden_set` asset's metadata and checks, the
queue assets, the pool's report and the labelling page all read their counts from here, under
the same key: a count is one function and one name, so two screens cannot show two numbers for
one thing. The build writes its own record (`golden_builds`) with the same functions.

Decisions
---------
- **Rejected lines are the quarantine now**: the rows of `rejected_records`, what `goldenset
  rejects` lists, split by source and each named: `log_lines_rejected` (lines of log files:
  those rejected at ingest, by reason, and the later lines of a conflicting duplicate serve,
  found at build), `label_lines_rejected` (label lines rejected at ingest, and the lines
  *held back* as `unknown_document_version`, which join once a snapshot holds their version:
  `label_lines_held_back`), `trace_records_rejected` (spans and annotations a traces import
  could not turn into lines). `rejected_records` is their sum. Right after a build the
  quarantine is what the build saw; lines ingested by a later run whose build did not publish
  count here before any build has read them (`Counts.ingested_since_build` says so: the log
  changed since the build, or the label files differ from those it read).
- **The rejected share** (the blocking check) is of log lines rejected *at ingest*
  (`log_lines_rejected_at_ingest / log_lines_read`): a conflicting duplicate serve is found
  at build over every day, and counting it would block a build on one repeated serve_id in
  a small log. Each figure keeps its own name, so the check and `status` agree.
- **Conflicting duplicate serves** are counted with a window over every serve (seconds at
  millions of serves). A build counts them and empties `log_dirty`; once a build is
  committed every change to the log tables marks `log_dirty`, so while it is empty the
  latest build's count is current and is used instead.
- **Golden rows** (`golden_rows`) are the rows of `golden_set`: the funnel's last number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from goldenset.build_record import BuildRecord, FunnelStep
from goldenset.connection import Connection

CONFLICTING = "conflicting_duplicate_serve"
HELD_BACK = "unknown_document_version"
SOURCES = ("log", "label", "trace")
# The labelling queue's reasons in priority order (contract 7.4 and 12.1: goldenset.labelling.pool.ORDER).
QUEUE_REASONS = ("stale", "successor", "audit", "pooled")

# Label lines whose (doc_id, version) no snapshot of a committed build holds, nor (during a
# build) the snapshot being built: held back until one does (contract 7.2). The one
# definition, with `?` the snapshot a build is making (or, for a day's ingest, the current one).
HELD_BACK_WHERE = (
    "(h.doc_id, h.doc_version) NOT IN (SELECT doc_id, version FROM corpus_documents "
    "WHERE content_sha256 IN (SELECT corpus_content_sha256 FROM golden_builds) OR content_sha256 = ?)"
)
_HELD_BACK_SQL = "SELECT count(*) FROM human_labels h WHERE " + HELD_BACK_WHERE
_CONFLICTS_SQL = f"SELECT count(*) FROM rejected_records WHERE reason = '{CONFLICTING}'"


def _table_exists(con: Connection, name: str) -> bool:
    return bool(
        con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND table_name = ?", [name]
        ).fetchall()[0][0]
    )


@dataclass(frozen=True)
class Quarantine:
    """Rejected lines as the warehouse holds them, by source and reason (the rows of `rejected_records`)."""

    log: dict[str, int]  # reason -> log lines; conflicting_duplicate_serve included
    label: dict[str, int]  # reason -> label lines; unknown_document_version (held back) included
    trace: dict[str, int]  # reason -> trace records

    @property
    def log_lines_rejected(self) -> int:
        return sum(self.log.values())

    @property
    def conflicting_duplicate_serves(self) -> int:
        return self.log.get(CONFLICTING, 0)

    @property
    def log_lines_rejected_at_ingest(self) -> int:
        return self.log_lines_rejected - self.conflicting_duplicate_serves

    @property
    def label_lines_rejected(self) -> int:
        return sum(self.label.values())

    @property
    def label_lines_held_back(self) -> int:
        return self.label.get(HELD_BACK, 0)

    @property
    def label_lines_rejected_at_ingest(self) -> int:
        return self.label_lines_rejected - self.label_lines_held_back

    @property
    def trace_records_rejected(self) -> int:
        return sum(self.trace.values())

    @property
    def rejected_records(self) -> int:
        return self.log_lines_rejected + self.label_lines_rejected + self.trace_records_rejected

    @property
    def by_reason(self) -> dict[str, int]:
        """Every source's reasons added up, by reason in code-point order (what `rejected_records` groups to)."""
        out: dict[str, int] = {}
        for part in (self.log, self.label, self.trace):
            for reason, n in part.items():
                out[reason] = out.get(reason, 0) + n
        return dict(sorted(out.items()))

    def by_source(self) -> dict[str, dict[str, int]]:
        """{"log": {reason: n}, "label": {...}, "trace": {...}}, reasons in code-point order."""
        return {s: dict(sorted(getattr(self, s).items())) for s in SOURCES}


def _by_reason(con: Connection, table: str) -> dict[str, int]:
    # The table name is one of three constants, never input.
    sql = {
        "log_rejects": "SELECT reason, count(*) FROM log_rejects GROUP BY reason",
        "label_rejects": "SELECT reason, count(*) FROM label_rejects GROUP BY reason",
        "trace_rejects": "SELECT reason, count(*) FROM trace_rejects GROUP BY reason",
    }[table]
    return {r: int(n) for r, n in con.execute(sql).fetchall()}


def conflicting_serves(con: Connection, latest: BuildRecord | None) -> int:
    """Conflicting duplicate serves now: the latest build's count while nothing was ingested since it."""
    if latest is not None and not con.execute("SELECT EXISTS (SELECT 1 FROM log_dirty)").fetchall()[0][0]:
        return latest.conflicting_serves
    return int(con.execute(_CONFLICTS_SQL).fetchall()[0][0])


def label_lines_held_back(con: Connection, content_sha: str | None = None) -> int:
    """Label lines held back as unknown_document_version (`content_sha`: the snapshot a build is making)."""
    return int(con.execute(_HELD_BACK_SQL, [content_sha or ""]).fetchall()[0][0])


def quarantine(
    con: Connection,
    latest: BuildRecord | None,
    *,
    conflicting: int | None = None,
    content_sha: str | None = None,
) -> Quarantine:
    """The rejected lines now, by source and reason.

    A build passes its own `conflicting` count and the `content_sha` of the snapshot it is
    making (whose versions a label line may name); every other reader passes neither.
    """
    log = _by_reason(con, "log_rejects")
    n = conflicting if conflicting is not None else conflicting_serves(con, latest)
    if n:
        log[CONFLICTING] = log.get(CONFLICTING, 0) + n
    label = _by_reason(con, "label_rejects")
    held = label_lines_held_back(con, content_sha)
    if held:
        label[HELD_BACK] = label.get(HELD_BACK, 0) + held
    trace = _by_reason(con, "trace_rejects") if _table_exists(con, "trace_rejects") else {}
    return Quarantine(log, label, trace)


@dataclass(frozen=True)
class LinesRead:
    """Lines of every ingested file, blank ones included (log files, label files)."""

    log_lines_read: int
    label_lines_read: int


def lines_read(con: Connection) -> LinesRead:
    """Lines of every ingested log and label file (`lines_total`: blank lines included)."""
    log, label = con.execute(
        "SELECT (SELECT coalesce(sum(lines_total), 0) FROM log_files), "
        "(SELECT coalesce(sum(lines_total), 0) FROM label_files)"
    ).fetchall()[0]
    return LinesRead(int(log), int(label))


def relabel_queue_by_reason(con: Connection) -> dict[str, int]:
    """Size of relabel_queue by reason: golden_set's stale rows (one per stale label of the latest build)."""
    return {
        r: int(n)
        for r, n in con.execute(
            "SELECT stale_reason, count(*) FROM golden_set WHERE stale_reason IS NOT NULL GROUP BY 1 ORDER BY 1"
        ).fetchall()
    }


def labelling_queue_by_reason(con: Connection) -> dict[str, int]:
    """Size of labelling_queue by reason, in priority order (contract 7.4, 12.1).

    stale, successor and pooled always (0 included); audit, and any other reason, when queued.
    """
    held = {r: int(n) for r, n in con.execute("SELECT reason, count(*) FROM labelling_queue GROUP BY 1").fetchall()}
    return {
        r: held.get(r, 0)
        for r in (*QUEUE_REASONS, *sorted(set(held) - set(QUEUE_REASONS)))
        if r in ("stale", "successor", "pooled") or held.get(r)
    }


# --------------------------------------------------------------------------- the funnel


@dataclass(frozen=True)
class FunnelRow:
    """One step of the funnel from lines read to golden rows.

    `count` is what the step counts (lines read or rejected, judgments dropped, rows taken
    away or added); `left` the judgments or rows left after it, from `judged` on (None for
    the lines' steps); `units_left` the serves or queries left (filter steps only).
    """

    step: str
    unit: str
    count: int
    left: int | None = None
    units_left: int | None = None
    by_reason: dict[str, int] | None = None
    # no_positive under contract v5: the queries it kept by a log `helped` and by a human
    # positive alone, when the build's filter_funnel records the latter.
    queries_kept_by: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "unit": self.unit, "count": self.count, "left": self.left}
        if self.units_left is not None:
            out["units_left"] = self.units_left
        if self.by_reason is not None:
            out["by_reason"] = dict(self.by_reason)
        if self.queries_kept_by is not None:
            out["queries_kept_by"] = dict(self.queries_kept_by)
        return out


# Steps that take rows away from the running total (the rest add, or only count lines).
SUBTRACTED = frozenset({"always_served", "retired", "repeats", "no_positive", "log_rows_overridden"})


def full_funnel(build: BuildRecord, steps: list[FunnelStep], lines: LinesRead, q: Quarantine) -> list[FunnelRow]:
    """The funnel from the lines read to the rows of golden_set (contract 15.9).

    Lines: log lines read and rejected, label lines read and rejected, trace records
    rejected (each by reason). Then the build's `filter_funnel` steps (judged, each filter),
    then log rows overridden by a human or judge row (taken away), human rows and judge rows
    (added). The last row, `golden_rows`, is the running total: the rows of `golden_set`.
    """
    rows = [
        FunnelRow("log_lines_read", "lines", lines.log_lines_read),
        FunnelRow("log_lines_rejected", "lines", q.log_lines_rejected, by_reason=dict(sorted(q.log.items()))),
        FunnelRow("label_lines_read", "lines", lines.label_lines_read),
        FunnelRow("label_lines_rejected", "lines", q.label_lines_rejected, by_reason=dict(sorted(q.label.items()))),
        FunnelRow(
            "trace_records_rejected", "records", q.trace_records_rejected, by_reason=dict(sorted(q.trace.items()))
        ),
    ]
    left = 0
    for s in steps:
        if s.step == "judged":
            rows.append(FunnelRow(s.step, "judgments", s.judgments_left, s.judgments_left, s.units_left))
        else:
            rows.append(
                FunnelRow(s.step, "judgments", s.judgments_dropped, s.judgments_left, s.units_left, None, _kept_by(s))
            )
        left = s.judgments_left
    for step, n in (
        ("log_rows_overridden", build.log_labels_overridden),
        ("human_rows_added", build.n_human_labels),
        ("judge_rows_admitted", build.n_judge_labels),
    ):
        left = left - n if step in SUBTRACTED else left + n
        rows.append(FunnelRow(step, "rows", n, left))
    rows.append(FunnelRow("golden_rows", "rows", left, left))
    return rows


def _kept_by(step: FunnelStep) -> dict[str, int] | None:
    """no_positive's queries kept by a log `helped` and by a human positive alone (contract v5), if recorded."""
    human = getattr(step, "units_kept_by_human", None)
    if step.step != "no_positive" or human is None:
        return None
    return {"log_helped": step.units_left - human, "human_positive": human}


# --------------------------------------------------------------------------- all counts


# The build's own counts that every screen shows under their golden_builds name.
BUILD_COUNTS = (
    "n_queries",
    "n_projects",
    "n_helped",
    "n_noise",
    "n_wrong",
    "n_human_labels",
    "n_judge_labels",
    "n_stale",
    "unjudged_items",
    "orphan_verdicts",
    "unserved_item_verdicts",
    "near_duplicate_merges",
    "human_labels_unused",
    "log_labels_overridden",
    "judge_labels_held_back",
)
QUARANTINE_COUNTS = (
    "log_lines_rejected",
    "log_lines_rejected_at_ingest",
    "conflicting_duplicate_serves",
    "label_lines_rejected",
    "label_lines_rejected_at_ingest",
    "label_lines_held_back",
    "trace_records_rejected",
    "rejected_records",
)


@dataclass(frozen=True)
class Counts:
    """Every count of the latest build and the warehouse now, by the one name each screen shows."""

    build: BuildRecord
    lines: LinesRead
    quarantine: Quarantine
    relabel_queue_by_reason: dict[str, int]
    labelling_queue_by_reason: dict[str, int]
    funnel: list[FunnelRow] = field(default_factory=list)
    ingested_since_build: bool = False

    @property
    def golden_rows(self) -> int:
        return self.funnel[-1].left if self.funnel and self.funnel[-1].left is not None else self.build.n_labels

    @property
    def relabel_queue(self) -> int:
        return sum(self.relabel_queue_by_reason.values())

    @property
    def labelling_queue(self) -> int:
        return sum(self.labelling_queue_by_reason.values())

    def to_json(self) -> dict[str, Any]:
        """Every count by its key: `status --json`'s `counts` (contract 15.9), the queues' splits by reason included;
        the golden_set metadata holds all but the labelling queue's two."""
        out: dict[str, Any] = {name: int(getattr(self.build, name)) for name in BUILD_COUNTS}
        out["golden_rows"] = self.golden_rows
        out["log_lines_read"] = self.lines.log_lines_read
        out["label_lines_read"] = self.lines.label_lines_read
        out.update({name: getattr(self.quarantine, name) for name in QUARANTINE_COUNTS})
        out["relabel_queue"] = self.relabel_queue
        out["relabel_queue_by_reason"] = dict(self.relabel_queue_by_reason)
        out["labelling_queue"] = self.labelling_queue
        out["labelling_queue_by_reason"] = dict(self.labelling_queue_by_reason)
        return out


def golden_counts(
    con: Connection, build: BuildRecord, steps: list[FunnelStep] | None = None, labels_now: str | None = None
) -> Counts:
    """Every count for the latest build `build`, read once: what every screen shows.

    `labels_now`: the label files' signature now (`labelling.ingest.labels_signature`), to say
    whether they changed since the build; None right after the build, which read them.
    """
    if steps is None:
        steps = filter_funnel(con, build.build_id)
    lines = lines_read(con)
    q = quarantine(con, build)
    since = bool(con.execute("SELECT EXISTS (SELECT 1 FROM log_dirty)").fetchall()[0][0]) or (
        labels_now is not None and labels_now != build.labels_signature
    )
    return Counts(
        build,
        lines,
        q,
        relabel_queue_by_reason(con),
        labelling_queue_by_reason(con),
        full_funnel(build, steps, lines, q),
        since,
    )


def filter_funnel(con: Connection, build_id: int) -> list[FunnelStep]:
    """The stored `filter_funnel` of a build, step by step (contract 3-4), with what only humans kept (v5).

    Every column: reading four of them once left `units_kept_by_human` at its default 0, so
    `status --json` said no query was kept by a human positive alone.
    """
    return [
        FunnelStep(*r)
        for r in con.execute(
            "SELECT step, judgments_dropped, judgments_left, units_left, coalesce(judgments_kept_by_human, 0), "
            "coalesce(units_kept_by_human, 0) FROM filter_funnel WHERE build_id = ? ORDER BY step_order",
            [build_id],
        ).fetchall()
    ]
