"""The golden-set build: judgments through four filters into labels (contract section 3).

Everything here is set-based SQL over the ingested log; Python only sequences the
statements and decides whether the build may be published. A build's rows
(build, funnel, labels, history) commit in one transaction, so a crash or a
blocking check leaves the previous build current.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from goldenset import history
from goldenset.checks import BuildChecks, CheckOutcome, evaluate_checks
from goldenset.errors import BuildBlocked, UsageError
from goldenset.ingest import utcnow
from goldenset.snapshots import require_current

TRIGGERS = ("schedule", "reindex", "manual")
STEPS = ("judged", "always_served", "retired", "repeats", "no_positive")


@dataclass(frozen=True)
class FunnelStep:
    step: str
    judgments_dropped: int
    judgments_left: int
    units_left: int


@dataclass
class BuildResult:
    """A committed build: its id, counts, funnel and what its checks said."""

    build_id: int
    built_at: datetime
    trigger: str
    corpus_fingerprint: str
    counts: dict[str, int]
    funnel: list[FunnelStep]
    checks: list[CheckOutcome]
    history: dict[str, int] = field(default_factory=dict)
    merges: list[dict] = field(default_factory=list)


# Judgments with what the current snapshot says of their document. `_query_map` lets the
# optional near-duplicate step fold several normalised tasks into one query.
_STAGE_JUDGMENTS = """
CREATE OR REPLACE TEMP TABLE _j AS
SELECT j.serve_id, j.serve_ts, j.project, j.task, j.doc_id, j.doc_version, j.channel, j.verdict,
       j.judged_at,
       coalesce(m.query_id, j.query_id) AS query_id,
       d.doc_id IS NOT NULL AS active, d.version AS current_version, d.superseded_by
FROM judgments j
LEFT JOIN _query_map m ON m.project = j.project AND m.task_norm = j.task_norm
LEFT JOIN (SELECT doc_id, version, superseded_by FROM corpus_documents
           WHERE content_sha256 = ? AND status = 'active') d ON d.doc_id = j.doc_id
"""
_FILTERED = "CREATE OR REPLACE TEMP TABLE _j2 AS SELECT * FROM _j WHERE channel = 'ranked' AND active"
# repeats: per query and doc, the judgment from the latest serve (ts, then larger serve_id) wins.
_REPEATS = """
CREATE OR REPLACE TEMP TABLE _j3 AS
SELECT * EXCLUDE (rn) FROM (
  SELECT *, row_number() OVER (PARTITION BY query_id, doc_id ORDER BY serve_ts DESC, serve_id DESC) AS rn
  FROM _j2) WHERE rn = 1
"""
_QUERY_TASK = """
CREATE OR REPLACE TEMP TABLE _qtask AS
SELECT query_id, project, task FROM (
  SELECT query_id, project, task,
         row_number() OVER (PARTITION BY query_id ORDER BY serve_ts DESC, serve_id DESC) AS rn
  FROM _j2) WHERE rn = 1
"""
_NO_POSITIVE = """
CREATE OR REPLACE TEMP TABLE _j4 AS
SELECT * FROM _j3 WHERE query_id IN (SELECT query_id FROM _j3 WHERE verdict = 'helped')
"""
# What is left after each step, and, counted on its own, what each step dropped: the
# funnel check compares the two, so a filter that loses or invents rows shows up.
_LEFT = (
    "SELECT count(*), count(DISTINCT serve_id) FROM _j",
    "SELECT count(*), count(DISTINCT serve_id) FROM _j WHERE channel = 'ranked'",
    "SELECT count(*), count(DISTINCT serve_id) FROM _j2",
    "SELECT count(*), count(DISTINCT query_id) FROM _j3",
    "SELECT count(*), count(DISTINCT query_id) FROM _j4",
)
_DROPPED = (
    "SELECT 0",
    "SELECT count(*) FROM _j WHERE channel = 'always'",
    "SELECT count(*) FROM _j WHERE channel = 'ranked' AND NOT active",
    "SELECT count(*) FROM (SELECT row_number() OVER (PARTITION BY query_id, doc_id "
    "ORDER BY serve_ts DESC, serve_id DESC) AS rn FROM _j2) WHERE rn > 1",
    "SELECT count(*) FROM _j3 WHERE query_id NOT IN (SELECT query_id FROM _j3 WHERE verdict = 'helped')",
)
_INSERT_LABELS = """
INSERT INTO build_labels BY NAME
SELECT ? AS build_id, j.query_id, q.project, q.task, j.doc_id, j.doc_version, j.verdict,
       CASE WHEN j.verdict = 'helped' THEN 1 ELSE 0 END AS relevance, j.serve_id, j.judged_at,
       CASE WHEN j.superseded_by IS NOT NULL THEN 'superseded'
            WHEN j.current_version <> j.doc_version THEN 'version_changed' END AS stale_reason
