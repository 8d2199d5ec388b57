"""Log lines validated in bulk inside DuckDB, with the exact Python rules as the fallback.

Per-line Python costs about 45 µs a line; DuckDB's JSON functions check the common,
clean line in a fraction of that. But DuckDB's JSON reader is more lenient than the
contract (it takes NaN, Infinity, trailing commas, duplicate keys), so SQL only
*accepts*: a line takes the fast path when it is plainly well-formed by every rule,
and anything else, whether bad or merely unusual, goes through `records.parse_line`,
which also names the reason. The fast path is sound by construction:

- json_valid and a leading `{`, plus no bare nan/inf token after `:`, `[` or `,` and
  no comma before a closing bracket (a string that merely contains such text is sent
  to Python too);
- the line holds no `{` but the record's and its items' own (so no other nested
  object can hide a duplicate key), and DuckDB's key lists of the record and of each
  item have no repeats;
- every required field has exactly the required JSON type and value.

`tests/test_bulk.py` holds the two paths to the same answers on generated lines.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from goldenset.records import Rejected, Serve, normalise_task, parse_line

_TS_MACRO = r"""
CREATE OR REPLACE TEMP MACRO gs_ts(s) AS (
  CASE WHEN regexp_full_match(s, '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})')
        AND substr(s, 12, 2)::INT <= 23 AND substr(s, 15, 2)::INT <= 59 AND substr(s, 18, 2)::INT <= 59
        AND (right(s, 1) = 'Z' OR (left(right(s, 5), 2)::INT <= 23 AND right(s, 2)::INT <= 59))
  THEN try_strptime(substr(s, 1, 19), '%Y-%m-%dT%H:%M:%S')
       + to_microseconds(rpad(left(regexp_extract(s, '\.([0-9]+)', 1), 6), 6, '0')::BIGINT)
       - to_minutes(CASE WHEN right(s, 1) = 'Z' THEN 0
                         ELSE (CASE WHEN substr(s, length(s) - 5, 1) = '-' THEN -1 ELSE 1 END)
                              * (left(right(s, 5), 2)::INT * 60 + right(s, 2)::INT) END)
  END)
"""
# The ts is parsed once per line; a local time of year 0, or an instant outside the
# years 1-9999, is not a real instant (ts_ok false sends the line to Python).
_PATHS = "['$.event', '$.serve_id', '$.ts', '$.project', '$.task', '$.items', '$.doc_id', '$.verdict', '$.session_id']"
# One parse for the JSON types of all fields and one for their values as text; the
# fields are then plain lists, not JSON fragments parsed again at every use.
_STAGE = r"""
CREATE OR REPLACE TEMP TABLE _p AS
SELECT * EXCLUDE (ts_s), coalesce(ts IS NOT NULL AND substr(ts_s, 1, 4) <> '0000'
                                   AND year(ts) BETWEEN 1 AND 9999, false) AS ts_ok
FROM (SELECT *, gs_ts(ts_s) AS ts FROM (
  SELECT key, t, v, n_open, len(keys) = len(list_distinct(keys)) AS keys_ok,
         CASE WHEN t[3] = 'VARCHAR' THEN v[3] END AS ts_s
  FROM (
    SELECT key, json_type(raw, PATHS) AS t, json_extract_string(raw, PATHS) AS v,
      json_keys(raw) AS keys,
      length(raw) - length(replace(raw, '{', '')) AS n_open
    FROM _lines
    WHERE json_valid(raw) AND starts_with(raw, '{')
      AND NOT regexp_matches(raw, '[:\[,]\s*-?([nN][aA][nN]|[iI][nN][fF])|,\s*[\]}]'))))
""".replace("PATHS", _PATHS)

_VERDICTS = """
CREATE OR REPLACE TEMP TABLE _v AS
SELECT key, v[2] AS serve_id, v[7] AS doc_id, v[8] AS verdict, ts
FROM _p
WHERE t[1] = 'VARCHAR' AND v[1] = 'verdict' AND keys_ok AND n_open = 1
  AND t[2] = 'VARCHAR' AND v[2] <> ''
  AND t[7] = 'VARCHAR' AND v[7] <> ''
  AND t[8] = 'VARCHAR' AND v[8] IN ('helped', 'noise', 'wrong')
  AND ts_ok
"""

_SERVE_CANDIDATES = """
CREATE OR REPLACE TEMP TABLE _sc AS
SELECT key, v[2] AS serve_id, ts, v[4] AS project, v[5] AS task,
       CASE WHEN t[9] = 'VARCHAR' THEN v[9] END AS session_id, v[6] AS items, n_open
