"""The golden-set build: judgments through four filters into labels (contract section 3).

Everything here is set-based SQL over the ingested log; Python only sequences the
statements and decides whether the build may be published. A build's rows
(build, funnel, labels, history) commit in one transaction, so a crash or a
blocking check leaves the previous build current.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from goldenset import delta, failpoints, history
from goldenset.build_record import BuildRecord, FunnelStep, latest_build_or_none
from goldenset.checks import BuildChecks, CheckOutcome, evaluate_checks
from goldenset.clock import utcnow
from goldenset.connection import Connection
from goldenset.counts import lines_read, quarantine
from goldenset.display import stage_display_texts
from goldenset.errors import BuildBlocked, UsageError
from goldenset.history import HistoryChange
from goldenset.labelling.ingest import labels_signature
from goldenset.labelling.judge_gate import JudgeGate, audit_signature
from goldenset.labelling.merge import human_positives, merge_labels
from goldenset.schema import (
    ACCEPTED_LINE,
    LABEL_ROW_COLUMNS,
    WINNING_VERDICT,
    active_documents,
    log_label_row,
    open_row,
    same_label_row,
    stale_reason,
)
from goldenset.snapshots import require_current
from goldenset.warehouse import checkpoint_after, drop_working_tables, temp_objects

TRIGGERS = ("schedule", "reindex", "manual")
# The contract version whose rules a build computes labels by (golden_builds.contract_version).
# Labels computed under another version are never reused or folded into: v5 changed filter 4
# (human positives) and the task text (display text) for every query.
CONTRACT_VERSION = 5
STEPS = ("judged", "always_served", "retired", "repeats", "no_positive")


@dataclass
class BuildResult:
    """A committed build: its record, funnel, what its checks said and what history recorded."""

    record: BuildRecord
    funnel: list[FunnelStep]
    checks: list[CheckOutcome]
    history: HistoryChange = field(default_factory=HistoryChange)
    # Queries this build ran through the four filters, and queries it folded new lines
    # into (goldenset.delta); both 0 for a repeat.
    recomputed_queries: int = 0
    folded_queries: int = 0

    @property
    def build_id(self) -> int:
        return self.record.build_id


# Accepted serves (with their query, near-duplicate merges applied), their served items
# and the winning verdict of each judged item are staged once: the judgments and every
# side count (unjudged, unserved) read them. Serve-level fields (project, task) stay in
# `_serves`: the item and judgment rows carry only what the filters read, which halves
# what the joins and the repeats window move at ten million items.
_SERVES_OF = """
CREATE OR REPLACE TEMP TABLE _serves AS
SELECT s.serve_id, s.ts AS serve_ts, s.project, s.task, coalesce(m.query_id, s.query_id) AS query_id,
       s.source_file, s.line
FROM {serves} s LEFT JOIN _query_map m ON m.project = s.project AND m.task_norm = s.task_norm
"""
_STAGE_SERVES = _SERVES_OF.format(serves="accepted_serves")
# An incremental build stages only the serves of the queries it recomputes (those new
# lines touched that goldenset.delta does not fold).
_RECOMPUTED = "\nWHERE s.query_id IN (SELECT query_id FROM _recompute)\n"
_STAGE_SERVES_SCOPED = _STAGE_SERVES.rstrip() + _RECOMPUTED
# When the fold takes most of them, few remain: which line of a serve_id is accepted
# depends on that serve_id's lines alone, so only the lines of their serve_ids are ranked.
_STAGE_SERVES_FEW = (
    _SERVES_OF.format(
        serves=f"""(SELECT l.* FROM log_serves l
      SEMI JOIN (SELECT DISTINCT serve_id FROM log_serves WHERE query_id IN (SELECT query_id FROM _recompute)) k
        ON k.serve_id = l.serve_id
      {ACCEPTED_LINE})"""
    ).rstrip()
    + _RECOMPUTED
)
# The accepted serves whose raw tasks the display text is chosen from (goldenset.display):
# every one staged, or for an incremental build every accepted serve of its scope's queries
# (the fold's queries are not staged in `_serves`).
_DISPLAY_SERVES = "SELECT query_id, task, serve_ts, serve_id FROM _serves"
_DISPLAY_SERVES_SCOPED = f"""SELECT query_id, task, ts AS serve_ts, serve_id FROM (
  SELECT l.* FROM log_serves l
  SEMI JOIN (SELECT DISTINCT serve_id FROM log_serves WHERE query_id IN (SELECT query_id FROM _scope)) k
    ON k.serve_id = l.serve_id
  {ACCEPTED_LINE})
