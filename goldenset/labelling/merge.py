"""Human (and gated judge) labels into the build (contract 7.3 and 8.3).

Runs inside the build's transaction, after the four filters have computed the log
labels of build `build_id` (the relation the build names, `_log`); the build stores
what the merge leaves in `_merged` and `_replaced_log_pairs`:

1. Current labels whose version a snapshot of a committed build (or of this build)
   holds; of those, the pairs whose query is golden in this build and whose document
   is active take part. The others are kept and counted (`human_labels_unused`).
2. The human label of a pair: if some current label is at the document's current
   version only those vote, else all do; most votes wins; a tie goes to the label
   whose latest voting line is later. Its version, decided_by and judged_at come from
   that latest voting line.
3. It replaces the log label of the pair unless it is stale and the log label is not.
   Replaced log labels (`_replaced_log_pairs`) stay in `build_labels`, flagged `overridden`.
4. A judge annotator takes part only while it passes the gate of goldenset.labelling.judge_gate
   (kappa against the human label on the pairs of audited queries, contract 13.2: at least `min_pairs`
   pairs and the lower bound of kappa's interval at least `min_kappa`); then it votes (as
   in 2) on the pairs no human current label covers.

The no_positive filter is not applied again: a query whose positives were all
overruled stays in the set.

Human positives (contract v5, section 3 filter 4): before the filters run, `human_positives`
leaves in `_hpos` every pair whose human label (step 2, from human lines alone, over every
query and not only golden ones) has grade >= 1 and stands at the current version of an active
document. Filter 4 keeps a query holding a judgment after filter 3 when it has a log `helped`
or such a pair. Judge labels never make a positive: a judge takes part only on golden
queries, behind a gate measured against humans, and must not decide which queries are golden.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import duckdb

from goldenset.connection import Connection
from goldenset.labelling.judge_gate import BUILD_JUDGE_COLUMNS, JudgeGate, JudgeOutcome, gate_judges, outcome_row
from goldenset.schema import CURRENT_LABEL, active_documents, stale_reason


@dataclass(frozen=True)
class MergeCounts:
    """What the merge added to the build's counts."""

    n_human_labels: int
    n_judge_labels: int
    human_labels_unused: int
    log_labels_overridden: int
    judge_labels_held_back: int
    judges: tuple[JudgeOutcome, ...]


_STAGE = (
    # Versions a snapshot of a committed build, or of this build, holds.
    """CREATE OR REPLACE TEMP TABLE _mk AS
       SELECT DISTINCT doc_id, version FROM corpus_documents
       WHERE content_sha256 IN (SELECT corpus_content_sha256 FROM golden_builds) OR content_sha256 = $sha""",
    f"""CREATE OR REPLACE TEMP TABLE _mcur AS
        SELECT h.* FROM human_labels h SEMI JOIN _mk k ON k.doc_id = h.doc_id AND k.version = h.doc_version
        {CURRENT_LABEL}""",
    # The project and task of each query a current label names (not of the whole golden set).
    """CREATE OR REPLACE TEMP TABLE _mgq AS
       SELECT query_id, any_value(project) AS project, any_value(task) AS task
       FROM {log} WHERE query_id IN (SELECT query_id FROM _mcur) GROUP BY query_id""",
    """CREATE OR REPLACE TEMP TABLE _mpart AS
       SELECT c.*, a.version AS current_version, a.superseded_by
       FROM _mcur c JOIN _mgq g USING (query_id)
       JOIN """
    + active_documents("$sha")
    + """ a USING (doc_id)""",
)

# The vote of 7.3 step 2 over the voters in _mvoters; `seq` orders a pair's lines by
# (ts, dt, file name, line), so the larger seq is the later line.
_VOTE = """
CREATE OR REPLACE TEMP TABLE {out} AS
WITH v AS (
  SELECT *, bool_or(doc_version = current_version) OVER (PARTITION BY query_id, doc_id) AS any_current,
         count(*) OVER (PARTITION BY query_id, doc_id) AS n_annotators,
         row_number() OVER (PARTITION BY query_id, doc_id ORDER BY ts, dt, file_name, line) AS seq
  FROM _mvoters
), voting AS (SELECT * FROM v WHERE NOT any_current OR doc_version = current_version),
tally AS (SELECT query_id, doc_id, label, count(*) AS votes, max(seq) AS last_seq FROM voting GROUP BY ALL),
win AS (SELECT * FROM tally QUALIFY row_number() OVER (PARTITION BY query_id, doc_id
                                                       ORDER BY votes DESC, last_seq DESC) = 1)
SELECT w.query_id, w.doc_id, l.doc_version, w.label, l.grade, l.decided_by, l.ts AS judged_at,
       l.n_annotators AS annotators,
       {stale} AS stale_reason, l.current_version
FROM win w JOIN voting l ON l.query_id = w.query_id AND l.doc_id = w.doc_id AND l.seq = w.last_seq
"""