FROM _p
WHERE t[1] = 'VARCHAR' AND v[1] = 'serve'
  AND t[2] = 'VARCHAR' AND v[2] <> ''
  AND t[4] = 'VARCHAR' AND v[4] <> ''
  AND t[5] = 'VARCHAR'
  AND t[6] = 'ARRAY' AND keys_ok AND ts_ok
"""

_ITEM_PATHS = "['$.doc_id', '$.doc_version', '$.channel', '$.rank', '$.score']"
_ITEM_CANDIDATES = """
CREATE OR REPLACE TEMP TABLE _ic AS
SELECT key, n_items, u, g, len(keys) = len(list_distinct(keys)) AS keys_ok
FROM (
  SELECT key, n_items, json_type(it, PATHS) AS u, json_extract_string(it, PATHS) AS g, json_keys(it) AS keys
  FROM (SELECT key, len(its) AS n_items, unnest(its) AS it
        FROM (SELECT key, json_extract(items, '$[*]') AS its FROM _sc
              WHERE n_open = 1 + json_array_length(items))))
""".replace("PATHS", _ITEM_PATHS)

# A doc_id of type VARCHAR can only be found in an object, so the item is one.
_ITEM_OK = """
u[1] = 'VARCHAR' AND g[1] <> ''
AND u[2] = 'VARCHAR' AND g[2] <> ''
AND u[3] = 'VARCHAR' AND g[3] IN ('ranked', 'always')
AND (g[3] = 'always' OR (u[4] = 'UBIGINT' AND try_cast(g[4] AS UBIGINT) BETWEEN 1 AND 9223372036854775807))
"""

_SERVES = f"""
CREATE OR REPLACE TEMP TABLE _s AS
SELECT s.key, s.serve_id, s.ts, s.project, s.task, s.session_id
FROM _sc s JOIN (
  SELECT key, bool_and(coalesce(keys_ok AND {_ITEM_OK}, false)) AS ok, count(*) AS n,
         count(DISTINCT g[1]) AS n_docs
  FROM _ic GROUP BY key
) i USING (key)
WHERE i.ok AND i.n_docs = i.n
"""

_ITEMS = """
CREATE OR REPLACE TEMP TABLE _i AS
SELECT key, g[1] AS doc_id, g[2] AS doc_version, g[3] AS channel,
       CASE WHEN u[4] IN ('UBIGINT', 'BIGINT') THEN try_cast(g[4] AS BIGINT) END AS rank,
       CASE WHEN u[5] IN ('UBIGINT', 'BIGINT', 'DOUBLE') THEN try_cast(g[5] AS DOUBLE) END AS score,
       CASE WHEN u[4] IN ('UBIGINT', 'BIGINT') THEN g[4] END AS rank_text