WHERE query_id IN (SELECT query_id FROM _scope)"""
_STAGE_ITEMS = """
CREATE OR REPLACE TEMP TABLE _items AS
SELECT s.serve_id, s.serve_ts, s.query_id, i.doc_id, i.doc_version, i.channel
FROM _serves s JOIN log_serve_items i ON i.source_file = s.source_file AND i.line = s.line
"""
_SCOPE = """
CREATE OR REPLACE TEMP TABLE _scope AS
SELECT query_id FROM log_dirty WHERE query_id IS NOT NULL
UNION
SELECT s.query_id FROM log_serves s SEMI JOIN log_dirty d ON d.serve_id = s.serve_id
"""
_STAGE_VERDICTS = (
    """
CREATE OR REPLACE TEMP TABLE _winning_verdicts AS
SELECT serve_id, doc_id, verdict, ts FROM log_verdicts
WHERE serve_id IN (SELECT serve_id FROM _serves)
"""
    + WINNING_VERDICT
)
# Judgments with what the current snapshot says of their document. A winning verdict
# whose serve did not serve its doc_id has no item: those pairs are kept apart in
# `_unserved` (for the count of such verdict lines) and leave `_judgments`. (serve_id, doc_id)
# is unique among the items (a doc_id appears once per serve) and among `_winning_verdicts`.
_STAGE_JUDGMENTS = (
    """
CREATE OR REPLACE TEMP TABLE _judgments AS
SELECT v.serve_id, j.serve_ts, v.doc_id, j.doc_version, j.channel, v.verdict, v.ts AS judged_at, j.query_id,
       d.doc_id IS NOT NULL AS active, d.version AS current_version, d.superseded_by
FROM _winning_verdicts v
LEFT JOIN _items j ON j.serve_id = v.serve_id AND j.doc_id = v.doc_id
LEFT JOIN """
    + active_documents("?")
    + """ d ON d.doc_id = v.doc_id
"""
)
_SPLIT_UNSERVED = (
    "CREATE OR REPLACE TEMP TABLE _unserved AS SELECT serve_id, doc_id FROM _judgments WHERE channel IS NULL",
    "DELETE FROM _judgments WHERE channel IS NULL",
)
_FILTERED = "CREATE OR REPLACE TEMP VIEW _ranked_active_judgments AS SELECT * FROM _judgments WHERE channel = 'ranked' AND active"
# repeats: per query and doc, the judgment from the latest serve (ts, then larger serve_id) wins.
_REPEATS = """
CREATE OR REPLACE TEMP TABLE _latest_judgments AS
SELECT * FROM _ranked_active_judgments
QUALIFY row_number() OVER (PARTITION BY query_id, doc_id ORDER BY serve_ts DESC, serve_id DESC) = 1
"""
# Per query after the repeats filter: its project (of its latest judgment after filters 1-2,
# which is the winner of its pair, so the latest winner), its display text (`_qdisplay`,
# goldenset.display), how many judgments are left and whether filter 4 keeps it: a log
# `helped` among them, or (contract v5) a human positive (`_hpos`, goldenset.labelling.merge).
_QUERY_TASK = """
CREATE OR REPLACE TEMP TABLE _qtask AS
SELECT q.query_id, s.project, coalesce(d.task, s.task) AS task, q.repeats_left,
       q.log_positive OR q.query_id IN (SELECT query_id FROM _hpos) AS positive, q.log_positive
FROM (SELECT query_id, arg_max(serve_id, (serve_ts, serve_id)) AS serve_id, count(*) AS repeats_left,
             bool_or(verdict = 'helped') AS log_positive
      FROM _latest_judgments GROUP BY query_id) q
JOIN _serves s USING (serve_id)
LEFT JOIN _qdisplay d ON d.query_id = q.query_id
"""
# Each query's share of the funnel and of the side counts; since every serve belongs to
# one query, the sums over queries are the build's funnel. Judged, unjudged and what
# the repeats filter dropped are what is left of a whole: a query's served items are
# judged or unjudged, its judgments after filter 2 are kept or dropped by repeats (the
# fold in goldenset.delta moves them the same way).
_QUERY_STATS = """
CREATE OR REPLACE TEMP TABLE _qs AS
WITH ps AS (
  -- per (query, serve) first, so that serve counts are plain counts, not count(DISTINCT)
  SELECT query_id, serve_id, count(*) AS judged,
         count(*) FILTER (WHERE channel = 'always') AS always_dropped,
         count(*) FILTER (WHERE channel = 'ranked') AS ranked,
         count(*) FILTER (WHERE channel = 'ranked' AND NOT active) AS retired_dropped,
         count(*) FILTER (WHERE channel = 'ranked' AND active) AS active
  FROM _judgments GROUP BY query_id, serve_id),
