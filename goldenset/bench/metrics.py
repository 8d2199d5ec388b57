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

Query policy: which queries a mean is taken over is a parameter of `evaluate`
(`QueryPolicy`), never implied. A query *is in the qrels* when it has at least one
judgment, whatever its value (a qrels file cannot name a query without one).

- `QueryPolicy.TREC_EVAL` (`bench eval`, the default): the queries in both the run
  and the qrels, as trec_eval 9 averages without -c. A query judged with no
  relevant document is averaged over: recall@k, precision@k, ndcg@k, mrr and map
  are 0 for it, as trec_eval reports them (noise@k and hole@k keep their value: its
  top k can be all noise). Queries of the qrels missing from the run and queries
  of the run missing from the qrels are ignored. (trec_eval 10.0 without -c stops
  with "result qid ... not found in qrels" when a qrels query is missing from the
  run; whenever it finishes, its means are these.)
- `QueryPolicy.COMPLETE` (`bench eval --complete`, trec_eval -c): every query of the
  qrels; one missing from the run is scored on an empty list, so every metric is 0
  for it. Queries of the run missing from the qrels are ignored.
- `QueryPolicy.SKIP_NO_RELEVANT` (`bench run` on the golden set): the queries in both
  the run and the qrels that have at least one relevant document; a golden query
  whose relevant labels were all overruled or left out is skipped, and the
  benchmark counts it (contract: "skips it as a query without a relevant
  document"). The benchmark asks every other golden query, so one for which the
  retriever found nothing is in the run with an empty list and scores 0.

Ties: the metrics read `ranked` in the order given. trec.py orders a run file's
documents as trec_eval does (score descending, ties by doc_id descending in byte
order), which tests/bench/test_trec_eval_parity.py checks against trec_eval's own
code (pytrec_eval).

k beyond the list: the cut-off metrics divide by k (precision@k, noise@k,
hole@k), so empty slots count as neither relevant, noise nor hole, exactly as
trec_eval's P_k does. MRR and MAP read the whole list as given, however long.
judged@k is the one exception: as ir_measures' `Judged@k` it divides by the
documents actually in the top k (min(k, len(ranked))), so a short list is not
"unjudged" for the slots it never filled.

Coverage and condensed lists (contract section 10)
--------------------------------------------------
- `judged@k`: the share of the top k that has a label in the qrels the run is
  measured on (any source, any grade, any version the golden set kept; a stale label
  left out by --exclude-stale is not in the qrels, so it does not count). An empty
  list scores 1: it holds no unjudged document that could count as a miss.
  Negative relevance (trec_eval's "pooled, not judged") counts as unjudged, as in
  hole@k; ir_measures counts it as judged, but the golden set never writes one.
- Condensed (Sakai 2007): `ndcg'@k`, `precision'@k` are ndcg@k and precision@k on the
  ranking with its unjudged documents removed; `bpref` (Buckley and Voorhees 2004,
  trec_eval's `bpref`) ignores unjudged documents by construction. They are reference
  metrics (`Metric.reference`): printed, never deciding. Their own bias runs the other
  way: removing unjudged documents promotes the judged ones, so a run full of
  unjudged documents is scored as if it had ranked its judged ones first, which
  flatters it against a fully judged run.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

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
    the top k" (that is success@k). 0 for a query without relevant documents, as
    trec_eval reports it.
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
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if rels.get(d, 0) > 0)
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


def _judged(rels: Rels, doc: str) -> bool:
    return doc in rels and rels[doc] >= 0


def judged_at(ranked: Ranked, rels: Rels, k: int) -> float:
    """judged@k: share of the top k documents that are judged (ir_measures `Judged@k`).

    |judged ∩ top k| / min(k, len(ranked)); 1.0 for an empty list (nothing in it can
    count as a miss for want of a label). Higher is better: it is how far the other
    metrics can be trusted, not how good the ranking is.
    """
    top = ranked[:k]
    if not top:
        return 1.0
    return sum(1 for d in top if _judged(rels, d)) / len(top)


def condensed(ranked: Ranked, rels: Rels) -> list[str]:
    """The ranking with its unjudged documents removed, order kept (Sakai's condensed list)."""
    return [d for d in ranked if _judged(rels, d)]


def condensed_ndcg_at(ranked: Ranked, rels: Rels, k: int) -> float:
    """ndcg'@k: ndcg@k of the condensed list (reference only)."""
    return ndcg_at(condensed(ranked, rels), rels, k)


def condensed_precision_at(ranked: Ranked, rels: Rels, k: int) -> float:
    """precision'@k: precision@k of the condensed list, divided by k (reference only)."""
    return precision_at(condensed(ranked, rels), rels, k)


def bpref(ranked: Ranked, rels: Rels) -> float:
    """bpref: trec_eval's binary preference (Buckley and Voorhees 2004), unjudged documents ignored.

    With R relevant and N judged non-relevant documents, each relevant document
    retrieved adds 1 - min(n, R) / min(R, N), n being the judged non-relevant documents
    ranked above it (it adds 1 when none is, also when N = 0); the sum is divided by R.
    0 when R = 0.
    """
    r = num_relevant(rels)
    if r == 0:
        return 0.0
    n_nonrel = sum(1 for g in rels.values() if 0 <= g < RELEVANCE_LEVEL)
    above, total = 0, 0.0
    for d in ranked:
        if not _judged(rels, d):
            continue
        if rels[d] >= RELEVANCE_LEVEL:
            total += 1.0 - (min(above, r) / min(r, n_nonrel) if above else 0.0)
        else:
            above += 1
    return total / r


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
    # Printed beside the deciding metrics, never deciding: condensed lists and coverage.
    reference: bool = False
    # The range every value lies in, None when unbounded: every metric here is a share or a
    # mean of shares (noise@k and hole@k are counts divided by k), so [0, 1]. Estimates clamp
    # their intervals into it (goldenset.bench.ppi).
    bounds: tuple[float, float] | None = (0.0, 1.0)

    def __call__(self, ranked: Ranked, rels: Rels) -> float:
        return self.compute(ranked, rels)

    @property
    def deciding(self) -> bool:
        """Whether verdicts read it: it has a better direction and is not a reference metric (judged@k, the
        condensed ones). hole@k (no direction) and the references inform, never decide."""
        return not self.reference and self.direction != 0


_AT_K: dict[str, tuple[Callable[[Ranked, Rels, int], float], int]] = {
    "recall": (recall_at, 1),
    "precision": (precision_at, 1),
    "ndcg": (ndcg_at, 1),
    "noise": (noise_at, -1),
    "hole": (hole_at, 0),
    "judged": (judged_at, 1),
    "ndcg'": (condensed_ndcg_at, 1),
    "precision'": (condensed_precision_at, 1),
}
_WHOLE: dict[str, Callable[[Ranked, Rels], float]] = {"mrr": mrr, "map": average_precision, "bpref": bpref}
# Reference metrics: what the gate of coverage reads (judged) and the condensed ones.
REFERENCE_FAMILIES = frozenset({"judged", "ndcg'", "precision'", "bpref"})
_NAME = re.compile(r"^([a-z]+'?)(?:@(\d+))?$")


def _cut(fn: Callable[[Ranked, Rels, int], float], k: int, ranked: Ranked, rels: Rels) -> float:
    return fn(ranked, rels, k)


def get_metric(name: str) -> Metric:
    """The metric behind a canonical name; UsageError naming the valid forms otherwise."""
    m = _NAME.match(name.strip().lower())
    if m:
        family, k = m.group(1), m.group(2)
        if family in _AT_K and k is not None and int(k) >= 1:
            fn, direction = _AT_K[family]
            kk = int(k)
            return Metric(
                f"{family}@{kk}",
                family,
                kk,
                direction,
                functools.partial(_cut, fn, kk),
                reference=family in REFERENCE_FAMILIES,
            )
        if family in _WHOLE and k is None:
            return Metric(family, family, None, 1, _WHOLE[family], reference=family in REFERENCE_FAMILIES)
    raise UsageError(
        f"unknown metric {name!r}; use recall@K, precision@K, ndcg@K, noise@K, hole@K, judged@K, ndcg'@K, "
        "precision'@K (K >= 1), mrr, map or bpref"
    )


def benchmark_metrics(k_values: Sequence[int]) -> list[Metric]:
    """The benchmark's metric set: recall, precision, noise and hole at each k, ndcg@10, mrr, map;
    then judged@k at each k and the condensed references precision'@k, ndcg'@10 and bpref."""
    names = [f"{fam}@{k}" for fam in ("recall", "precision") for k in k_values]
    names += ["ndcg@10", "mrr", "map"]
    names += [f"{fam}@{k}" for fam in ("noise", "hole", "judged") for k in k_values]
    names += [f"precision'@{k}" for k in k_values] + ["ndcg'@10", "bpref"]
    return [get_metric(n) for n in names]


def judged_cutoffs(names: Sequence[str]) -> list[int]:
    """The k of every judged@k among metric names, sorted."""
    return sorted({m.k for m in map(get_metric, names) if m.family == "judged" and m.k is not None})


# `bench eval`'s metrics with a trec_eval equivalent, keyed by canonical name; the
# default cut-offs are those `bench eval` has always printed.
EVAL_METRICS = ("recall@5", "recall@10", "recall@24", "precision@5", "precision@10", "ndcg@10", "mrr", "map")


def eval_metric_names(k_values: Sequence[int] | None = None) -> tuple[str, ...]:
    """`bench eval`'s trec_eval-pinned metrics: EVAL_METRICS, or recall and precision at each k given.

    ndcg@10 keeps its cut-off whatever the k (as in `bench run`); k values are
    sorted and de-duplicated (trec_eval refuses duplicate cut-offs).
    """
    if not k_values:
        return EVAL_METRICS
    ks = check_cutoffs(k_values)
    return (*(f"recall@{k}" for k in ks), *(f"precision@{k}" for k in ks), "ndcg@10", "mrr", "map")


def check_cutoffs(k_values: Sequence[int]) -> list[int]:
    """Sorted distinct cut-offs; UsageError quoting the first one below 1."""
    for k in k_values:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise UsageError(f"cut-off --k {k!r} is not a whole number >= 1; give --k 5 or another positive k")
    return sorted(set(k_values))


class QueryPolicy(StrEnum):
    """Which queries a mean is taken over (module docstring, "Query policy")."""

    TREC_EVAL = "trec_eval"
    COMPLETE = "complete"
    SKIP_NO_RELEVANT = "skip_no_relevant"


@dataclass(frozen=True)
class QuerySelection:
    """The queries a policy scores, and those it leaves out or scores on an empty list, each sorted."""

    evaluated: tuple[str, ...]
    no_relevant: tuple[str, ...]  # evaluated although nothing is relevant: 0 on every trec_eval metric
    skipped_no_relevant: tuple[str, ...]  # in run and qrels, left out for want of a relevant document
    missing_from_run: tuple[str, ...]  # judged but not in the run: ignored, or scored 0 under COMPLETE
    not_in_qrels: tuple[str, ...]  # in the run but never judged: always ignored


def select_queries(run: Mapping[str, Ranked], qrels: Mapping[str, Rels], policy: QueryPolicy) -> QuerySelection:
    """Apply a query policy: which queries of run and qrels are scored and which are not."""
    policy = QueryPolicy(policy)
    judged = {q for q, rels in qrels.items() if rels}
    both = judged & set(run)
    without = {q for q in judged if num_relevant(qrels[q]) == 0}
    skipped: set[str] = set()
    if policy is QueryPolicy.TREC_EVAL:
        evaluated = both
    elif policy is QueryPolicy.COMPLETE:
        evaluated = judged
    else:
        evaluated, skipped = both - without, both & without
    return QuerySelection(
        evaluated=tuple(sorted(evaluated)),
        no_relevant=tuple(sorted(evaluated & without)),
        skipped_no_relevant=tuple(sorted(skipped)),
        missing_from_run=tuple(sorted(judged - set(run))),
        not_in_qrels=tuple(sorted(set(run) - judged)),
    )


def evaluated_queries(run: Mapping[str, Ranked], qrels: Mapping[str, Rels], policy: QueryPolicy) -> list[str]:
    """The queries a policy averages over, sorted."""
    return list(select_queries(run, qrels, policy).evaluated)


def evaluate(
    run: Mapping[str, Ranked],
    qrels: Mapping[str, Rels],
    metrics: Sequence[Metric],
    *,
    policy: QueryPolicy = QueryPolicy.TREC_EVAL,
) -> dict[str, dict[str, float]]:
    """Per-query values {query_id: {metric name: value}} over the queries `policy` selects.

    A query the policy scores without a run entry (COMPLETE) is scored on an empty list.
    """
    return {
        q: {m.name: m(run.get(q, ()), qrels[q]) for m in metrics} for q in select_queries(run, qrels, policy).evaluated
    }


def mean_over_queries(per_query: Mapping[str, Mapping[str, float]], names: Sequence[str]) -> dict[str, float]:
    """Arithmetic mean of each metric over the evaluated queries (nan when there are none)."""
    n = len(per_query)
    return {name: (sum(v[name] for v in per_query.values()) / n if n else float("nan")) for name in names}
