"""Label history stored as changes: a version per (source, verdict or label, doc_version, stale_reason).

A rebuild on unchanged input touches no history row; a label that disappears is
closed, and one that comes back opens a new version.
"""

from __future__ import annotations

from dataclasses import dataclass

from goldenset.connection import Connection
from goldenset.schema import open_row

# A version is identified by what the contract says makes one (section 7.3).
_SAME_VERSION = """
b.query_id = h.query_id AND b.doc_id = h.doc_id AND b.source = h.source
AND b.verdict IS NOT DISTINCT FROM h.verdict AND b.label IS NOT DISTINCT FROM h.label
AND b.doc_version = h.doc_version AND b.stale_reason IS NOT DISTINCT FROM h.stale_reason
"""
# Only pairs whose label rows this build opened or closed can change version: every
# other pair's rows, and so its history, are the previous build's.
_CHANGED = """
CREATE OR REPLACE TEMP TABLE _hchanged AS
SELECT DISTINCT query_id, doc_id FROM (
  SELECT query_id, doc_id FROM build_labels WHERE valid_from_build = $build
  UNION ALL
  SELECT query_id, doc_id FROM build_labels_closed WHERE valid_to_build = $build)
"""
# The rows of those pairs the build holds (a replaced log label is not a version): it
# has just made its labels the open rows.
# (Only the columns a version is told apart by: reading every column of a label row
# costs a third more.)
_HELD = f"""
CREATE OR REPLACE TEMP TABLE _hheld AS
SELECT b.query_id, b.doc_id, b.source, b.verdict, b.label, b.doc_version, b.stale_reason
FROM build_labels b SEMI JOIN _hchanged c ON c.query_id = b.query_id AND c.doc_id = b.doc_id
WHERE NOT coalesce(b.overridden, false) AND {open_row("b")}
"""
# The open versions of those pairs, read once: a pair holds at most one (golden_set has
# one label per pair).
_OPEN_VERSIONS = """
CREATE OR REPLACE TEMP TABLE _hopen AS
SELECT h.rowid AS row_no, h.query_id, h.doc_id, h.source, h.verdict, h.label, h.doc_version, h.stale_reason
FROM label_history h SEMI JOIN _hchanged c ON c.query_id = h.query_id AND c.doc_id = h.doc_id
WHERE h.valid_to_build IS NULL
"""
# Open versions that the new build no longer holds identically are closed...
_CLOSE = f"""
UPDATE label_history SET valid_to_build = $build
WHERE rowid IN (SELECT h.row_no FROM _hopen h ANTI JOIN _hheld b ON {_SAME_VERSION})
"""
# ...and labels with no identical open version start one.
_OPEN = f"""
INSERT INTO label_history BY NAME
SELECT b.query_id, b.doc_id, b.verdict, b.doc_version, b.stale_reason, $build AS valid_from_build,
       NULL AS valid_to_build, b.source, b.label
FROM _hheld b ANTI JOIN _hopen h ON {_SAME_VERSION}
"""
# The first build with labels: every label it holds starts a version (the general case
# would find every pair changed and no open version; this skips finding that out).
_FIRST = """
SELECT NOT EXISTS (SELECT 1 FROM label_history)
   AND NOT EXISTS (SELECT 1 FROM label_rows WHERE valid_from_build <> $build)
"""
_OPEN_ALL = f"""
INSERT INTO label_history BY NAME
SELECT b.query_id, b.doc_id, b.verdict, b.doc_version, b.stale_reason, $build AS valid_from_build,
       NULL AS valid_to_build, b.source, b.label
FROM build_labels b WHERE NOT coalesce(b.overridden, false) AND {open_row("b")}
"""


@dataclass(frozen=True)
class HistoryChange:
    """What one build did to label_history: versions it closed and versions it opened."""

    versions_closed: int = 0
    versions_opened: int = 0


def record_build(con: Connection, build_id: int) -> HistoryChange:
    """Fold build `build_id`'s labels into label_history (inside the caller's transaction)."""
    params = {"build": build_id}
    if con.execute(_FIRST, params).fetchall()[0][0]:
        return HistoryChange(versions_opened=int(con.execute(_OPEN_ALL, params).fetchall()[0][0]))
    con.execute(_CHANGED, params)
    con.execute(_HELD)
    con.execute(_OPEN_VERSIONS)
    try:
        closed = con.execute(_CLOSE, params).fetchall()[0][0]
        opened = con.execute(_OPEN, params).fetchall()[0][0]
    finally:
        for t in ("_hchanged", "_hheld", "_hopen"):
            con.execute("DROP TABLE IF EXISTS " + t)
    return HistoryChange(versions_closed=int(closed), versions_opened=int(opened))