js AS (
  SELECT query_id, sum(judged) AS judged, count(*) AS judged_serves, sum(always_dropped) AS always_dropped,
         sum(ranked) AS ranked, count(*) FILTER (WHERE ranked > 0) AS ranked_serves,
         sum(retired_dropped) AS retired_dropped, sum(active) AS active,
         count(*) FILTER (WHERE active > 0) AS active_serves
  FROM ps GROUP BY query_id),
n AS (SELECT query_id, count(*) AS served FROM _items GROUP BY query_id),
us AS (SELECT s.query_id, count(*) AS unserved
       FROM log_verdicts v SEMI JOIN _unserved u ON u.serve_id = v.serve_id AND u.doc_id = v.doc_id
       JOIN _serves s ON s.serve_id = v.serve_id GROUP BY s.query_id)
SELECT n.query_id,
       coalesce(judged, 0)::BIGINT AS judged, coalesce(judged_serves, 0) AS judged_serves,
       coalesce(always_dropped, 0)::BIGINT AS always_dropped, coalesce(ranked, 0)::BIGINT AS ranked,
       coalesce(ranked_serves, 0) AS ranked_serves, coalesce(retired_dropped, 0)::BIGINT AS retired_dropped,
       coalesce(active, 0)::BIGINT AS active, coalesce(active_serves, 0) AS active_serves,
       coalesce(active, 0)::BIGINT - coalesce(repeats_left, 0) AS repeats_dropped,
       coalesce(repeats_left, 0) AS repeats_left,
       CASE WHEN coalesce(positive, false) THEN 0 ELSE coalesce(repeats_left, 0) END AS no_positive_dropped,
       CASE WHEN coalesce(positive, false) THEN repeats_left ELSE 0 END AS kept,
       served - coalesce(judged, 0)::BIGINT AS unjudged, coalesce(unserved, 0) AS unserved,
       CASE WHEN coalesce(positive, false) AND NOT log_positive THEN repeats_left ELSE 0 END AS human_kept
FROM n LEFT JOIN js USING (query_id) LEFT JOIN _qtask USING (query_id) LEFT JOIN us USING (query_id)
"""
_FUNNEL_FROM_STATS = """
SELECT coalesce(sum(judged), 0), coalesce(sum(judged_serves), 0),
       coalesce(sum(always_dropped), 0), coalesce(sum(ranked), 0), coalesce(sum(ranked_serves), 0),
       coalesce(sum(retired_dropped), 0), coalesce(sum(active), 0), coalesce(sum(active_serves), 0),
       coalesce(sum(repeats_dropped), 0), coalesce(sum(repeats_left), 0), count(*) FILTER (WHERE repeats_left > 0),
       coalesce(sum(no_positive_dropped), 0), coalesce(sum(kept), 0), count(*) FILTER (WHERE kept > 0),
       coalesce(sum(unjudged), 0), coalesce(sum(unserved), 0),
       coalesce(sum(human_kept), 0), count(*) FILTER (WHERE human_kept > 0)
FROM query_stats
"""
# The log labels a build recomputed (every query, or the queries new lines touched).
_NEW_LOG_LABELS = (
    "CREATE OR REPLACE TEMP TABLE _newlog AS SELECT "
    + log_label_row("j", "q", stale_reason("j"))
    + " FROM _latest_judgments j JOIN _qtask q USING (query_id) WHERE q.positive"
)
# Over all logs; an incremental build moves the previous build's by what its lines changed.
_SIDE_COUNTS = """
SELECT
  (SELECT count(*) FROM log_verdicts v ANTI JOIN (SELECT DISTINCT serve_id FROM log_serves) s
     ON s.serve_id = v.serve_id),
  (SELECT count(*) FROM rejected_records WHERE reason = 'conflicting_duplicate_serve')
"""
_LABEL_COUNTS = """
SELECT count(DISTINCT query_id), count(DISTINCT project),
       count(*) FILTER (WHERE source = 'log' AND verdict = 'helped'),
       count(*) FILTER (WHERE source = 'log' AND verdict = 'noise'),
       count(*) FILTER (WHERE source = 'log' AND verdict = 'wrong'), count(*) FILTER (WHERE stale_reason IS NOT NULL)