FROM _j4 j JOIN _qtask q USING (query_id)
"""
_SIDE_COUNTS = """
SELECT
  (SELECT count(*) FROM accepted_serves s
     JOIN log_serve_items i ON i.source_file = s.source_file AND i.line = s.line
     WHERE NOT EXISTS (SELECT 1 FROM log_verdicts v WHERE v.serve_id = s.serve_id AND v.doc_id = i.doc_id)),
  (SELECT count(*) FROM log_verdicts v
     WHERE NOT EXISTS (SELECT 1 FROM log_serves s WHERE s.serve_id = v.serve_id)),
  (SELECT count(*) FROM log_verdicts v
     WHERE EXISTS (SELECT 1 FROM log_serves s WHERE s.serve_id = v.serve_id)
       AND NOT EXISTS (SELECT 1 FROM accepted_serves s
                       JOIN log_serve_items i ON i.source_file = s.source_file AND i.line = s.line
                       WHERE s.serve_id = v.serve_id AND i.doc_id = v.doc_id)),
  (SELECT coalesce(sum(lines_total), 0) FROM log_files),
  (SELECT count(*) FROM rejected_records WHERE reason <> 'conflicting_duplicate_serve'),
  (SELECT count(*) FROM rejected_records WHERE reason = 'conflicting_duplicate_serve')
"""
_LABEL_COUNTS = """
SELECT count(DISTINCT query_id), count(DISTINCT project),
       count(*) FILTER (WHERE verdict = 'helped'), count(*) FILTER (WHERE verdict = 'noise'),
       count(*) FILTER (WHERE verdict = 'wrong'), count(*) FILTER (WHERE stale_reason IS NOT NULL)
