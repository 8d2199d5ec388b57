"""The nightly fold: queries whose only change is added lines fold them into what they held.

An incremental build (same snapshot, no merges, same label files) recomputes the
queries new lines touched. Recomputing a query reads its whole history, and the
queries a busy day touches are the popular ones with the longest histories, so
that cost grows with the log. For most touched queries it need not: when nothing
of theirs was removed, the repeats filter's winner of each (query, document) is the
later of the winner the previous build held and the judgments of the serves the new
lines touched, and the funnel counts move by what those serves add. This module
splits the scope in two:

- `_recompute`: queries a removed line touched (a replaced file), queries the
  previous build did not hold (no positive yet, or new), and queries of a serve_id
  with lines in both old and new files (which line is the accepted serve may
  change). These go through the four filters over their whole history as before.
- `_delta`: every other touched query. `fold` reads only the serves the new lines
  touched (their items, all their verdict lines), the previous build's log labels
  and query_stats rows of those queries, and writes their rows into the build's
  working tables: `_qs` (query_stats), `_dlabels` (log labels) and `_delta_latest_judgments` (the
  judgments left after filters 1-3, for agreement).

Both give the same result; `tests/test_incremental.py` holds every build to a fresh
full build of the same input.
"""

from __future__ import annotations

from goldenset.connection import Connection
from goldenset.schema import (
    ACCEPTED_LINE,
    FIRST_CONTENT_KEY,
    WINNING_VERDICT,
    active_documents,
    log_label_row,
    stale_reason,
)

# Files whose lines are new since the last build (added or rewritten).
_NEW_FILES = (
    "CREATE OR REPLACE TEMP TABLE _dnew AS SELECT DISTINCT source_file FROM log_dirty WHERE NOT coalesce(removed, true)"
)
_SPLIT = (
    """CREATE OR REPLACE TEMP TABLE _recompute AS
       SELECT query_id FROM log_dirty WHERE coalesce(removed, true) AND query_id IS NOT NULL
       UNION
       SELECT s.query_id FROM log_serves s
       SEMI JOIN (SELECT serve_id FROM log_dirty WHERE coalesce(removed, true)) d ON d.serve_id = s.serve_id
       UNION
       -- (the open log rows of the scope's queries only: a DISTINCT over all of them
       -- grows with the set, 0.21 s against 0.09 s at 3.9 million labels)
       SELECT query_id FROM _scope
       ANTI JOIN (SELECT query_id FROM build_labels SEMI JOIN _scope USING (query_id)
                  WHERE valid_to_build IS NULL AND source = 'log') g
       USING (query_id)
       UNION
       -- rows stored before serve_ts was kept
       SELECT query_id FROM _scope SEMI JOIN (SELECT query_id FROM build_labels
         WHERE valid_to_build IS NULL AND source = 'log' AND serve_ts IS NULL) o USING (query_id)
       UNION
       SELECT s.query_id FROM log_serves s WHERE s.serve_id IN (
         SELECT l.serve_id FROM log_serves l
         SEMI JOIN (SELECT serve_id FROM log_dirty WHERE NOT coalesce(removed, true) AND query_id IS NOT NULL) n
           ON n.serve_id = l.serve_id
         ANTI JOIN _dnew f ON f.source_file = l.source_file)""",
    """CREATE OR REPLACE TEMP TABLE _delta AS
       SELECT query_id FROM _scope EXCEPT SELECT query_id FROM _recompute""",
)
# Folding pays when the new lines are a small part of the log (a night on top of weeks).
# A backfill is recomputed whole: as cheap, and without holding every new line's
# serves, items and verdicts at once in working tables.
FOLD_AT_MOST = 0.2
_NEW_SHARE = """
SELECT (SELECT count(DISTINCT serve_id) FROM log_dirty WHERE NOT coalesce(removed, true)),
       (SELECT count(*) FROM log_serves)
"""

