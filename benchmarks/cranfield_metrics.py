"""An independent recomputation of the benchmark's numbers, to check the pipeline end to end.

Helper of `cranfield_pooling.py`. It reads the TREC run file a `bench run` wrote
(`reports/<run_id>/core.run`) and scores it against qrels this script built on its
own, without the warehouse: the log's labels (grade 1 for a served relevant
document, 0 otherwise, as contract 7.3 grades a log `helped`) plus, after a pool,
the annotator's answers at their rubric grade; or every Cranfield judgment. The
definitions are trec_eval's: recall@5 = relevant in the top 5 / relevant;
ndcg@10 with the grade as gain and log2(rank + 1) discount, the ideal from every
judged grade; mrr = 1 / rank of the first relevant document; map. Relevant means
grade >= 1. Queries without a relevant document are skipped (bench run's policy).
"""

from __future__ import annotations

import math
from pathlib import Path

Qrels = dict[str, dict[str, int]]
METRICS = ("recall@5", "ndcg@10", "mrr", "map")


def read_run(path: Path) -> dict[str, list[str]]:
    """query_id -> doc_ids by score descending (bench run writes strictly decreasing scores)."""
    scored: dict[str, list[tuple[float, str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            qid, _, doc, _, score, _ = line.split()
            scored.setdefault(qid, []).append((float(score), doc))
    out = {}
    for q, v in scored.items():
        by_doc = sorted(v, key=lambda p: p[1], reverse=True)  # ties: doc id descending, as trec_eval
        out[q] = [d for _, d in sorted(by_doc, key=lambda p: -p[0])]
    return out


def _per_query(ranked: list[str], rels: dict[str, int]) -> dict[str, float]:
    relevant = {d for d, g in rels.items() if g >= 1}
    top5 = ranked[:5]
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if rels.get(d, 0) > 0)
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    rr = next((1.0 / i for i, d in enumerate(ranked, start=1) if d in relevant), 0.0)
    hits, ap = 0, 0.0
    for i, d in enumerate(ranked, start=1):
        if d in relevant:
            hits += 1
            ap += hits / i
    return {
        "recall@5": sum(d in relevant for d in top5) / len(relevant),
        "ndcg@10": dcg / idcg,
        "mrr": rr,
        "map": ap / len(relevant),
    }


def per_query(run: dict[str, list[str]], qrels: Qrels) -> dict[str, dict[str, float]]:
    """metric -> query_id -> value, over the run's queries that have a relevant document in the qrels."""
    out: dict[str, dict[str, float]] = {m: {} for m in METRICS}
    for q, ranked in run.items():
        if any(g >= 1 for g in qrels.get(q, {}).values()):
            for m, v in _per_query(ranked, qrels[q]).items():
                out[m][q] = v
    return out


def means(run: dict[str, list[str]], qrels: Qrels) -> dict[str, float]:
    """Mean of each metric over the run's queries that have a relevant document in the qrels."""
    values = per_query(run, qrels)
    return {m: sum(v.values()) / len(v) for m, v in values.items() if v}
