"""What the benchmark reads from the warehouse: the current build, its labels, its corpus."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from goldenset.errors import NoBuild


@dataclass(frozen=True)
class Build:
    """The golden build a benchmark measures against."""

    build_id: int
    built_at: datetime  # UTC, naive
    corpus_fingerprint: str
    corpus_content_sha256: str | None


@dataclass(frozen=True)
class GoldenQrels:
    """The golden set as qrels: relevance per (query, doc), the query texts, what was left out."""

    qrels: dict[str, dict[str, int]]
    tasks: dict[str, str]
    stale_labels: int  # stale labels in the golden set, whether used or left out
    stale_excluded: bool
    queries_without_relevant: tuple[str, ...]  # skipped: no relevant label left


def latest_build(con) -> Build:
    """The newest committed build; NoBuild when there is none."""
    row = con.execute(
        "SELECT build_id, built_at, corpus_fingerprint, corpus_content_sha256 "
        "FROM golden_builds ORDER BY build_id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise NoBuild("no golden set has been built yet: run `goldenset build` first")
    return Build(int(row[0]), row[1], row[2], row[3])


def load_qrels(con, exclude_stale: bool = False) -> GoldenQrels:
    """Labels of the current golden set; stale ones included unless exclude_stale."""
    rows = con.execute(
        "SELECT query_id, task, doc_id, relevance, stale_reason FROM golden_set ORDER BY query_id, doc_id"
    ).fetchall()
    qrels: dict[str, dict[str, int]] = {}
    tasks: dict[str, str] = {}
    stale = 0
    for qid, task, doc, rel, stale_reason in rows:
        tasks[qid] = task
        qrels.setdefault(qid, {})
        if stale_reason is not None:
            stale += 1
            if exclude_stale:
                continue
        qrels[qid][doc] = int(rel)
    without = tuple(sorted(q for q, rels in qrels.items() if not any(r >= 1 for r in rels.values())))
    return GoldenQrels(qrels, tasks, stale, exclude_stale, without)


def build_signature(con, build: Build) -> dict[str, tuple[str, str]]:
    """{doc_id: (version, text_sha256)} of the active documents of the build's corpus."""
    rows = con.execute(
        "SELECT doc_id, version, text_sha256 FROM corpus_documents "
        "WHERE content_sha256 = ? AND status = ?",
        [build.corpus_content_sha256, "active"],
    ).fetchall()
    return {d: (v, t) for d, v, t in rows}
