"""What the benchmark reads from the warehouse: the current build, its graded labels, its corpus."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from goldenset.bench.metrics import RELEVANCE_LEVEL
from goldenset.connection import Connection
from goldenset.errors import NoBuild


@dataclass(frozen=True)
class Build:
    """The golden build a benchmark measures against."""

    build_id: int
    built_at: datetime  # UTC, naive
    corpus_fingerprint: str
    corpus_content_sha256: str | None
    # The build whose stored labels this one holds: itself, or the build a `repeat` repeats.
    labels_build_id: int | None = None


@dataclass(frozen=True)
class GoldenQrels:
    """The golden set as graded qrels: grade per (query, doc), the query texts, what was left out."""

    qrels: dict[str, dict[str, int]]
    tasks: dict[str, str]
    stale_labels: int  # stale labels in the golden set, whether used or left out
    stale_excluded: bool
    # No label with grade >= 1 at all: every positive was overruled by a human (or judge) label.
    overruled: tuple[str, ...] = ()
    # Had a label with grade >= 1, but all of them are stale and --exclude-stale left them out.
    stale_positives_only: tuple[str, ...] = ()

    @property
    def queries_without_relevant(self) -> tuple[str, ...]:
        """Golden queries the benchmark skips: no label with grade >= 1 left in the qrels."""
        return tuple(sorted(self.overruled + self.stale_positives_only))


def latest_build(con: Connection) -> Build:
    """The newest committed build; NoBuild when there is none."""
    row = con.execute(
        "SELECT build_id, built_at, corpus_fingerprint, corpus_content_sha256, labels_build_id "
        "FROM golden_builds ORDER BY build_id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise NoBuild("no golden set has been built yet: run `goldenset build` first")
    return Build(int(row[0]), row[1], row[2], row[3], int(row[4]) if row[4] is not None else None)


def load_qrels(con: Connection, exclude_stale: bool = False) -> GoldenQrels:
    """Labels of the current golden set with their grade as relevance; stale ones included unless exclude_stale.

    The grade, not the binary `relevance`, is the qrels value, so nDCG sees a grade-2
    label above a grade-1 one; binary metrics count grade >= 1 as relevant, which is
    `relevance` = 1. A log-only set (grade 1 for helped, else 0) reads as before.
    """
    # coalesce: a warehouse made before grades existed has grade backfilled from relevance;
    # this keeps a row that somehow missed the backfill readable rather than crashing on null.
    rows = con.execute(
        "SELECT query_id, task, doc_id, coalesce(grade, relevance), stale_reason "
        "FROM golden_set ORDER BY query_id, doc_id"
    ).fetchall()
    qrels: dict[str, dict[str, int]] = {}
    tasks: dict[str, str] = {}
    positive: set[str] = set()
    stale = 0
    for qid, task, doc, grade, stale_reason in rows:
        tasks[qid] = task
        qrels.setdefault(qid, {})
        if int(grade) >= RELEVANCE_LEVEL:
            positive.add(qid)
        if stale_reason is not None:
            stale += 1
            if exclude_stale:
                continue
        qrels[qid][doc] = int(grade)
    left = {q for q, rels in qrels.items() if any(g >= RELEVANCE_LEVEL for g in rels.values())}
    overruled = tuple(sorted(set(qrels) - positive))
    stale_only = tuple(sorted(positive - left))
    return GoldenQrels(qrels, tasks, stale, exclude_stale, overruled, stale_only)


def build_signature(con: Connection, build: Build) -> dict[str, tuple[str, str]]:
    """{doc_id: (version, text_sha256)} of the active documents of the build's corpus."""
    rows = con.execute(
        "SELECT doc_id, version, text_sha256 FROM corpus_documents WHERE content_sha256 = ? AND status = ?",
        [build.corpus_content_sha256, "active"],
    ).fetchall()
    return {d: (v, t) for d, v, t in rows}