_STAGE = (
    # The accepted serves the new lines touched, of the delta queries.
    f"""CREATE OR REPLACE TEMP TABLE _das AS
        SELECT * FROM (
          SELECT s.serve_id, s.ts AS serve_ts, s.project, s.task, s.query_id, s.source_file, s.line,
                 s.source_file IN (SELECT source_file FROM _dnew) AS is_new
          FROM log_serves s
          WHERE s.serve_id IN (SELECT serve_id FROM log_dirty WHERE NOT coalesce(removed, true))
          {ACCEPTED_LINE})
        WHERE query_id IN (SELECT query_id FROM _delta)""",
    f"""CREATE OR REPLACE TEMP TABLE _dit AS
       SELECT a.serve_id, a.serve_ts, a.project, a.task, a.query_id, a.is_new, i.doc_id, i.doc_version, i.channel,
              d.doc_id IS NOT NULL AS active, d.version AS current_version, d.superseded_by
       FROM _das a JOIN log_serve_items i ON i.source_file = a.source_file AND i.line = a.line
       LEFT JOIN {active_documents("?")} d ON d.doc_id = i.doc_id""",
    # Every verdict line of those serves, and whether it is new.
    """CREATE OR REPLACE TEMP TABLE _dv AS
       SELECT v.serve_id, v.doc_id, v.verdict, v.ts, v.dt, v.file_name, v.line,
              v.source_file IN (SELECT source_file FROM _dnew) AS is_new
       FROM log_verdicts v WHERE v.serve_id IN (SELECT serve_id FROM _das)""",
    # The winning verdict of each item now, and before the new lines came.
    "CREATE OR REPLACE TEMP TABLE _delta_winning_verdicts AS SELECT serve_id, doc_id, verdict, ts FROM _dv "
    + WINNING_VERDICT,
    "CREATE OR REPLACE TEMP TABLE _dwb AS SELECT serve_id, doc_id, verdict, ts FROM _dv WHERE NOT is_new "
    + WINNING_VERDICT,
)

# One serve's share of the additive funnel columns, given its winning verdicts...
_ITEM_SHARE = """
SELECT i.query_id, i.serve_id,
       count(w.doc_id) AS judged,
       count(w.doc_id) FILTER (WHERE i.channel = 'always') AS always_dropped,
       count(w.doc_id) FILTER (WHERE i.channel = 'ranked') AS ranked,
       count(w.doc_id) FILTER (WHERE i.channel = 'ranked' AND NOT i.active) AS retired_dropped,
       count(w.doc_id) FILTER (WHERE i.channel = 'ranked' AND i.active) AS active,
       count(*) FILTER (WHERE w.doc_id IS NULL) AS unjudged,
       0 AS unserved
FROM _dit i LEFT JOIN {winners} w ON w.serve_id = i.serve_id AND w.doc_id = i.doc_id
WHERE {serves}
GROUP BY i.query_id, i.serve_id
"""
# ...and its verdict lines naming a document it did not serve.
_UNSERVED_SHARE = """
SELECT a.query_id, a.serve_id, 0 AS judged, 0 AS always_dropped, 0 AS ranked, 0 AS retired_dropped, 0 AS active,
       0 AS unjudged, count(*) AS unserved
FROM _dv v JOIN _das a ON a.serve_id = v.serve_id
ANTI JOIN _dit i ON i.serve_id = v.serve_id AND i.doc_id = v.doc_id
WHERE {lines}
GROUP BY a.query_id, a.serve_id
"""
_ADDITIVE = ("judged", "always_dropped", "ranked", "retired_dropped", "active", "unjudged", "unserved")
_SERVES = {"judged": "judged_serves", "ranked": "ranked_serves", "active": "active_serves"}


def _shares() -> str:
    """Per delta query: what the touched serves add now minus what they added before the new lines."""
    now = [_ITEM_SHARE.format(winners="_delta_winning_verdicts", serves="true"), _UNSERVED_SHARE.format(lines="true")]
    before = [
        _ITEM_SHARE.format(winners="_dwb", serves="NOT i.is_new"),
        _UNSERVED_SHARE.format(lines="NOT v.is_new AND NOT a.is_new"),
    ]
    sums = ", ".join(
        [f"sum(sign * {c}) AS {c}" for c in _ADDITIVE]
        + [f"sum(sign * ({c} > 0)::INTEGER) AS {s}" for c, s in _SERVES.items()]
    )
    parts = [f"SELECT 1 AS sign, * FROM ({q})" for q in now] + [f"SELECT -1 AS sign, * FROM ({q})" for q in before]
    return f"CREATE OR REPLACE TEMP TABLE _dshare AS SELECT query_id, {sums} FROM ({' UNION ALL '.join(parts)}) GROUP BY query_id"


