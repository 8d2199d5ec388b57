"""Writing a build as a folder any IR tool reads (BEIR layout plus TREC qrels)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from goldenset.errors import NoBuild


@dataclass(frozen=True)
class ExportResult:
    out: Path
    build_id: int
    n_queries: int
    n_labels: int
    n_documents: int


def _iso(ts) -> str | None:
    return None if ts is None else ts.isoformat(timespec="microseconds").replace(".000000", "") + "Z"


def resolve_build(con, build_id: int | None) -> int:
    """The requested build, or the latest; NoBuild when there is none."""
    if build_id is None:
        latest = con.execute("SELECT max(build_id) FROM golden_builds").fetchall()[0][0]
        if latest is None:
            raise NoBuild("no golden set has been built yet: run `goldenset build` first")
        return latest
    found = con.execute("SELECT count(*) FROM golden_builds WHERE build_id = ?", [build_id]).fetchall()[0][0]
    if not found:
        raise NoBuild(f"build {build_id} does not exist; `goldenset status` lists the latest")
    return build_id


def build_manifest(con, build_id: int) -> dict:
    """The manifest of a build: its identity, counts and funnel."""
    cur = con.execute("SELECT * FROM golden_builds WHERE build_id = ?", [build_id])
    names = [d[0] for d in cur.description]
    row = dict(zip(names, cur.fetchall()[0]))
    funnel = con.execute(
        "SELECT step, judgments_dropped, judgments_left, units_left FROM filter_funnel "
        "WHERE build_id = ? ORDER BY step_order",
        [build_id],
    ).fetchall()
    count_keys = ("n_queries", "n_projects", "n_helped", "n_noise", "n_wrong", "n_stale", "unjudged_items",
                  "orphan_verdicts", "unserved_item_verdicts", "lines_read", "lines_rejected",
                  "conflicting_serves", "near_duplicate_merges")
    return {
        "build_id": build_id,
        "built_at": _iso(row["built_at"]),
        "trigger": row["trigger"],
        "corpus_fingerprint": row["corpus_fingerprint"],
        "corpus_active_docs": row["corpus_active_docs"],
        "counts": {k: row[k] for k in count_keys},
        "funnel": [
            {"step": s, "judgments_dropped": d, "judgments_left": n, "units_left": u} for s, d, n, u in funnel
        ],
    }


def export_build(con, out: str | Path, build_id: int | None = None) -> ExportResult:
    """Write build `build_id` (default: the latest) to `out` as in contract section 5."""
    build_id = resolve_build(con, build_id)
    out = Path(out)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    manifest = build_manifest(con, build_id)
    labels = con.execute(
        "SELECT query_id, doc_id, relevance FROM golden_set_by_build WHERE build_id = ? "
        "ORDER BY query_id, doc_id",
        [build_id],
    ).fetchall()
    queries = con.execute(
        "SELECT DISTINCT query_id, task, project FROM golden_set_by_build WHERE build_id = ? "
        "ORDER BY query_id",
        [build_id],
    ).fetchall()
    docs = con.execute(
        "SELECT d.doc_id, d.title, d.text FROM corpus_documents d JOIN golden_builds b "
        "ON d.content_sha256 = b.corpus_content_sha256 WHERE b.build_id = ? AND d.status = 'active' "
        "ORDER BY d.doc_id",
        [build_id],
    ).fetchall()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as fh:
        for qid, task, project in queries:
            fh.write(json.dumps({"_id": qid, "text": task, "metadata": {"project": project}}, ensure_ascii=False) + "\n")
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for doc_id, title, text in docs:
            fh.write(json.dumps({"_id": doc_id, "title": title or "", "text": text}, ensure_ascii=False) + "\n")
    with open(out / "qrels" / "test.tsv", "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid, doc_id, rel in labels:
            fh.write(f"{qid}\t{doc_id}\t{rel}\n")
    with open(out / "qrels.trec", "w", encoding="utf-8") as fh:
        for qid, doc_id, rel in labels:
            fh.write(f"{qid} 0 {doc_id} {rel}\n")
    return ExportResult(out, build_id, len(queries), len(labels), len(docs))
