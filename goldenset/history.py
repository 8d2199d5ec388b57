"""Label history stored as changes: a version per (source, verdict or label, doc_version, stale_reason).

A rebuild on unchanged input touches no history row; a label that disappears is
closed, and one that comes back opens a new version.
"""

from __future__ import annotations

# A version is identified by what the contract says makes one (section 7.3).
_SAME_VERSION = """
b.query_id = h.query_id AND b.doc_id = h.doc_id AND b.source = h.source
AND b.verdict IS NOT DISTINCT FROM h.verdict AND b.label IS NOT DISTINCT FROM h.label
AND b.doc_version = h.doc_version AND b.stale_reason IS NOT DISTINCT FROM h.stale_reason
"""
# Open versions that the new build no longer holds identically are closed...
_CLOSE = f"""
UPDATE label_history h SET valid_to_build = ?
WHERE h.valid_to_build IS NULL AND NOT EXISTS (
  SELECT 1 FROM build_labels b WHERE b.build_id = ? AND NOT coalesce(b.overridden, false) AND {_SAME_VERSION})
"""
# ...and labels with no identical open version start one.
_OPEN = """
INSERT INTO label_history BY NAME
SELECT b.query_id, b.doc_id, b.verdict, b.doc_version, b.stale_reason, b.build_id AS valid_from_build,
       NULL AS valid_to_build, b.source, b.label
FROM build_labels b
WHERE b.build_id = ? AND NOT coalesce(b.overridden, false) AND NOT EXISTS (
  SELECT 1 FROM label_history h
  WHERE h.valid_to_build IS NULL AND h.query_id = b.query_id AND h.doc_id = b.doc_id)
"""


def record_build(con, build_id: int) -> dict[str, int]:
    """Fold build `build_id`'s labels into label_history (inside the caller's transaction)."""
    closed = con.execute(_CLOSE, [build_id, build_id]).fetchall()[0][0]
    opened = con.execute(_OPEN, [build_id]).fetchall()[0][0]
    return {"versions_closed": int(closed), "versions_opened": int(opened)}