# 7.3 step 3: a merged label x enters the golden set unless it is stale and the pair's log label g is not.
_IN_GOLDEN_SET = "NOT (x.stale_reason IS NOT NULL AND g.query_id IS NOT NULL AND g.stale_reason IS NULL)"
_LOG_OF_X = (
    "LEFT JOIN (SELECT query_id, doc_id, stale_reason FROM {log}) g ON g.query_id = x.query_id AND g.doc_id = x.doc_id"
)
# The pairs of this build's golden_set rows with source human: what makes a drawn query audited (12.1, 13.2).
_HUMAN_ROWS = (
    f"CREATE OR REPLACE TEMP TABLE _mhg AS SELECT x.query_id, x.doc_id FROM _mhl x {_LOG_OF_X} WHERE {_IN_GOLDEN_SET}"
)
_COMBINE = f"""
CREATE OR REPLACE TEMP TABLE _mall AS
SELECT x.*, {_IN_GOLDEN_SET} AS in_golden_set
FROM (SELECT 'human' AS source, * FROM _mhl UNION ALL SELECT 'judge' AS source, * FROM _mjl) x
{_LOG_OF_X}
"""
_WRITE = (
    """INSERT INTO build_human_labels BY NAME
       SELECT $build AS build_id, query_id, doc_id, source, doc_version, label, grade, decided_by, judged_at,
              annotators, stale_reason, in_golden_set FROM _mall""",
    # The log labels the merged ones replace, and the merged rows the build stores.
    """CREATE OR REPLACE TEMP TABLE _replaced_log_pairs AS
       SELECT l.query_id, l.doc_id FROM {log} l SEMI JOIN _mall m
       ON m.query_id = l.query_id AND m.doc_id = l.doc_id AND m.in_golden_set""",
    """CREATE OR REPLACE TEMP TABLE _merged AS
       SELECT m.query_id, g.project, g.task, m.doc_id, m.doc_version, NULL::VARCHAR AS verdict,
              CASE WHEN m.grade >= 1 THEN 1 ELSE 0 END AS relevance, NULL::VARCHAR AS serve_id, m.judged_at,
              m.stale_reason, m.source, m.label, m.grade, m.decided_by, m.annotators, NULL::TIMESTAMP AS serve_ts
       FROM _mall m JOIN _mgq g USING (query_id) WHERE m.in_golden_set""",
)
__all__ = ["JudgeGate", "JudgeOutcome", "MergeCounts", "merge_labels"]  # JudgeGate: where callers found it

_TEMPS = ("_mk", "_mcur", "_mgq", "_mpart", "_mvoters", "_mhl", "_mhg", "_mjl", "_mall")

# Every pair with a human current label on an active document, whatever its query.
_ALL_PAIRS = (
    """CREATE OR REPLACE TEMP TABLE _mvoters AS
       SELECT c.*, a.version AS current_version, a.superseded_by
       FROM _mcur c JOIN """
    + active_documents("$sha")
    + """ a USING (doc_id) WHERE c.kind = 'human'"""
)
# A human positive: the pair's human label has grade >= 1 at the document's current version.
_POSITIVES = """CREATE OR REPLACE TEMP TABLE _hpos AS
SELECT query_id, doc_id, doc_version, label, grade, judged_at FROM _hpos_vote
WHERE grade >= 1 AND doc_version = current_version"""


def stage_human_labels(con: Connection, content_sha: str) -> None:
    """Leave in `_hpos_vote` the human label (7.3 step 2, human lines only) of every pair whose
    document is active in snapshot `content_sha`, whatever its query, with the current version."""
    try:
        for stmt in (*_STAGE[:2], _ALL_PAIRS):
            con.execute(stmt, {"sha": content_sha} if "$sha" in stmt else {})
        con.execute(_VOTE.format(out="_hpos_vote", stale=stale_reason("l")))
    finally:
        with contextlib.suppress(duckdb.Error):  # an aborted transaction is the caller's to roll back
            for t in ("_mk", "_mcur", "_mvoters"):
                con.execute("DROP TABLE IF EXISTS " + t)