FROM build_labels l WHERE NOT coalesce(l.overridden, false) AND """ + open_row()


def build_golden_set(
    con: Connection,
    *,
    trigger: str = "manual",
    checks: BuildChecks | None = None,
    query_map: list[tuple[str, str, str]] | None = None,
    judge_gate: JudgeGate | None = None,
    rubric_sha256: str | None = None,
    rubric_text: str | None = None,
    now: datetime | None = None,
) -> BuildResult:
    """Rebuild the golden set from everything ingested and the current snapshot.

    `query_map` rows (project, task_norm, query_id) fold near-duplicate tasks into
    one query; without it the contract's exact normalisation decides.
    Raises BuildBlocked (nothing committed) when a blocking check fails. The build commits
    to the WAL and checkpoints once its staging tables are dropped (`checkpoint_after`).
    """
    with checkpoint_after(con):
        result = _build(
            con,
            trigger=trigger,
            checks=checks,
            query_map=query_map,
            judge_gate=judge_gate,
            rubric_sha256=rubric_sha256,
            rubric_text=rubric_text,
            now=now,
        )
        failpoints.hit("build.after_commit")  # committed to the WAL, not checkpointed yet
    return result


@dataclass(frozen=True)
class _Inputs:
    """What a build is computed from, read before its transaction begins."""

    fingerprint: str
    content_sha: str
    active_docs: int
    query_map: list[tuple[str, str, str]]
    gate: JudgeGate
    labels_signature: str
    signature: str
    previous: BuildRecord | None


@dataclass(frozen=True)
class _Labels:
    """The labels a build computed, or reused from an earlier build, with its funnel and counts."""

    computation: str  # repeat, incremental or full
    labels_build: int
    funnel: list[FunnelStep]
    counts: dict[str, int]  # the golden_builds counts, by column (BuildRecord's fields)
    # Queries run through the four filters, and queries new lines were folded into.
    recomputed: int = 0
    folded: int = 0


def _build(
    con: Connection,
    *,
    trigger: str,
    checks: BuildChecks | None,
    query_map: list[tuple[str, str, str]] | None,
    judge_gate: JudgeGate | None,
    rubric_sha256: str | None,
    rubric_text: str | None,
    now: datetime | None,
) -> BuildResult:
    """Compute, check and publish one build in one transaction; a blocking check rolls it back."""
    if trigger not in TRIGGERS:
        raise UsageError(f"trigger {trigger!r} is not one of {', '.join(TRIGGERS)}")
    now = now or utcnow()
    inputs = _read_inputs(con, query_map or [], judge_gate or JudgeGate())
    previous = inputs.previous
    build_id = (previous.build_id if previous else 0) + 1
    working_before = temp_objects(con)  # what the build makes from here on, it drops when it ends
    con.execute("BEGIN TRANSACTION")
    try:
        labels = _make_labels(con, build_id, inputs)
        con.execute("DELETE FROM log_dirty")
        record = BuildRecord(
            build_id=build_id,
            built_at=now,
            trigger=trigger,
            corpus_fingerprint=inputs.fingerprint,
            corpus_active_docs=inputs.active_docs,
            near_duplicate_merges=_merged_queries(inputs.query_map),
            corpus_content_sha256=inputs.content_sha,
            input_signature=inputs.signature,
            labels_build_id=labels.labels_build,
            computation=labels.computation,
            rubric_sha256=rubric_sha256 if inputs.labels_signature else None,
            labels_signature=inputs.labels_signature,
            contract_version=CONTRACT_VERSION,
            **labels.counts,
        )
        outcomes = _check(con, checks or BuildChecks(), labels.funnel, record, previous)
        changes = _publish(con, record, labels.funnel, rubric_text)
        failpoints.hit("build.before_commit")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        drop_working_tables(con, working_before)
    return BuildResult(record, labels.funnel, outcomes, changes, labels.recomputed, labels.folded)


def _read_inputs(con: Connection, query_map: list[tuple[str, str, str]], gate: JudgeGate) -> _Inputs:
    """The snapshot (which must be current), the label files, the merges and the previous build.

    Read before the transaction: a build refused here (no current snapshot) has written nothing.
    """
    fingerprint, content_sha = require_current(con)
    active_docs = con.execute(
        "SELECT count(*) FROM corpus_documents WHERE content_sha256 = ? AND status = 'active'", [content_sha]
    ).fetchall()[0][0]
    label_sig = labels_signature(con)
    signature = input_signature(con, content_sha, query_map, label_sig, gate)
    return _Inputs(
        fingerprint,
        content_sha,
        active_docs,
        query_map,
        gate,
        label_sig,
        signature,
        latest_build_or_none(con),
    )


def _make_labels(con: Connection, build_id: int, inputs: _Inputs) -> _Labels:
    """Reuse the previous build's labels, fold new lines into them, or compute them all.

    Same inputs as the previous build (log content, snapshot, merges, label files): the same
    labels, so the build points at them instead of computing and storing them again; this
    is what keeps a no-change night cheap. Only new log lines since the last build, the same
    snapshot, no merging and the same label files (the agent labels agreement compares are
    carried over with the queries): the queries those lines touched are all that can
    change, and only they are computed again. Anything else: every query is computed.
    """
    previous = inputs.previous
    if previous is not None and previous.input_signature == inputs.signature:
        funnel, counts = _repeat(con, previous.labels_build_id)
        return _Labels("repeat", previous.labels_build_id, funnel, counts)
    incremental = (
        previous is not None
        and previous.corpus_content_sha256 == inputs.content_sha
        and not inputs.query_map
        and not previous.near_duplicate_merges
        and previous.labels_signature == inputs.labels_signature
        and previous.contract_version == CONTRACT_VERSION
    )
    funnel, counts = _compute(
        con,
        build_id,
        inputs.content_sha,
        inputs.query_map,
        previous=previous if incremental else None,
        gate=inputs.gate,
    )
    recomputed, folded = con.execute(
        "SELECT (SELECT count(DISTINCT query_id) FROM _judgments), "
        + ("(SELECT count(*) FROM _delta)" if incremental else "0")
    ).fetchall()[0]
    return _Labels("incremental" if incremental else "full", build_id, funnel, counts, recomputed, folded)


def _check(
    con: Connection, checks: BuildChecks, funnel: list[FunnelStep], record: BuildRecord, previous: BuildRecord | None
) -> list[CheckOutcome]:
    """Evaluate the build's checks; BuildBlocked (the caller rolls back) when a blocking one fails.

    Every label's document must be active in the snapshot (a blocking check). An incremental
    or repeat build has the previous build's snapshot, and that build, committed, held its
    labels to it: only the rows this build opened need looking at.
    """
    missing = con.execute(
        "SELECT count(*) FROM build_labels l WHERE " + open_row() + " AND NOT EXISTS ("
        "SELECT 1 FROM corpus_documents d WHERE d.content_sha256 = $sha AND d.doc_id = l.doc_id "
        "AND d.status = 'active') AND ($all OR l.valid_from_build = $build)",
        {"sha": record.corpus_content_sha256, "all": record.computation == "full", "build": record.build_id},
    ).fetchall()[0][0]
    reasons = label_reject_reasons(con, record.corpus_content_sha256) if record.label_lines_rejected else {}
    outcomes = evaluate_checks(checks, funnel, record, missing, reasons)
    blocking = [o for o in outcomes if not o.passed and o.blocking]
    if blocking:
        raise BuildBlocked(_blocked_message(blocking, previous), outcomes)
    return outcomes


def _publish(con: Connection, record: BuildRecord, funnel: list[FunnelStep], rubric_text: str | None) -> HistoryChange:
    """Write the build's record, its rubric, its funnel and its label history (inside the transaction)."""
    record.insert(con)
    if record.rubric_sha256 is not None and rubric_text is not None:
        # The rubric itself, once per content: `status` names it and an edit can be compared.
        con.execute(
            "INSERT INTO rubrics SELECT ?, ?, ?, ? ON CONFLICT DO NOTHING",
            [record.rubric_sha256, _rubric_name(rubric_text), rubric_text, record.built_at],
        )
    con.executemany(
        "INSERT INTO filter_funnel (build_id, step_order, step, judgments_dropped, judgments_left, units_left, "
        "judgments_kept_by_human, units_kept_by_human) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            [
                record.build_id,
                i,
                s.step,
                s.judgments_dropped,
                s.judgments_left,
                s.units_left,
                s.judgments_kept_by_human,
                s.units_kept_by_human,
            ]
            for i, s in enumerate(funnel)
        ],
    )
    failpoints.hit("build.before_history")
    # A repeat's labels are its labels build's: history has nothing new to record.
    return history.record_build(con, record.build_id) if record.computation != "repeat" else HistoryChange()


