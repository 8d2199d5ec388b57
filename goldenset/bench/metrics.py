"""Retrieval metrics, each defined once under its canonical name, with trec_eval's conventions.

Inputs of every metric:

- `ranked`: the document ids of one query in rank order, first = rank 1, no
  duplicates (trec.py refuses duplicates, as trec_eval does; the benchmark's own
  lists are de-duplicated before scoring).
- `rels`: the judged documents of that query, doc_id -> graded relevance. A
  document is *relevant* when its relevance is >= RELEVANCE_LEVEL (1), as with
  trec_eval's default `-l 1`; relevance 0 means judged not relevant (in the golden
  set: `noise` or `wrong`); a negative value is trec_eval's "in the pool but not
  judged" and counts as never judged. A document missing from `rels` was never
  judged.

Query policy (trec_eval without -c): a query is averaged over when it appears in
the run and has at least one relevant document. Queries with no relevant document
are skipped, never scored 0; queries of the qrels missing from the run are
ignored. The benchmark itself asks every golden query, so there a query for which
the retriever found nothing is in the run with an empty list and scores 0.

k beyond the list: the cut-off metrics divide by k (precision@k, noise@k,
hole@k), so empty slots count as neither relevant, noise nor hole, exactly as
trec_eval's P_k does. MRR and MAP read the whole list as given, however long.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from goldenset.errors import UsageError

RELEVANCE_LEVEL = 1

Ranked = Sequence[str]
Rels = Mapping[str, int]


def num_relevant(rels: Rels) -> int:
    """Number of relevant documents (relevance >= RELEVANCE_LEVEL) of one query."""
    return sum(1 for r in rels.values() if r >= RELEVANCE_LEVEL)


def _is_relevant(rels: Rels, doc: str) -> bool:
    return rels.get(doc, 0) >= RELEVANCE_LEVEL


def recall_at(ranked: Ranked, rels: Rels, k: int) -> float:
    """recall@k: share of the query's relevant documents found in the top k.

    |relevant ∩ top k| / |relevant| (trec_eval `recall_k`). Not "any relevant in
    the top k" (that is success@k). 0 for a query without relevant documents,
    which the query policy never scores.
    """
    r = num_relevant(rels)
    if r == 0:
        return 0.0
    return sum(1 for d in ranked[:k] if _is_relevant(rels, d)) / r


def precision_at(ranked: Ranked, rels: Rels, k: int) -> float:
    """precision@k: relevant documents in the top k divided by k (trec_eval `P_k`).

    Always divided by k, also when fewer than k documents were returned.
    """
    return sum(1 for d in ranked[:k] if _is_relevant(rels, d)) / k


def ndcg_at(ranked: Ranked, rels: Rels, k: int) -> float:
    """ndcg@k: DCG of the top k over the ideal DCG (trec_eval `ndcg_cut_k`).

    Gains are the graded relevance values themselves (not 2^rel - 1); gains <= 0
    add nothing; the document at rank r is discounted by log2(r + 1); the ideal
    ranking sorts every judged gain of the query, cut at k. 0 when no gain > 0.
    """
    dcg = sum(
        rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if rels.get(d, 0) > 0
    )
    ideal = sorted((g for g in rels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def mrr(ranked: Ranked, rels: Rels) -> float:
    """mrr: reciprocal rank of the first relevant document, 0 if none (trec_eval `recip_rank`).

    Averaged over queries this is the mean reciprocal rank. Reads the whole list.
    """
    for i, d in enumerate(ranked, start=1):
        if _is_relevant(rels, d):
            return 1.0 / i
    return 0.0


def average_precision(ranked: Ranked, rels: Rels) -> float:
    """map: precision at the rank of each relevant document retrieved, summed, over |relevant|.

    Relevant documents never retrieved contribute 0 (trec_eval `map`); averaged over
    queries it is mean average precision. Reads the whole list.
    """
    r = num_relevant(rels)
    if r == 0:
        return 0.0
    found, total = 0, 0.0
    for i, d in enumerate(ranked, start=1):
        if _is_relevant(rels, d):
            found += 1
            total += found / i
    return total / r


def noise_at(ranked: Ranked, rels: Rels, k: int) -> float:
    """noise@k: share of the top k judged not relevant (golden set: `noise` or `wrong`).

    Counts documents with a judged relevance of 0 (below RELEVANCE_LEVEL and not
    negative), divided by k. Lower is better.
    """
    return sum(1 for d in ranked[:k] if d in rels and 0 <= rels[d] < RELEVANCE_LEVEL) / k


def hole_at(ranked: Ranked, rels: Rels, k: int) -> float:
    """hole@k: share of the top k never judged for this query, divided by k.

    The pooling bias made visible: a hole may be relevant or not, nobody knows, and
    every other metric here scores it as not relevant. precision@k + noise@k +
    hole@k = min(len(ranked), k) / k. Neither direction is "better".
    """
    return sum(1 for d in ranked[:k] if d not in rels or rels[d] < 0) / k


@dataclass(frozen=True)
class Metric:
    """A metric under its canonical name (`recall@5`, `ndcg@10`, `mrr`)."""

    name: str
    family: str
    k: int | None
    # +1 higher is better, -1 lower is better, 0 neither (hole@k): compare's verdict.
    direction: int
    compute: Callable[[Ranked, Rels], float]

    def __call__(self, ranked: Ranked, rels: Rels) -> float:
        return self.compute(ranked, rels)


_AT_K: dict[str, tuple[Callable[[Ranked, Rels, int], float], int]] = {
    "recall": (recall_at, 1),
    "precision": (precision_at, 1),
    "ndcg": (ndcg_at, 1),
    "noise": (noise_at, -1),
    "hole": (hole_at, 0),
}
_WHOLE: dict[str, Callable[[Ranked, Rels], float]] = {"mrr": mrr, "map": average_precision}
_NAME = re.compile(r"^([a-z]+)(?:@(\d+))?$")


def get_metric(name: str) -> Metric:
    """The metric behind a canonical name; UsageError naming the valid forms otherwise."""
    m = _NAME.match(name.strip().lower())
    if m:
        family, k = m.group(1), m.group(2)
        if family in _AT_K and k is not None and int(k) >= 1:
            fn, direction = _AT_K[family]
            kk = int(k)
            return Metric(f"{family}@{kk}", family, kk, direction, lambda r, q, _f=fn, _k=kk: _f(r, q, _k))
        if family in _WHOLE and k is None:
            return Metric(family, family, None, 1, _WHOLE[family])
    raise UsageError(
        f"unknown metric {name!r}; use recall@K, precision@K, ndcg@K, noise@K, hole@K (K >= 1), mrr or map"
    )


def benchmark_metrics(k_values: Sequence[int]) -> list[Metric]:
    """The benchmark's metric set: recall, precision, noise and hole at each k, ndcg@10, mrr, map."""
    names = [f"{fam}@{k}" for fam in ("recall", "precision") for k in k_values]
    names += ["ndcg@10", "mrr", "map"]
    names += [f"{fam}@{k}" for fam in ("noise", "hole") for k in k_values]
    return [get_metric(n) for n in names]


EVAL_METRICS = ("recall@5", "recall@10", "recall@24", "precision@5", "precision@10", "ndcg@10", "mrr", "map")


def evaluated_queries(run: Mapping[str, Ranked], qrels: Mapping[str, Rels]) -> list[str]:
    """Queries averaged over: in the run and with at least one relevant document, sorted."""
    return sorted(q for q in run if q in qrels and num_relevant(qrels[q]) > 0)


def evaluate(
    run: Mapping[str, Ranked], qrels: Mapping[str, Rels], metrics: Sequence[Metric]
) -> dict[str, dict[str, float]]:
    """Per-query values {query_id: {metric name: value}} under the query policy above."""
    return {q: {m.name: m(run[q], qrels[q]) for m in metrics} for q in evaluated_queries(run, qrels)}


def mean_over_queries(per_query: Mapping[str, Mapping[str, float]], names: Sequence[str]) -> dict[str, float]:
    """Arithmetic mean of each metric over the evaluated queries (nan when there are none)."""
    n = len(per_query)
    return {
        name: (sum(v[name] for v in per_query.values()) / n if n else float("nan")) for name in names
    }
