"""The golden query's display text (contract v5, section 3): clean text for people and retrievers.

A query gathers the raw task texts of its serves, and the text the set shows (on the page,
in Label Studio, in exports, to retrievers in `bench run`) is chosen from them by one rule:

- a raw task's *display form* is `records.display_task`: NFKC, white space folded as
  `str.split()` sees it, case kept (so full-width letters and odd spacing are gone, and a
  variant's capitals stay);
- the forms are counted over every accepted serve of the query (any channel, judged or not:
  phrasing is evidence of how people ask, whatever the agent said of the answer);
- the form with the most serves wins; on a tie the form whose latest serve is later (serve
  ts, then the larger serve_id in code-point order), exactly the tie rule of filter 3.

Decisions: the forms are counted, not the raw variants, so that `ｗｈｉｃｈ` and `which` add
up; case is kept because it carries names (`GDB`, `API`) a retriever may match. NFKC exists
only in Python: a printable-ASCII task's form is computed in SQL (it is NFKC already, and its
only white space is the space), every other distinct task in Python, once per distinct text.
The raw variants stay queryable in the view `query_variants`.
"""

from __future__ import annotations

import pyarrow as pa

from goldenset.connection import Connection
from goldenset.records import display_task

# Per (query, raw task): serves, and the latest serve as (ts, serve_id) for the tie rule.
_VARIANTS = """
CREATE OR REPLACE TEMP TABLE _dvariants AS
SELECT query_id, task, count(*) AS serves, max({{'ts': serve_ts, 'id': serve_id}}) AS latest
FROM ({serves}) GROUP BY query_id, task
"""
# Printable ASCII only: NFKC leaves it as it is and its only white space is ' '.
_ASCII_FORMS = """
CREATE OR REPLACE TEMP TABLE _dforms AS
SELECT task, array_to_string(list_filter(string_split(task, ' '), lambda w: w <> ''), ' ') AS display
FROM (SELECT DISTINCT task FROM _dvariants) WHERE regexp_full_match(task, '[ -~]*')
"""
_OTHER_TASKS = "SELECT DISTINCT task FROM _dvariants WHERE task NOT IN (SELECT task FROM _dforms)"
_CHOOSE = """
CREATE OR REPLACE TEMP TABLE _qdisplay AS
SELECT query_id, display AS task FROM (
  SELECT v.query_id, f.display, sum(v.serves) AS serves, max(v.latest) AS latest
  FROM _dvariants v JOIN _dforms f USING (task) GROUP BY v.query_id, f.display)
QUALIFY row_number() OVER (PARTITION BY query_id ORDER BY serves DESC, latest DESC) = 1
"""


def stage_display_texts(con: Connection, serves_sql: str) -> None:
    """Leave in `_qdisplay` (query_id, task) the display text of every query of `serves_sql`.

    `serves_sql` selects (query_id, task, serve_ts, serve_id) of accepted serves: every
    accepted serve of each query it names (the caller's constant SQL, never input).
    """
    con.execute(_VARIANTS.format(serves=serves_sql))
    con.execute(_ASCII_FORMS)
    others = [r[0] for r in con.execute(_OTHER_TASKS).fetchall()]
    if others:
        forms = pa.table(
            {"task": pa.array(others, pa.string()), "display": pa.array([display_task(t) for t in others], pa.string())}
        )
        con.register("_dforms_py", forms)
        try:
            con.execute("INSERT INTO _dforms SELECT task, display FROM _dforms_py")
        finally:
            con.unregister("_dforms_py")
    con.execute(_CHOOSE)
    con.execute("DROP TABLE _dvariants")
    con.execute("DROP TABLE _dforms")