_WINNERS = (
    # Candidates: the previous build's winner of each pair, unless its serve is one the new
    # lines touched, and every judged, ranked, active item of the touched serves.
    # (The previous winners' task is the query's task, which only the latest of them can set.)
    f"""CREATE OR REPLACE TEMP TABLE _dcand AS
        SELECT l.query_id, l.doc_id, l.serve_id, l.doc_version, l.verdict, l.judged_at, l.stale_reason,
               l.serve_ts, l.project, l.task
        FROM build_labels l
        WHERE l.valid_to_build IS NULL AND l.source = 'log' AND l.query_id IN (SELECT query_id FROM _delta)
          AND l.serve_id NOT IN (SELECT serve_id FROM _das)
        UNION ALL
        SELECT i.query_id, i.doc_id, i.serve_id, i.doc_version, w.verdict, w.ts AS judged_at,
               {stale_reason("i")} AS stale_reason,
               i.serve_ts, i.project, i.task
        FROM _dit i JOIN _delta_winning_verdicts w ON w.serve_id = i.serve_id AND w.doc_id = i.doc_id
        WHERE i.channel = 'ranked' AND i.active""",
    # The repeats rule of the build: the latest serve (ts, then larger serve_id) wins.
    """CREATE OR REPLACE TEMP TABLE _delta_latest_judgments AS
       SELECT * FROM _dcand
       QUALIFY row_number() OVER (PARTITION BY query_id, doc_id ORDER BY serve_ts DESC, serve_id DESC) = 1""",
    # The query's project: its latest judgment after filters 1-2 is the winner of its pair. Its
    # task is its display text (`_qdisplay`, over all its accepted serves); filter 4 keeps it
    # with a log helped or a human positive (`_hpos`), as the build does (contract v5).
    """CREATE OR REPLACE TEMP TABLE _dq AS
       SELECT q.query_id, q.project, coalesce(d.task, q.task) AS task, q.repeats_left,
              q.log_positive OR q.query_id IN (SELECT query_id FROM _hpos) AS positive, q.log_positive
       FROM (SELECT query_id, project, task, count(*) OVER (PARTITION BY query_id) AS repeats_left,
                    bool_or(verdict = 'helped') OVER (PARTITION BY query_id) AS log_positive
             FROM _delta_latest_judgments
             QUALIFY row_number() OVER (PARTITION BY query_id ORDER BY serve_ts DESC, serve_id DESC) = 1) q
       LEFT JOIN _qdisplay d USING (query_id)""",
)