def human_positives(con: Connection, content_sha: str) -> int:
    """Leave in `_hpos` (query_id, doc_id, doc_version, label, grade, judged_at) every human positive.

    A human positive (contract v5) is a pair whose human label of 7.3 step 2, computed from
    current lines of kind `human` whose version a snapshot holds, has grade >= 1 and
    doc_version equal to the current version of the document, which is active in the snapshot
    `content_sha`. Returns how many pairs there are. The caller drops `_hpos`.
    """
    stage_human_labels(con, content_sha)
    try:
        con.execute(_POSITIVES)
    finally:
        with contextlib.suppress(duckdb.Error):
            con.execute("DROP TABLE IF EXISTS _hpos_vote")
    return int(con.execute("SELECT count(*) FROM _hpos").fetchall()[0][0])


def merge_labels(
    con: Connection, build_id: int, content_sha: str, gate: JudgeGate, agent_sql: str, log_relation: str
) -> MergeCounts:
    """Merge current human and judge labels into build `build_id` (inside the caller's transaction).

    `agent_sql` selects (query_id, doc_id, doc_version, verdict) of the judgments that
    survived filters 1-3 (the agent's labels, for agreement); `log_relation` names the
    build's log labels. Leaves `_merged` (merged rows) and `_replaced_log_pairs` (replaced log pairs)
    for the build to store.
    """
    params = {"build": build_id, "sha": content_sha}
    try:
        for stmt in _STAGE:
            stmt = stmt.replace("{log}", log_relation)
            con.execute(stmt, {k: v for k, v in params.items() if "$" + k in stmt})
        con.execute("CREATE OR REPLACE TEMP TABLE _mvoters AS SELECT * FROM _mpart WHERE kind = 'human'")
        con.execute(_VOTE.format(out="_mhl", stale=stale_reason("l")))
        con.execute(_HUMAN_ROWS.replace("{log}", log_relation))
        judges = gate_judges(con, gate, content_sha)
        passing = [j.annotator for j in judges if j.passed]
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _mvoters AS SELECT * FROM _mpart p WHERE kind = 'judge' "
            "AND list_contains(?, annotator) AND NOT EXISTS (SELECT 1 FROM _mpart h WHERE h.kind = 'human' "
            "AND h.query_id = p.query_id AND h.doc_id = p.doc_id)",
            [passing],
        )
        con.execute(_VOTE.format(out="_mjl", stale=stale_reason("l")))
        con.execute(_COMBINE.replace("{log}", log_relation))
        for stmt in _WRITE:
            stmt = stmt.replace("{log}", log_relation)
            con.execute(stmt, {"build": build_id} if "$build" in stmt else {})
        con.execute(
            "INSERT INTO build_agent_labels BY NAME SELECT ? AS build_id, a.query_id, a.doc_id, a.doc_version, "
            f"a.verdict FROM ({agent_sql}) a WHERE (a.query_id, a.doc_id) IN "
            "(SELECT query_id, doc_id FROM _mcur WHERE kind = 'human')",
            [build_id],
        )
        if judges:
            con.executemany(
                f"INSERT INTO build_judges ({', '.join(BUILD_JUDGE_COLUMNS)}) "
                f"VALUES ({', '.join('?' for _ in BUILD_JUDGE_COLUMNS)})",
                [outcome_row(build_id, j, gate) for j in judges],
            )
        (human, judge, overridden, unused, held) = con.execute(
            """SELECT (SELECT count(*) FROM _mall WHERE in_golden_set AND source = 'human'),
                      (SELECT count(*) FROM _mall WHERE in_golden_set AND source = 'judge'),
                      (SELECT count(*) FROM _replaced_log_pairs),
                      (SELECT count(*) FROM _mcur WHERE kind = 'human')
                        - (SELECT count(*) FROM _mpart WHERE kind = 'human'),
                      (SELECT count(*) FROM _mcur WHERE kind = 'judge' AND NOT list_contains(?, annotator))""",
            [passing],
        ).fetchall()[0]
    finally:
        for t in _TEMPS:
            con.execute("DROP TABLE IF EXISTS " + t)
    return MergeCounts(human, judge, unused, overridden, held, tuple(judges))