FROM build_labels WHERE build_id = ?
"""


def build_golden_set(
    con,
    *,
    trigger: str = "manual",
    checks: BuildChecks | None = None,
    query_map: list[tuple[str, str, str]] | None = None,
    now: datetime | None = None,
) -> BuildResult:
    """Rebuild the golden set from everything ingested and the current snapshot.

    `query_map` rows (project, task_norm, query_id) fold near-duplicate tasks into
    one query; without it the contract's exact normalisation decides.
    Raises BuildBlocked (nothing committed) when a blocking check fails.
    """
    if trigger not in TRIGGERS:
        raise UsageError(f"trigger {trigger!r} is not one of {', '.join(TRIGGERS)}")
    checks = checks or BuildChecks()
    now = now or utcnow()
    fingerprint, content_sha = require_current(con)
    active_docs = con.execute(
        "SELECT count(*) FROM corpus_documents WHERE content_sha256 = ? AND status = 'active'", [content_sha]
    ).fetchall()[0][0]

    con.execute("BEGIN TRANSACTION")
    try:
        build_id = con.execute("SELECT coalesce(max(build_id), 0) + 1 FROM golden_builds").fetchall()[0][0]
        con.execute("CREATE OR REPLACE TEMP TABLE _query_map (project VARCHAR, task_norm VARCHAR, query_id VARCHAR)")
        if query_map:
            con.executemany("INSERT INTO _query_map VALUES (?, ?, ?)", query_map)
        con.execute(_STAGE_JUDGMENTS, [content_sha])
        con.execute(_FILTERED)
        con.execute(_REPEATS)
        con.execute(_QUERY_TASK)
        con.execute(_NO_POSITIVE)
        funnel = _funnel(con)
        con.execute(_INSERT_LABELS, [build_id])
        unjudged, orphans, unserved, lines_read, lines_rejected, conflicts = con.execute(_SIDE_COUNTS).fetchall()[0]
        n_queries, n_projects, n_helped, n_noise, n_wrong, n_stale = con.execute(
            _LABEL_COUNTS, [build_id]).fetchall()[0]
        missing_docs = con.execute(
            "SELECT count(*) FROM build_labels b WHERE b.build_id = ? AND NOT EXISTS ("
            "SELECT 1 FROM corpus_documents d WHERE d.content_sha256 = ? AND d.doc_id = b.doc_id "
            "AND d.status = 'active')",
            [build_id, content_sha],
        ).fetchall()[0][0]
        counts = dict(
            n_queries=n_queries, n_projects=n_projects, n_helped=n_helped, n_noise=n_noise,
            n_wrong=n_wrong, n_stale=n_stale, unjudged_items=unjudged, orphan_verdicts=orphans,
            unserved_item_verdicts=unserved, lines_read=lines_read, lines_rejected=lines_rejected,
            conflicting_serves=conflicts,
            corpus_active_docs=active_docs, labels_missing_document=missing_docs,
        )
        outcomes = evaluate_checks(checks, funnel, counts)
        blocking = [o for o in outcomes if not o.passed and o.blocking]
        if blocking:
            raise BuildBlocked(
                "build not published: " + "; ".join(o.detail for o in blocking)
                + " (the previous build stays current)",
                outcomes,
            )
        con.execute(
            "INSERT INTO golden_builds BY NAME SELECT ? AS build_id, ? AS built_at, ? AS trigger, "
            "? AS corpus_fingerprint, ? AS corpus_active_docs, ? AS n_queries, ? AS n_projects, "
            "? AS n_helped, ? AS n_noise, ? AS n_wrong, ? AS unjudged_items, ? AS orphan_verdicts, "
            "? AS unserved_item_verdicts, ? AS n_stale, ? AS lines_read, ? AS lines_rejected, "
            "? AS near_duplicate_merges, ? AS corpus_content_sha256, ? AS conflicting_serves",
            [build_id, now, trigger, fingerprint, active_docs, n_queries, n_projects, n_helped, n_noise,
             n_wrong, unjudged, orphans, unserved, n_stale, lines_read, lines_rejected,
             _merged_queries(query_map or []), content_sha, conflicts],
        )
        con.executemany(
            "INSERT INTO filter_funnel VALUES (?, ?, ?, ?, ?, ?)",
            [[build_id, i, s.step, s.judgments_dropped, s.judgments_left, s.units_left]
             for i, s in enumerate(funnel)],
        )
        hist = history.record_build(con, build_id)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        for t in ("_j", "_j2", "_j3", "_j4", "_qtask", "_query_map"):
            con.execute("DROP TABLE IF EXISTS " + t)
    return BuildResult(build_id, now, trigger, fingerprint, counts, funnel, outcomes, hist)


def _merged_queries(query_map) -> int:
    """Normalised tasks folded into another query (each fold counts once)."""
    return sum(1 for p, norm, qid in query_map if qid != _own_id(p, norm))


def _own_id(project: str, task_norm: str) -> str:
    from goldenset.records import query_id

    return query_id(project, task_norm)


def _funnel(con) -> list[FunnelStep]:
    steps = []
    for name, left_sql, dropped_sql in zip(STEPS, _LEFT, _DROPPED):
        n, units = con.execute(left_sql).fetchall()[0]
        steps.append(FunnelStep(name, con.execute(dropped_sql).fetchall()[0][0], n, units))
    return steps
