"""What scorers are asked about, read from the warehouse: calibration pairs, queue rows, passages, traffic.

- The passage of (doc_id, version) is the document's `text` from the most
  recently loaded snapshot holding that version as active, else as retired
  (contract 8.1); a version no loaded snapshot holds has no passage, and its
  pair is an error (calibration) or left out and counted (the judge's queue).
- Calibration pairs (8.2) are the latest build's `golden_set` rows with source
  `human` (stale ones included; acceptable when grade >= 1) or, against the log,
  with source `log` (acceptable when the verdict is `helped`), in (query_id,
  doc_id) order; the query is the golden set's `task` and the label time is
  `judged_at` (what --holdout-after splits on).
- The judge's queue is the `labelling_queue` in priority order, each row's
  document at its queued version.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from goldenset.connection import Connection
from goldenset.errors import UsageError
from goldenset.scoring.calibrate import AGAINST, ErrorPair
from goldenset.scoring.scorers import PairInput


def passages(con: Connection, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The text of each (doc_id, version): from the most recently loaded snapshot holding it active, else retired."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    rows = con.execute(
        "WITH want AS (SELECT unnest(?) AS doc_id, unnest(?) AS version) "
        "SELECT d.doc_id, d.version, d.text FROM want w "
        "JOIN corpus_documents d ON d.doc_id = w.doc_id AND d.version = w.version "
        "JOIN corpus_loads l ON l.content_sha256 = d.content_sha256 "
        "QUALIFY row_number() OVER (PARTITION BY d.doc_id, d.version "
        "ORDER BY (d.status = 'active') DESC, l.load_id DESC) = 1",
        [[k[0] for k in wanted], [k[1] for k in wanted]],
    ).fetchall()
    return {(d, v): t for d, v, t in rows}


def golden_pairs(con: Connection, against: str = "human") -> tuple[list[PairInput], list[ErrorPair]]:
    """The latest build's pairs to calibrate on (8.2), and the ones whose passage no snapshot holds.

    human: rows with source `human`, stale ones included, acceptable when grade >= 1.
    log: rows with source `log`, acceptable when the verdict is `helped`.
    """
    if against not in AGAINST:
        raise UsageError(f"--against {against!r} is not known; use human or log")
    rows = con.execute(
        "SELECT query_id, doc_id, doc_version, project, task, judged_at, "
        "CASE WHEN ? = 'human' THEN coalesce(grade, 0) >= 1 ELSE verdict = 'helped' END "
        "FROM golden_set WHERE source = ? ORDER BY query_id, doc_id",
        [against, against],
    ).fetchall()
    texts = passages(con, [(r[1], r[2]) for r in rows])
    out: list[PairInput] = []
    missing: list[ErrorPair] = []
    for qid, did, version, project, task, judged_at, acceptable in rows:
        text = texts.get((did, version))
        if text is None:
            missing.append(ErrorPair(qid, did, f"no loaded corpus snapshot holds {did} at version {version}"))
            continue
        out.append(PairInput(qid, did, task, text, project, bool(acceptable), judged_at))
    return out, missing


def project_traffic(con: Connection) -> dict[str, int]:
    """Accepted serves per project: the weights of calibrate's traffic-weighted slice summary."""
    rows = con.execute("SELECT project, count(*) FROM accepted_serves GROUP BY project ORDER BY project").fetchall()
    return {p: int(n) for p, n in rows}


@dataclass(frozen=True)
class PairToJudge:
    """One row of the labelling queue with what the judge reads: the golden task and the passage."""

    priority: int
    query_id: str
    doc_id: str
    doc_version: str
    project: str
    task: str
    passage: str | None  # None: no loaded snapshot holds doc_id at doc_version


def queue_rows(con: Connection) -> list[PairToJudge]:
    """The labelling queue in priority order, each document's text at its queued version."""
    rows = con.execute(
        "SELECT priority, query_id, doc_id, doc_version, project, task FROM labelling_queue "
        "ORDER BY priority, query_id, doc_id"
    ).fetchall()
    texts = passages(con, [(r[2], r[3]) for r in rows])
    return [PairToJudge(int(p), q, d, v, proj or "", task or "", texts.get((d, v))) for p, q, d, v, proj, task in rows]