FROM _ic WHERE key IN (SELECT key FROM _s)
"""

# Two lines of one serve_id are identical when ts, project, task and the item set
# (doc_version, channel, rank of ranked items) agree; computed the same way for
# every serve, whichever path validated it.
CONTENT_KEY = """
SELECT s.key, md5(to_json({
  'ts': strftime(s.ts, '%Y-%m-%dT%H:%M:%S.%f'), 'project': s.project, 'task': s.task,
  'items': list([i.doc_id, i.doc_version, i.channel,
                 CASE WHEN i.channel = 'ranked' THEN i.rank_text END] ORDER BY i.doc_id)
})) AS content_key
FROM _s s JOIN _i i ON i.key = s.key
GROUP BY s.key, s.ts, s.project, s.task
"""


@dataclass
class Parsed:
    """Validated rows (pyarrow tables keyed by the caller's line key) and the rejects."""

    serves: pa.Table  # key, serve_id, ts, project, task, task_norm, query_id, session_id, content_key, raw
    items: pa.Table  # key, serve_id, doc_id, doc_version, channel, rank, score
    verdicts: pa.Table  # key, serve_id, doc_id, verdict, ts
    rejects: list[tuple[int, str, str, str]]  # key, reason, detail, raw
    fast_lines: int
    fallback_lines: int


def _task_info(tasks: list[str]) -> pa.Table:
    # NFKC and casefold exist only in Python; they run once per distinct task, not per line.
    norms = [normalise_task(t) for t in tasks]
    return pa.table({"task": pa.array(tasks, pa.string()), "task_norm": pa.array(norms, pa.string()),
                     "has_text": pa.array([bool(t.split()) for t in tasks], pa.bool_())})


def parse_lines(con, lines: list[tuple[int, str | bytes]]) -> Parsed:
    """Validate non-blank lines, each under a unique integer key (e.g. file and line number)."""
    text = [(k, s) for k, s in lines if isinstance(s, str)]
    con.register("_lines", pa.table({"key": pa.array([k for k, _ in text], pa.int64()),
                                     "raw": pa.array([s for _, s in text], pa.string())}))
    registered = ["_lines"]
    try:
        con.execute(_TS_MACRO)
        for stmt in (_STAGE, _VERDICTS, _SERVE_CANDIDATES, _ITEM_CANDIDATES, _SERVES):
            con.execute(stmt)
        tasks = [r[0] for r in con.execute("SELECT DISTINCT task FROM _s").fetchall()]
        con.register("_tasks", _task_info(tasks))
        registered.append("_tasks")
        # A task with no text breaks a rule whose reason depends on the other fields: Python decides.
        con.execute("DELETE FROM _s WHERE task IN (SELECT task FROM _tasks WHERE NOT has_text)")
        con.execute(_ITEMS)
        n_fast = con.execute("SELECT (SELECT count(*) FROM _s) + (SELECT count(*) FROM _v)").fetchall()[0][0]
        fallback = con.execute(
            "SELECT key, raw FROM _lines ANTI JOIN (SELECT key FROM _s UNION ALL SELECT key FROM _v) f "
            "USING (key) ORDER BY key").fetchall()
        fallback += [(k, s) for k, s in lines if not isinstance(s, str)]
        py = _python_rows(fallback)
        for name in ("serves", "items", "verdicts"):
            con.register("_py_" + name, py[name])
            registered.append("_py_" + name)
        con.execute("""
            CREATE OR REPLACE TEMP TABLE _s AS
            SELECT s.key, s.serve_id, s.ts, s.project, s.task, t.task_norm,
                   substr(sha256(s.project || chr(31) || t.task_norm), 1, 16) AS query_id, s.session_id
            FROM _s s JOIN _tasks t USING (task)
            UNION ALL SELECT * FROM _py_serves""")
        con.execute("INSERT INTO _i SELECT * FROM _py_items")
        con.execute("INSERT INTO _v SELECT * FROM _py_verdicts")
        serves = con.sql(
            "SELECT s.*, k.content_key, l.raw FROM _s s JOIN (" + CONTENT_KEY + ") k USING (key) "
            "LEFT JOIN _lines l USING (key) ORDER BY s.key").to_arrow_table()
        items = con.sql(
            "SELECT i.key, s.serve_id, i.doc_id, i.doc_version, i.channel, i.rank, i.score "
            "FROM _i i JOIN _s s USING (key) ORDER BY i.key").to_arrow_table()
        verdicts = con.sql("SELECT * FROM _v ORDER BY key").to_arrow_table()
    finally:
        for view in registered:
            con.unregister(view)
        for t in ("_p", "_v", "_sc", "_ic", "_s", "_i"):
            con.execute("DROP TABLE IF EXISTS " + t)
    return Parsed(serves, items, verdicts, py["rejects"], n_fast, len(fallback))


def _python_rows(lines: list[tuple[int, str | bytes]]) -> dict:
    """The exact rules, line by line, for what the fast path did not take."""
    s: dict[str, list] = {k: [] for k in ("key", "serve_id", "ts", "project", "task", "task_norm",
                                           "query_id", "session_id")}
    i: dict[str, list] = {k: [] for k in ("key", "doc_id", "doc_version", "channel", "rank", "score",
                                           "rank_text")}
    v: dict[str, list] = {k: [] for k in ("key", "serve_id", "doc_id", "verdict", "ts")}
    rejects = []
    for key, raw in lines:
        data = raw.encode("utf-8") if isinstance(raw, str) else raw
        try:
            rec = parse_line(data)
        except Rejected as exc:
            text = raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
            rejects.append((key, exc.reason, exc.detail, text))
            continue
        if isinstance(rec, Serve):
            for k, val in zip(s, (key, rec.serve_id, rec.ts, rec.project, rec.task, rec.task_norm,
                                  rec.query_id, rec.session_id)):
                s[k].append(val)
            for it in rec.items:
                for k, val in zip(i, (key, it.doc_id, it.doc_version, it.channel, it.rank, it.score,
                                      it.rank_text)):
                    i[k].append(val)
        else:
            for k, val in zip(v, (key, rec.serve_id, rec.doc_id, rec.verdict, rec.ts)):
                v[k].append(val)
    types = {"key": pa.int64(), "ts": pa.timestamp("us"), "rank": pa.int64(), "score": pa.float64()}

    def table(cols):
        return pa.table({k: pa.array(vals, types.get(k, pa.string())) for k, vals in cols.items()})

    return {"serves": table(s), "items": table(i), "verdicts": table(v), "rejects": rejects}