def _blocked_message(blocking: list[CheckOutcome], previous: BuildRecord | None) -> str:
    stays = (
        f"build {previous.build_id} (built {previous.built_at:%Y-%m-%d %H:%M} UTC) stays current"
        if previous is not None
        else "no build has been published yet"
    )
    return "build not published: " + "; ".join(o.detail for o in blocking) + f"; {stays}"


def input_signature(
    con: Connection,
    content_sha: str,
    query_map: list[tuple[str, str, str]],
    labels: str = "",
    gate: JudgeGate | None = None,
) -> str:
    """What a build's result depends on: every ingested file's content, the snapshot, the merges, the labels.

    With labels, also every setting of the judge's gate and every audit (the gate's sample, contract 13.2):
    a build with another gate setting, or after a new audit, is never a repeat.
    """
    files = con.execute(
        "SELECT coalesce(md5(string_agg(source_file || chr(31) || coalesce(content_sha256, 'unreadable'), "
        "chr(30) ORDER BY source_file)), '') FROM log_files"
    ).fetchall()[0][0]
    h = hashlib.sha256()
    parts = [f"contract v{CONTRACT_VERSION}", files, content_sha, *("\x1f".join(row) for row in sorted(query_map))]
    if labels:
        # Known versions decide which label lines count: a new snapshot changes content_sha anyway.
        parts += ["labels", labels, (gate or JudgeGate()).signature(), audit_signature(con)]
    for part in parts:
        h.update(part.encode("utf-8") + b"\x1e")
    return h.hexdigest()