_FOLD_STATS = f"""
INSERT INTO _qs BY NAME
SELECT p.query_id,
       {", ".join(f"p.{c} + coalesce(d.{c}, 0) AS {c}" for c in (*_ADDITIVE, *_SERVES.values()))},
       p.active + coalesce(d.active, 0) - coalesce(q.repeats_left, 0) AS repeats_dropped,
       coalesce(q.repeats_left, 0) AS repeats_left,
       CASE WHEN coalesce(q.positive, false) THEN 0 ELSE coalesce(q.repeats_left, 0) END AS no_positive_dropped,
       CASE WHEN coalesce(q.positive, false) THEN q.repeats_left ELSE 0 END AS kept,
       CASE WHEN coalesce(q.positive, false) AND NOT q.log_positive THEN q.repeats_left ELSE 0 END AS human_kept
FROM query_stats p JOIN _delta USING (query_id)
LEFT JOIN _dshare d USING (query_id) LEFT JOIN _dq q USING (query_id)
"""
# The log labels of the delta queries that still hold a positive.
_LABELS = (
    "CREATE OR REPLACE TEMP TABLE _dlabels AS SELECT "
    + log_label_row("j", "q", "j.stale_reason")
    + " FROM _delta_latest_judgments j JOIN _dq q USING (query_id) WHERE q.positive"
)
# Orphan verdicts and conflicting duplicate serves are properties of a serve_id's lines,
# so after added lines alone they move by what the touched serve_ids' lines say now
# against what their old lines said.
_SIDE = f"""
WITH ids AS (SELECT DISTINCT serve_id FROM log_dirty),
sl AS (SELECT serve_id, content_key, dt, file_name, line, source_file IN (SELECT source_file FROM _dnew) AS is_new
       FROM log_serves WHERE serve_id IN (SELECT serve_id FROM ids)),
vs AS (SELECT serve_id, count(*) AS n_all,
              count(*) FILTER (WHERE source_file NOT IN (SELECT source_file FROM _dnew)) AS n_old
       FROM log_verdicts WHERE serve_id IN (SELECT serve_id FROM ids) GROUP BY serve_id),
ss AS (SELECT serve_id, count(*) AS n_all, count(*) FILTER (WHERE NOT is_new) AS n_old FROM sl GROUP BY serve_id),
first_now AS (SELECT serve_id, {FIRST_CONTENT_KEY} AS k FROM sl GROUP BY serve_id),
first_old AS (SELECT serve_id, {FIRST_CONTENT_KEY} AS k FROM sl WHERE NOT is_new GROUP BY serve_id)
SELECT
  (SELECT coalesce(sum(CASE WHEN coalesce(ss.n_all, 0) = 0 THEN vs.n_all ELSE 0 END
                       - CASE WHEN coalesce(ss.n_old, 0) = 0 THEN vs.n_old ELSE 0 END), 0)
   FROM vs LEFT JOIN ss USING (serve_id)),
  (SELECT count(*) FROM sl JOIN first_now f USING (serve_id) WHERE sl.content_key <> f.k)
  - (SELECT count(*) FROM sl JOIN first_old f USING (serve_id) WHERE NOT sl.is_new AND sl.content_key <> f.k)
"""


def plan(con: Connection) -> bool:
    """Split `_scope` into `_recompute` and `_delta` (inside the build's transaction).

    Returns whether it folds, that is whether the new lines are few enough.
    """
    con.execute(_NEW_FILES)
    touched, lines = con.execute(_NEW_SHARE).fetchall()[0]
    if touched > FOLD_AT_MOST * lines:
        con.execute("CREATE OR REPLACE TEMP TABLE _recompute AS SELECT query_id FROM _scope")
        con.execute("CREATE OR REPLACE TEMP TABLE _delta AS SELECT query_id FROM _scope WHERE false")
        return False
    for stmt in _SPLIT:
        con.execute(stmt)
    return True


def side_counts(con: Connection, orphans_before: int, conflicts_before: int) -> tuple[int, int] | None:
    """Orphan verdicts and conflicting serves after this build's added lines; None if lines were removed."""
    if con.execute("SELECT count(*) FROM log_dirty WHERE coalesce(removed, true)").fetchall()[0][0]:
        return None
    d_orphans, d_conflicts = con.execute(_SIDE).fetchall()[0]
    return orphans_before + int(d_orphans), conflicts_before + int(d_conflicts)


def fold(con: Connection, content_sha: str) -> None:
    """Add the delta queries' rows to `_qs`, and leave their labels in `_dlabels`, judgments in `_delta_latest_judgments`.

    Reads query_stats and build_labels as the previous build left them: call it before
    the build replaces either.
    """
    con.execute(_STAGE[0])
    con.execute(_STAGE[1], [content_sha])
    for stmt in _STAGE[2:]:
        con.execute(stmt)
    con.execute(_shares())
    for t in ("_dv", "_dwb"):  # done with: keep the working set small
        con.execute("DROP TABLE " + t)
    for stmt in _WINNERS:
        con.execute(stmt)
    con.execute(_FOLD_STATS)
    con.execute(_LABELS)
