"""Log lines validated in bulk inside DuckDB, with the exact Python rules as the fallback.

Per-line Python costs about 45 µs a line; DuckDB checks the common, clean line in a
small fraction of that. But DuckDB's JSON reader is more lenient than the contract
(it takes NaN, Infinity, trailing commas, duplicate keys), so SQL only *accepts*: a
line takes the fast path when it is plainly well-formed by every rule, and anything
else, whether bad or merely unusual, goes through `records.parse_line`, which also
names the reason.

Each line is parsed once for its structure: `from_json` into the fields the rules
name (top level and items), each kept as its JSON text, so a field's type is its
first character and a string's value is its text between the quotes (escapes are
decoded only when there is a backslash). The fast path is sound by construction:

- json_valid, a leading `{`, and no comma before a closing bracket;
- no duplicate keys, vouched for in one of two ways. Either the line holds no other
  key than the fields read, each once: counted by its colons (one after each key, the
  others inside strings whose text is read), or, when it holds a backslash, by its
  `":` key tokens. Then there are no other keys at any depth, and since every field
  the event's rules do not check must be a plain scalar (and the items objects of
  plain scalars), no NaN or Infinity can hide either. Or, for lines with other
  fields: the line holds no `{` but the record's and its items' own, DuckDB's key
  lists of the record and of each item have no repeats, and no bare nan/inf token
  follows `:`, `[` or `,`;
- every required field has exactly the required JSON type and value.

`tests/test_bulk.py` holds the two paths to the same answers on generated lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from goldenset.connection import Connection
from goldenset.records import Rejected, Serve, normalise_task, parse_line

_STRUCTURE = (
    '{"event":"JSON","serve_id":"JSON","ts":"JSON","project":"JSON","task":"JSON","session_id":"JSON",'
    '"doc_id":"JSON","verdict":"JSON",'
    '"items":[{"doc_id":"JSON","doc_version":"JSON","channel":"JSON","rank":"JSON","score":"JSON"}]}'
)
# The same shape with VARCHAR leaves: the JSON texts as plain strings.
_TEXTS = (
    "STRUCT(event VARCHAR, serve_id VARCHAR, ts VARCHAR, project VARCHAR, task VARCHAR, session_id VARCHAR, "
    "doc_id VARCHAR, verdict VARCHAR, items STRUCT(doc_id VARCHAR, doc_version VARCHAR, channel VARCHAR, "
    "rank VARCHAR, score VARCHAR)[])"
)
# gs_str: a string field's value. Without a backslash, the text between the quotes is
# the value (an unescaped quote cannot occur inside a JSON string).
# gs_scalar: a string, a number, true or false (JSON null reads as SQL NULL); never
# NaN, Infinity, an array or an object.
# gs_nc: a field present counts its key's colon plus the colons in its text (0 when
# absent); most texts hold none, and `contains` finds that without copying the text
# (over the fields of 1.4 million lines: 0.23 s, against 0.36 s copying every text).
# gs_ts: the contract's ts, as a naive UTC timestamp; the shape (hours <= 23, minutes
# and seconds <= 59, offsets <= 23:59) is checked by the pattern, the date by the cast,
# which cuts fractions past microseconds as the contract does. A local time of year 0,
# or an instant outside the years 1-9999, is not a real instant.
_MACROS = r"""
CREATE OR REPLACE TEMP MACRO gs_str(f) AS (
  CASE WHEN starts_with(f, '"') THEN CASE WHEN contains(f, '\') THEN json_extract_string(f, '$')
                                          ELSE replace(f, '"', '') END END);
CREATE OR REPLACE TEMP MACRO gs_nonempty(f) AS (coalesce(starts_with(f, '"') AND f <> '""', false));
CREATE OR REPLACE TEMP MACRO gs_number(f) AS (ord(f) BETWEEN 48 AND 57 OR (ord(f) = 45 AND ord(f[2]) BETWEEN 48 AND 57));
CREATE OR REPLACE TEMP MACRO gs_scalar(f) AS (
  CASE WHEN f IS NULL OR starts_with(f, '"') THEN true ELSE f IN ('true', 'false') OR gs_number(f) END);
CREATE OR REPLACE TEMP MACRO gs_n(f) AS ((f IS NOT NULL)::INTEGER);
CREATE OR REPLACE TEMP MACRO gs_nc(f) AS (
  CASE WHEN f IS NULL THEN 0 WHEN contains(f, ':') THEN 1 + strlen(f) - strlen(replace(f, ':', '')) ELSE 1 END);
CREATE OR REPLACE TEMP MACRO gs_ts(s) AS (
  CASE WHEN regexp_full_match(s, '[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])')
        AND NOT starts_with(s, '0000')
  THEN make_timestamp(epoch_us(try_cast(s AS TIMESTAMPTZ))) END);
"""
_TOP = ("event", "serve_id", "ts", "project", "task", "session_id", "doc_id", "verdict")
_ITEM = ("doc_id", "doc_version", "channel", "rank", "score")
_PRESENT = (
    " + ".join(f"gs_n(r.{f})" for f in (*_TOP, "items"))
    + " + coalesce(list_sum(list_transform(r.items, lambda i: "
    + " + ".join(f"gs_n(i.{f})" for f in _ITEM)
    + ")), 0)"
)
# Fields the rules of the line's event do not check must be plain scalars; the fields
# they check are strings when the line is accepted. A verdict with items goes the
# second way.
_UNCHECKED_SCALAR = """CASE WHEN r.event = '"verdict"'
  THEN r.items IS NULL AND gs_scalar(r.project) AND gs_scalar(r.task) AND gs_scalar(r.session_id)
  ELSE gs_scalar(r.session_id) AND gs_scalar(r.doc_id) AND gs_scalar(r.verdict) END"""
# Each field read, counted with the colons in its text (see _ONLY_FIELDS_READ).
_FIELDS_AND_COLONS = (
    " + ".join(f"gs_nc(r.{f})" for f in _TOP)
    + " + gs_n(r.items)"
    + " + coalesce(list_sum(list_transform(r.items, lambda i: "
    + " + ".join(f"gs_nc(i.{f})" for f in _ITEM)
    + ")), 0)"
)
# Every key is followed by one colon, and colons occur elsewhere only inside strings.
# Without a backslash in the line, every string's text is as it stands in the line, so
# the line has no other key than the fields read (none twice, none nested) exactly
# when its colons number the fields present plus the colons in their texts (the items
# field's text, the array, is not read: its items' fields are). With a backslash,
# the key tokens `":` are counted instead (then no colon may follow white space, or a
# key token could go uncounted).
_ONLY_FIELDS_READ = f"""CASE WHEN NOT contains(raw, '\\')
  THEN strlen(raw) - strlen(replace(raw, ':', '')) = {_FIELDS_AND_COLONS}
  ELSE NOT (contains(raw, ' :') OR contains(raw, chr(9) || ':') OR contains(raw, chr(13) || ':'))
       AND (strlen(raw) - strlen(replace(raw, '":', ''))) // 2 = {_PRESENT} END"""
# The second way, for lines with other fields: as strict, but costlier.
_KEYS_APART = r"""
  NOT regexp_matches(raw, '[:\[,]\s*-?([nN][aA][nN]|[iI][nN][fF])')
  AND strlen(raw) - strlen(replace(raw, '{', '')) = 1 + CASE WHEN r.event = '"serve"' THEN coalesce(len(r.items), 0) ELSE 0 END
  AND len(json_keys(raw)) = len(list_distinct(json_keys(raw)))
  AND (r.event IS DISTINCT FROM '"serve"' OR coalesce(list_bool_and(list_transform(json_extract(raw, '$.items[*]'),
        lambda x: len(json_keys(x)) = len(list_distinct(json_keys(x))))), false))
"""
# One statement parses and checks every line of `_lines` and leaves what the log tables
# take, typed, in `_p`; `kind` says which: 's' an accepted serve, 'v' an accepted
# verdict, NULL a line the fast path does not vouch for (Python's rules decide it). No
# filter refers to the parse (a filter on it would be pushed below the parse and parse
# every line twice): each layer adds columns, and a CASE gives each check only the
# lines the one before it let through. `raw` is kept for serves (log_serves keeps their
# line) and for the fallback, not for the verdicts, so `_lines` can go once `_p` is made.
# A ts that is not a real instant leaves the line to Python.
_OK = f"""CASE WHEN r IS NULL OR NOT coalesce(r.event IN ('"serve"', '"verdict"'), false) THEN false
  WHEN coalesce({_ONLY_FIELDS_READ} AND {_UNCHECKED_SCALAR}, false) THEN true
  ELSE coalesce({_KEYS_APART}, false) END"""
_VERDICT_OK = """r.event = '"verdict"' AND gs_nonempty(r.serve_id) AND gs_nonempty(r.doc_id)
  AND r.verdict IN ('"helped"', '"noise"', '"wrong"') AND starts_with(r.ts, '"')"""
# A doc_id of type string can only be found in an object, so the item is one. Its
# unchecked fields (rank of an always item, score) are plain scalars. A rank of 19
# digits or more, or a number too large for a double, is left to Python. A ranked
# item's rank of at most 18 digits is such a scalar, and no other test of it is needed.
_ITEM_OK = """coalesce(gs_nonempty(i.doc_id) AND gs_nonempty(i.doc_version)
  AND CASE i.channel WHEN '"ranked"' THEN regexp_full_match(i.rank, '[1-9][0-9]{0,17}')
                     WHEN '"always"' THEN gs_scalar(i.rank) AND (i.rank IS NULL OR NOT regexp_full_match(i.rank, '-?[0-9]{19,}'))
                     ELSE false END
  AND gs_scalar(i.score)
  AND (i.score IS NULL OR NOT gs_number(i.score) OR isfinite(try_cast(i.score AS DOUBLE))), false)"""
# Only items of accepted serves are typed: a ranked item's rank is an integer there.
_INT = """(i.channel = '"ranked"' OR regexp_full_match(i.rank, '-?[0-9]+'))"""
_ITEM_VALUES = f"""{{'doc_id': gs_str(i.doc_id), 'doc_version': gs_str(i.doc_version), 'channel': gs_str(i.channel),
  'rank': CASE WHEN {_INT} THEN i.rank::BIGINT END,
  'score': CASE WHEN gs_number(i.score) THEN i.score::DOUBLE END,
  'rank_text': CASE WHEN {_INT} THEN i.rank END}}"""


def _content_key(items: str) -> str:
    # Two lines of one serve_id are identical when ts, project, task and the item set
    # (doc_version, channel, rank of ranked items) agree. Stored keys of earlier ingests
    # depend on this exact text: change it and old rows no longer compare.
    return f"""md5(to_json({{
  'ts': strftime(ts, '%Y-%m-%dT%H:%M:%S.%f'), 'project': project, 'task': task,
  'items': {items}
}}))"""


_SERVE_OK = f"""r.event = '"serve"' AND gs_nonempty(r.serve_id) AND gs_nonempty(r.project) AND starts_with(r.task, '"')
  AND starts_with(r.ts, '"') AND len(r.items) >= 1
  AND list_bool_and(list_transform(r.items, lambda i: {_ITEM_OK}))
  AND len(list_distinct(list_transform(r.items, lambda i: i.doc_id))) = len(r.items)"""
# Items sorted by doc_id (distinct within a serve, so sorting the rows sorts by it).
_PARSE = f"""
CREATE OR REPLACE TEMP TABLE _p AS
SELECT key, kind, serve_id, ts, project, task, session_id, doc_id, verdict, items,
       CASE WHEN kind = 's' THEN {
    _content_key(
        "list_sort(list_transform(items, lambda i: [i.doc_id, i.doc_version, i.channel, "
        "CASE WHEN i.channel = 'ranked' THEN i.rank_text END]))"
    )
} END AS content_key,
       CASE WHEN kind IS DISTINCT FROM 'v' THEN raw END AS raw
FROM (
  SELECT * EXCLUDE (k0), CASE WHEN ts IS NOT NULL AND year(ts) BETWEEN 1 AND 9999 THEN k0 END AS kind
  FROM (
    SELECT key, raw, k0,
           CASE WHEN k0 IS NOT NULL THEN gs_str(r.serve_id) END AS serve_id,
           CASE WHEN k0 IS NOT NULL THEN gs_ts(gs_str(r.ts)) END AS ts,
           CASE WHEN k0 = 's' THEN gs_str(r.project) END AS project,
           CASE WHEN k0 = 's' THEN gs_str(r.task) END AS task,
           CASE WHEN k0 = 's' THEN gs_str(r.session_id) END AS session_id,
           CASE WHEN k0 = 'v' THEN gs_str(r.doc_id) END AS doc_id,
           CASE WHEN k0 = 'v' THEN gs_str(r.verdict) END AS verdict,
           CASE WHEN k0 = 's' THEN list_transform(r.items, lambda i: {_ITEM_VALUES}) END AS items
    FROM (
      SELECT key, raw, CASE WHEN {_OK} THEN CASE WHEN {_VERDICT_OK} THEN 'v' WHEN {_SERVE_OK} THEN 's' END END AS k0, r
      FROM (
        SELECT key, raw,
               from_json(CASE WHEN starts_with(raw, '{{') AND json_valid(raw) AND NOT regexp_matches(raw, ',\\s*[\\]}}]')
                              THEN raw END, '{_STRUCTURE}')::{_TEXTS} AS r
        FROM _lines))))
"""
# The contract's normalisation in SQL where it is plain: a task of printable ASCII only
# (space to tilde) is NFKC already, casefolds to lower case (A-Z only), and holds no white
# space but the space, so splitting on ' ' is str.split(). An allow-list, not a list of the
# white space to avoid: the deny-list this replaced forgot '\n' (and with it, "Fix\nthe bug"
# became its own golden query). Every other task, control characters included, is
# normalised in Python; tests/test_bulk.py holds the two equal over every character
# str.split() splits on.
_ASCII_TASK = "regexp_full_match(task, '[ -~]*')"
_TASKS = f"""
CREATE OR REPLACE TEMP TABLE _tasks AS
SELECT task, task_norm, task_norm <> '' AS has_text FROM (
  SELECT task, array_to_string(list_filter(string_split(lower(task), ' '), lambda w: w <> ''), ' ') AS task_norm
  FROM (SELECT DISTINCT task FROM _p WHERE kind = 's') WHERE {_ASCII_TASK})
"""
_OTHER_TASKS = "SELECT DISTINCT task FROM _p WHERE kind = 's' AND task NOT IN (SELECT task FROM _tasks)"
_PY_CONTENT_KEYS = f"""
SELECT s.key, {
    _content_key(
        "list([i.doc_id, i.doc_version, i.channel, CASE WHEN i.channel = 'ranked' THEN i.rank_text END] "
        "ORDER BY i.doc_id)"
    )
} AS content_key
FROM _py_serves_arrow s JOIN _py_items_arrow i USING (key)
GROUP BY s.key, ts, project, task
"""
# What staging leaves: the accepted serves (with the line as read), their items and the
# accepted verdicts, of both paths. Views: the rows are written once, into `_p` and the
# three small tables of the Python rules, and read once, by whatever inserts them.
_VIEWS = (
    """CREATE OR REPLACE TEMP VIEW _s AS
    SELECT p.key, p.serve_id, p.ts, p.project, p.task, t.task_norm,
           substr(sha256(p.project || chr(31) || t.task_norm), 1, 16) AS query_id, p.session_id, p.content_key, p.raw
    FROM _p p JOIN _tasks t USING (task) WHERE p.kind = 's'
    UNION ALL SELECT * FROM _py_serves""",
    """CREATE OR REPLACE TEMP VIEW _i AS
    SELECT key, serve_id, it.doc_id, it.doc_version, it.channel, it.rank, it.score, it.rank_text
    FROM (SELECT key, serve_id, unnest(items) AS it FROM _p WHERE kind = 's')
    UNION ALL SELECT * FROM _py_items""",
    """CREATE OR REPLACE TEMP VIEW _v AS
    SELECT key, serve_id, doc_id, verdict, ts FROM _p WHERE kind = 'v'
    UNION ALL SELECT * FROM _py_verdicts""",
)
STAGING_VIEWS = ("_s", "_i", "_v")
STAGING_TABLES = ("_p", "_tasks", "_py_serves", "_py_items", "_py_verdicts")


@dataclass
class Staged:
    """What staging left in the views `_s`, `_i`, `_v`, and what it found by itself."""

    rejects: list[tuple[int, str, str, str]]  # key, reason, detail, raw
    blank: list[int] = field(default_factory=list)  # keys of lines that turned out blank
    fast_lines: int = 0
    fallback_lines: int = 0


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
    return pa.table(
        {
            "task": pa.array(tasks, pa.string()),
            "task_norm": pa.array(norms, pa.string()),
            "has_text": pa.array([bool(t.split()) for t in tasks], pa.bool_()),
        }
    )


def stage(con: Connection, extra: Sequence[tuple[int, bytes]] = (), *, skip_blank: bool = True) -> Staged:
    """Validate the lines of the temp table `_lines` (key BIGINT, raw VARCHAR, no empty line).

    Leaves the accepted records in the views `_s` (key, serve_id, ts, project, task,
    task_norm, query_id, session_id, content_key, raw), `_i` (key, serve_id, doc_id,
    doc_version, channel, rank, score, rank_text) and `_v` (key, serve_id, doc_id,
    verdict, ts), and drops `_lines`: everything read from here on is in `_p`. `extra` are
    lines that are not valid UTF-8 (they only go through the Python rules). A line that
    holds only white space is not a record: its key is returned in `blank` (with
    `skip_blank` false it is judged like any other line). Read the views before
    `drop_staging`.
    """
    con.execute(_MACROS)
    con.execute(_PARSE)
    con.execute("DROP TABLE _lines")
    con.execute(_TASKS)
    other = [r[0] for r in con.execute(_OTHER_TASKS).fetchall()]
    if other:
        con.register("_tasks_arrow", _task_info(other))
        try:
            con.execute("INSERT INTO _tasks SELECT * FROM _tasks_arrow")
        finally:
            con.unregister("_tasks_arrow")
    # A task with no text breaks a rule whose reason depends on the other fields: Python decides.
    con.execute("UPDATE _p SET kind = NULL WHERE kind = 's' AND task IN (SELECT task FROM _tasks WHERE NOT has_text)")
    ((n_fast,),) = con.execute("SELECT count(*) FROM _p WHERE kind IS NOT NULL").fetchall()
    fallback = con.execute("SELECT key, raw FROM _p WHERE kind IS NULL ORDER BY key").fetchall()
    fallback += list(extra)
    blank = [k for k, s in fallback if _blank(s)] if skip_blank else []
    if blank:
        skip = set(blank)
        fallback = [(k, s) for k, s in fallback if k not in skip]
    py = _python_rows(fallback)
    for name in ("serves", "items", "verdicts"):
        con.register("_py_" + name + "_arrow", py[name])
    try:
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE _py_serves AS
            SELECT s.* EXCLUDE (raw), k.content_key, s.raw FROM _py_serves_arrow s JOIN ({_PY_CONTENT_KEYS}) k USING (key)""")
        con.execute("CREATE OR REPLACE TEMP TABLE _py_items AS SELECT * FROM _py_items_arrow")
        con.execute("CREATE OR REPLACE TEMP TABLE _py_verdicts AS SELECT * FROM _py_verdicts_arrow")
    finally:
        for name in ("serves", "items", "verdicts"):
            con.unregister("_py_" + name + "_arrow")
    for view in _VIEWS:
        con.execute(view)
    return Staged(py["rejects"], blank, n_fast, len(fallback))


def drop_staging(con: Connection) -> None:
    for v in STAGING_VIEWS:
        con.execute("DROP VIEW IF EXISTS " + v)
    for t in STAGING_TABLES:
        con.execute("DROP TABLE IF EXISTS " + t)


def _blank(piece: str | bytes) -> bool:
    # White space as Python's str.strip() sees it (U+00A0, U+3000 ... included).
    if isinstance(piece, bytes):
        return not piece.decode("utf-8", errors="replace").strip()
    return not piece.strip()


def parse_lines(con: Connection, lines: list[tuple[int, str | bytes]]) -> Parsed:
    """Validate non-blank lines, each under a unique integer key (e.g. file and line number)."""
    text = [(k, s) for k, s in lines if isinstance(s, str)]
    con.register(
        "_lines_arrow",
        pa.table(
            {"key": pa.array([k for k, _ in text], pa.int64()), "raw": pa.array([s for _, s in text], pa.string())}
        ),
    )
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _lines AS SELECT * FROM _lines_arrow")
    finally:
        con.unregister("_lines_arrow")
    try:
        staged = stage(con, [(k, s) for k, s in lines if not isinstance(s, str)], skip_blank=False)
        serves = con.sql("SELECT * FROM _s ORDER BY key").to_arrow_table()
        items = con.sql(
            "SELECT key, serve_id, doc_id, doc_version, channel, rank, score FROM _i ORDER BY key"
        ).to_arrow_table()
        verdicts = con.sql("SELECT * FROM _v ORDER BY key").to_arrow_table()
    finally:
        drop_staging(con)
        con.execute("DROP TABLE IF EXISTS _lines")
    return Parsed(serves, items, verdicts, staged.rejects, staged.fast_lines, staged.fallback_lines)


def _python_rows(lines: list[tuple[int, str | bytes]]) -> dict:
    """The exact rules, line by line, for what the fast path did not take."""
    s: dict[str, list] = {
        k: [] for k in ("key", "serve_id", "ts", "project", "task", "task_norm", "query_id", "session_id", "raw")
    }
    i: dict[str, list] = {
        k: [] for k in ("key", "serve_id", "doc_id", "doc_version", "channel", "rank", "score", "rank_text")
    }
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
            for k, val in zip(
                s,
                (key, rec.serve_id, rec.ts, rec.project, rec.task, rec.task_norm, rec.query_id, rec.session_id, raw),
                strict=True,
            ):
                s[k].append(val)
            for it in rec.items:
                for k, item_val in zip(
                    i,
                    (key, rec.serve_id, it.doc_id, it.doc_version, it.channel, it.rank, it.score, it.rank_text),
                    strict=True,
                ):
                    i[k].append(item_val)
        else:
            for k, verdict_val in zip(v, (key, rec.serve_id, rec.doc_id, rec.verdict, rec.ts), strict=True):
                v[k].append(verdict_val)
    types = {"key": pa.int64(), "ts": pa.timestamp("us"), "rank": pa.int64(), "score": pa.float64()}

    def table(cols):
        return pa.table({k: pa.array(vals, types.get(k, pa.string())) for k, vals in cols.items()})

    return {"serves": table(s), "items": table(i), "verdicts": table(v), "rejects": rejects}
