"""How the golden set stands: age, drift, funnel, quarantine and relabel queue."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from goldenset.corpus import active_signature, drift, read_corpus
from goldenset.errors import CorpusError
from goldenset.export import build_manifest, resolve_build
from goldenset.ingest import utcnow
from goldenset.snapshots import active_signature_of


def golden_status(con, corpus_path: str | Path | None = None, now: datetime | None = None) -> dict:
    """Everything `goldenset status` shows, as plain data (raises NoBuild before any build)."""
    now = now or utcnow()
    build_id = resolve_build(con, None)
    manifest = build_manifest(con, build_id)
    built_at, content_sha = con.execute(
        "SELECT built_at, corpus_content_sha256 FROM golden_builds WHERE build_id = ?", [build_id]
    ).fetchall()[0]
    age = now - built_at
    corpus: dict = {"fingerprint_at_build": manifest["corpus_fingerprint"]}
    if corpus_path is not None:
        try:
            current = read_corpus(corpus_path)
        except CorpusError as exc:
            corpus["error"] = str(exc)
        else:
            corpus["fingerprint_now"] = current.fingerprint
            corpus["drift_since_build"] = drift(active_signature_of(con, content_sha), active_signature(current))
    rejected = dict(con.execute(
        "SELECT reason, count(*) FROM rejected_records GROUP BY reason ORDER BY reason"
    ).fetchall())
    queue = con.execute(
        "SELECT reason, count(*) FROM relabel_queue GROUP BY reason ORDER BY reason"
    ).fetchall()
    return {
        "build_id": build_id,
        "built_at": manifest["built_at"],
        "trigger": manifest["trigger"],
        "age_days": round(age.total_seconds() / 86400, 3),
        "corpus": corpus,
        "counts": manifest["counts"],
        "funnel": manifest["funnel"],
        "rejected_records": sum(rejected.values()),
        "rejected_by_reason": rejected,
        "orphan_verdicts": manifest["counts"]["orphan_verdicts"],
        "relabel_queue": sum(n for _, n in queue),
        "relabel_queue_by_reason": dict(queue),
    }


def rejected_sample(con, partitions: list[str] | None = None, limit: int = 20) -> list[tuple]:
    """(source_file, line, reason, raw prefix) of rejected lines, newest first, optionally of some days."""
    if partitions is None:
        return con.execute(
            "SELECT source_file, line, reason, left(raw, 120) FROM rejected_records "
            "ORDER BY rejected_at DESC, source_file, line LIMIT ?", [limit]).fetchall()
    return con.execute(
        "SELECT source_file, line, reason, left(raw, 120) FROM rejected_records "
        "WHERE list_contains(?, split_part(source_file, '/', 1)) "
        "ORDER BY rejected_at DESC, source_file, line LIMIT ?",
        [[f"dt={p}" for p in partitions], limit]).fetchall()


def relabel_summary(con, limit: int = 20) -> tuple[dict[str, int], list[tuple]]:
    """Queue size by reason, and its oldest-flagged rows."""
    by_reason = dict(con.execute(
        "SELECT reason, count(*) FROM relabel_queue GROUP BY reason ORDER BY reason").fetchall())
    sample = con.execute(
        "SELECT query_id, doc_id, judged_version, current_version, superseded_by, reason, "
        "first_flagged_build FROM relabel_queue ORDER BY first_flagged_build, query_id, doc_id LIMIT ?",
        [limit]).fetchall()
    return by_reason, sample


def drift_between_builds(con, older_build: int, newer_build: int) -> float:
    """Corpus drift from one build's snapshot to another's."""
    shas = dict(con.execute(
        "SELECT build_id, corpus_content_sha256 FROM golden_builds WHERE build_id IN (?, ?)",
        [older_build, newer_build]).fetchall())
    return drift(active_signature_of(con, shas[older_build]), active_signature_of(con, shas[newer_build]))