# The golden_builds counts a build computes (the rest of its record is identity).
_COUNT_COLUMNS = (
    "n_queries",
    "n_projects",
    "n_helped",
    "n_noise",
    "n_wrong",
    "n_stale",
    "unjudged_items",
    "orphan_verdicts",
    "unserved_item_verdicts",
    "lines_read",
    "lines_rejected",
    "conflicting_serves",
    "n_human_labels",
    "n_judge_labels",
    "human_labels_unused",
    "log_labels_overridden",
    "judge_labels_held_back",
    "label_lines_read",
    "label_lines_rejected",
)


def _repeat(con: Connection, labels_build: int) -> tuple[list[FunnelStep], dict]:
    """The funnel and counts of the build whose labels are reused."""
    funnel = [
        FunnelStep(*r)
        for r in con.execute(
            "SELECT step, judgments_dropped, judgments_left, units_left, coalesce(judgments_kept_by_human, 0), "
            "coalesce(units_kept_by_human, 0) FROM filter_funnel WHERE build_id = ? ORDER BY step_order",
            [labels_build],
        ).fetchall()
    ]
    row = con.execute(
        "SELECT " + ", ".join(_COUNT_COLUMNS) + " FROM golden_builds WHERE build_id = ?", [labels_build]
    ).fetchall()[0]
    return funnel, dict(zip(_COUNT_COLUMNS, row, strict=True))


def _compute(
    con: Connection,
    build_id: int,
    content_sha: str,
    query_map,
    previous: BuildRecord | None = None,
    gate: JudgeGate | None = None,
) -> tuple[list[FunnelStep], dict]:
    """Run the four filters and store the build's labels; return the funnel and counts.

    With `previous` (an incremental build), only the queries in log_dirty are computed
    again (recomputed, or folded by goldenset.delta); every other query's labels and
    statistics are carried over from that build unchanged.
    """
    carry_from = previous.labels_build_id if previous is not None else None
    con.execute("CREATE OR REPLACE TEMP TABLE _query_map (project VARCHAR, task_norm VARCHAR, query_id VARCHAR)")
    if query_map:
        con.executemany("INSERT INTO _query_map VALUES (?, ?, ?)", query_map)
    if carry_from is None:
        con.execute(_STAGE_SERVES)
    else:
        con.execute(_SCOPE)
        con.execute(_STAGE_SERVES_FEW if delta.plan(con) else _STAGE_SERVES_SCOPED)
    con.execute(_STAGE_ITEMS)
    con.execute(_STAGE_VERDICTS)
    con.execute(_STAGE_JUDGMENTS, [content_sha])
    # Contract v5: the human positives filter 4 reads, and the display text of every query the
    # build computes (all of them, or those of the scope: the fold's queries too).
    human_positives(con, content_sha)
    stage_display_texts(con, _DISPLAY_SERVES if carry_from is None else _DISPLAY_SERVES_SCOPED)
    for stmt in (*_SPLIT_UNSERVED, _FILTERED, _REPEATS, _QUERY_TASK, _QUERY_STATS):
        con.execute(stmt)
    if carry_from is not None:
        delta.fold(con, content_sha)  # before query_stats and build_labels change
    if carry_from is None:
        con.execute("DELETE FROM query_stats")
    else:
        con.execute("DELETE FROM query_stats WHERE query_id IN (SELECT query_id FROM _scope)")
    con.execute("INSERT INTO query_stats BY NAME SELECT * FROM _qs")
    con.execute(_NEW_LOG_LABELS)
    if carry_from is not None:
        con.execute("INSERT INTO _newlog BY NAME SELECT * FROM _dlabels")
    # The build's log labels: those just computed, and for an incremental build every
    # other query's as the previous build held them (those a human label replaced too:
    # the merge is recomputed from scratch for every build).
    held_over = (
        ""
        if carry_from is None
        else " UNION ALL SELECT " + ", ".join(_NEW_LOG_COLUMNS) + " FROM build_labels l "
        "WHERE l.valid_to_build IS NULL AND l.source = 'log' AND l.query_id NOT IN (SELECT query_id FROM _scope)"
    )
    con.execute("CREATE OR REPLACE TEMP VIEW _log AS SELECT * FROM _newlog" + held_over)
    # The agent's labels after filters 1-3, for agreement: this build's for the queries it
    # recomputed, the carried build's for the others.
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _agent AS SELECT query_id, doc_id, doc_version, verdict FROM _latest_judgments"
    )
    if carry_from is not None:
        con.execute("INSERT INTO _agent SELECT query_id, doc_id, doc_version, verdict FROM _delta_latest_judgments")
        con.execute(
            "INSERT INTO _agent SELECT query_id, doc_id, doc_version, verdict FROM build_agent_labels "
            "WHERE build_id = ? AND query_id NOT IN (SELECT query_id FROM _scope)",
            [carry_from],
        )
    merged = merge_labels(con, build_id, content_sha, gate or JudgeGate(), "SELECT * FROM _agent", "_log")
    _store_labels(con, build_id, incremental=carry_from is not None)
    funnel, unjudged, unserved = _funnel(con)
    side = None
    if previous is not None:
        side = delta.side_counts(con, previous.orphan_verdicts, previous.conflicting_serves)
    orphans, conflicts = side if side is not None else con.execute(_SIDE_COUNTS).fetchall()[0]
    labels = con.execute(_LABEL_COUNTS).fetchall()[0]
    counts = dict(zip(("n_queries", "n_projects", "n_helped", "n_noise", "n_wrong", "n_stale"), labels, strict=True))
    counts.update(
        unjudged_items=unjudged,
        orphan_verdicts=orphans,
        unserved_item_verdicts=unserved,
        conflicting_serves=conflicts,
        n_human_labels=merged.n_human_labels,
        n_judge_labels=merged.n_judge_labels,
        human_labels_unused=merged.human_labels_unused,
        log_labels_overridden=merged.log_labels_overridden,
        judge_labels_held_back=merged.judge_labels_held_back,
    )
    counts.update(_line_counts(con, content_sha, conflicts))
    return funnel, counts


_NEW_LOG_COLUMNS = tuple(c for c in LABEL_ROW_COLUMNS if c != "overridden")


def _store_labels(con: Connection, build_id: int, *, incremental: bool) -> None:
    """Make the open rows of build_labels this build's labels, writing only what changed.

    The build's rows that differ from the open ones are `_final`: the log labels it
    recomputed, with whether a merged label replaced them; every merged (human, judge)
    label; and held-over log labels whose replacement by a merged label began or ended.
    An open row in that domain that `_final` does not hold identically is closed at this
    build; a `_final` row with no identical open row is opened at it. Everything else
    stays open untouched.
    """
    cols = ", ".join(_NEW_LOG_COLUMNS)
    held = ", ".join("l." + c for c in _NEW_LOG_COLUMNS)
    # Held-over rows whose replacement began (not overridden, now under a merged label)
    # or ended (overridden, no longer): two lookups a filter on `overridden` and a join
    # with the few merged pairs keep small, not a test of every open row.
    held_over = (
        ""
        if not incremental
        else f"""
UNION ALL
SELECT {held}, false AS overridden
FROM build_labels l
WHERE l.valid_to_build IS NULL AND l.source = 'log' AND l.overridden AND l.query_id NOT IN (SELECT query_id FROM _scope)
  AND (l.query_id, l.doc_id) NOT IN (SELECT query_id, doc_id FROM _replaced_log_pairs)
UNION ALL
SELECT {held}, true AS overridden
FROM build_labels l SEMI JOIN _replaced_log_pairs m ON m.query_id = l.query_id AND m.doc_id = l.doc_id
WHERE l.valid_to_build IS NULL AND l.source = 'log' AND NOT coalesce(l.overridden, false)
  AND l.query_id NOT IN (SELECT query_id FROM _scope)"""
    )
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _final AS
SELECT {cols}, (query_id, doc_id) IN (SELECT query_id, doc_id FROM _replaced_log_pairs) AS overridden FROM _newlog
UNION ALL
SELECT {cols}, false AS overridden FROM _merged{held_over}"""
    )
    # The open rows in that domain: all of them for a full build; for an incremental one
    # those of the touched queries, every merged row, and held-over rows `_final` restates
    # (looked up among the few `_final` rows of untouched queries, not all of them).
    domain = (
        ""
        if not incremental
        else " AND (o.source <> 'log' OR o.query_id IN (SELECT query_id FROM _scope)"
        " OR (o.query_id, o.doc_id) IN (SELECT query_id, doc_id FROM _final WHERE source = 'log'"
        " AND query_id NOT IN (SELECT query_id FROM _scope)))"
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _open AS SELECT o.rowid AS row_no, o.valid_from_build, "
        + ", ".join("o." + c for c in LABEL_ROW_COLUMNS)
        + " FROM build_labels o WHERE o.valid_to_build IS NULL"
        + domain
    )
    # Rows this build no longer holds are closed at it: moved to build_labels_closed, from
    # the copy `_open` holds (not by a look-up of every open row by rowid).
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _closing AS SELECT o.* FROM _open o ANTI JOIN _final f ON "
        + same_label_row("f", "o")
    )
    con.execute(
        "INSERT INTO build_labels_closed BY NAME SELECT * EXCLUDE (row_no), ?::BIGINT AS valid_to_build FROM _closing",
        [build_id],
    )
    con.execute("DELETE FROM build_labels WHERE rowid IN (SELECT row_no FROM _closing)")
    con.execute(
        f"INSERT INTO build_labels BY NAME SELECT ? AS valid_from_build, NULL::BIGINT AS valid_to_build, "
        f"{', '.join('f.' + c for c in LABEL_ROW_COLUMNS)} FROM _final f ANTI JOIN _open o ON "
        + same_label_row("f", "o"),
        [build_id],
    )
    con.execute("DROP TABLE _open")
    con.execute("DROP TABLE _closing")


def _rubric_name(text: str) -> str | None:
    from goldenset.labelling.rubric_set import recorded_names

    return recorded_names(text)


def label_reject_reasons(con: Connection, content_sha: str) -> dict[str, int]:
    """Label lines rejected as a build on snapshot `content_sha` sees them, by reason (most first)."""
    reasons = quarantine(con, None, conflicting=0, content_sha=content_sha).label
    return dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))


def _line_counts(con: Connection, content_sha: str, conflicts: int) -> dict[str, int]:
    """Log and label lines read, and rejected as this build sees them (goldenset.counts, the one definition).

    `lines_rejected` is the log lines rejected at ingest (the rejected share's numerator);
    `label_lines_rejected` holds the lines held back for an unknown version too.
    """
    lines = lines_read(con)
    q = quarantine(con, None, conflicting=conflicts, content_sha=content_sha)
    return {
        "lines_read": lines.log_lines_read,
        "lines_rejected": q.log_lines_rejected_at_ingest,
        "label_lines_read": lines.label_lines_read,
        "label_lines_rejected": q.label_lines_rejected,
    }


def _merged_queries(query_map) -> int:
    """Normalised tasks folded into another query (each fold counts once)."""
    return sum(1 for p, norm, qid in query_map if qid != _own_id(p, norm))


def _own_id(project: str, task_norm: str) -> str:
    from goldenset.records import query_id

    return query_id(project, task_norm)


def _funnel(con: Connection) -> tuple[list[FunnelStep], int, int]:
    """The funnel, unjudged items and unserved-item verdicts: sums over query_stats."""
    (
        judged,
        judged_serves,
        always,
        ranked,
        ranked_serves,
        retired,
        active,
        active_serves,
        repeats_dropped,
        repeats,
        queries,
        no_positive_dropped,
        kept,
        kept_queries,
        unjudged,
        unserved,
        human_kept,
        human_kept_queries,
    ) = con.execute(_FUNNEL_FROM_STATS).fetchall()[0]
    return (
        [
            FunnelStep(STEPS[0], 0, judged, judged_serves),
            FunnelStep(STEPS[1], always, ranked, ranked_serves),
            FunnelStep(STEPS[2], retired, active, active_serves),
            FunnelStep(STEPS[3], repeats_dropped, repeats, queries),
            FunnelStep(STEPS[4], no_positive_dropped, kept, kept_queries, human_kept, human_kept_queries),
        ],
        unjudged,
        unserved,
    )
