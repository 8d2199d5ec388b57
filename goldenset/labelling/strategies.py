"""Pooling strategies: which returned pairs to label first, and how many per round (contract section 11).

The pool (pool.py) collects what each ranker returned; a strategy orders the pairs that
need a label (reason `pooled`) and `--budget` keeps the first N of them. Stale, successor
and audit rows are not the strategy's to order: they are queued in full, in 7.4's order,
before the pooled picks, except the successors of documents judged not relevant, which
7.4 puts after every pooled pair and which stay after the picks.

- `depth`: today's pool, in its priority order (best rank, more rankers first, query_id,
  doc_id); with a budget the first N.
- `mtf`: move-to-front (Cormack, Palmer and Clarke 1998), per query. Every ranker starts
  in the --rankers order; the next pair is the next unlabelled document of the ranker at
  the front; a ranker whose pick is labelled not relevant goes to the back. Labels arrive
  between rounds, so a round replays the picks of earlier rounds (stored with the pool
  run) against the labels the golden set now holds to put the rankers in order, then
  draws from the front ranker; a pick still unlabelled is dropped from the history and
  can be drawn again.
- `bandit`: Thompson sampling (Losada, Parapar and Barreiro 2016, 2017), per query, the
  rankers as arms. An arm's evidence is the labelled documents of its own list above its
  next unlabelled one: a relevant one (grade >= 1) a success, a not relevant one a
  failure, prior Beta(1, 1). Each pick draws one value per arm from
  Beta(1 + successes, 1 + failures) and takes the next document of the largest (ties: the
  --rankers order). The generator is seeded with `seed:round:query_id`, so a round is
  the same on every machine; the evidence needs no stored state, only the round number.
- `feedback` (the default when --budget is given): relevance feedback inside each query,
  Thompson sampling across queries. Inside a query the unlabelled documents the rankers
  returned are ordered by Rocchio's query (Rocchio 1971, with the textbook weights 1,
  0.75, 0.15 of Manning, Raghavan and Schuetze ch. 9): the query's vector plus 0.75
  times the mean vector of its documents labelled relevant, minus 0.15 times the mean of
  those labelled not relevant, the packaged dense model's vectors (title and text, as the
  reference retriever embeds them), dot product, ties by doc_id. Across queries the
  round's budget goes where labels have paid: each query has Beta(1 + relevant, 1 + not
  relevant) over all its labels; each pick draws one value per query with a document
  left (query_id order, one generator seeded `seed:round`), the largest wins (ties: the
  smaller query_id), and the pick counts as a provisional miss for its query until the
  next round's labels, so a query earns several picks in a round only when its evidence
  is strong. A query whose picks keep coming back not relevant stops being drawn; the
  budget is a total over queries, not an equal share. Measured on Cranfield
  (benchmarks/cranfield_coverage.py): it finds 1.34, 1.29 and 1.20 times what depth-k
  finds at 5, 10 and 20 judgments per query, intervals above zero at each, which is
  why it is the default with a budget; without --budget the pool stays 7.4's (depth),
  since every pair is queued anyway and 7.4's priority order is part of the contract.

Common rules: a pair labelled in the golden set at the document's current version is
never drawn; a document two rankers return is drawn once, for the ranker that reached
it first (feedback: the first in --rankers order). With a budget, depth's first N are
kept; mtf and bandit let the queries take turns (query_id order, one pick each per
turn) until the budget is spent or nothing is left, so every query gets about
budget / queries; feedback spends it where labels paid, as above.
The round number and, for mtf, the picks are stored in `pool_runs.report` under
`strategy`; the next `pool --strategy S` with the same S resumes from the latest such
row, a different strategy or `--seed` starts over at round 1.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from goldenset.connection import Connection
from goldenset.errors import UsageError

STRATEGIES = ("depth", "mtf", "bandit", "feedback")
DEFAULT_STRATEGY = "depth"  # without --budget: the pool of contract 7.4
DEFAULT_WITH_BUDGET = "feedback"
RELEVANT = 1
# Rocchio's weights: the query, the relevant centroid, the not-relevant centroid (textbook values).
ROCCHIO = (1.0, 0.75, 0.15)

Pair = tuple[str, str]  # (query_id, doc_id)


def resolve(name: str | None, budget: int | None) -> str:
    """The strategy a pool uses: `name` when given, else feedback with a budget and depth without."""
    if name is None:
        name = DEFAULT_WITH_BUDGET if budget is not None else DEFAULT_STRATEGY
    return check_strategy(name, budget)


def check_strategy(name: str, budget: int | None) -> str:
    """The strategy name and budget, or UsageError naming the valid values."""
    if name not in STRATEGIES:
        raise UsageError(f"--strategy {name!r} is not one of {', '.join(STRATEGIES)}")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise UsageError(f"--budget must be a whole number >= 1, got {budget!r}")
    return name


@dataclass
class Plan:
    """The pairs a round queues, in order, each with the ranker it was drawn for, and the state to store."""

    picks: list[tuple[str, str, str]]  # (query_id, doc_id, ranker)
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Vectors:
    """What `feedback` reads: a unit vector per query_id (its text) and per doc_id (title and text)."""

    queries: Mapping[str, np.ndarray]
    docs: Mapping[str, np.ndarray]


def _fresh(name: str, seed: int) -> dict[str, Any]:
    return {"name": name, "seed": seed, "round": 0, "picks": {}}


def resume(name: str, seed: int, previous: Mapping[str, Any] | None) -> dict[str, Any]:
    """The state a round starts from: the previous one of the same strategy and seed, else a fresh one."""
    if previous and previous.get("name") == name and previous.get("seed") == seed:
        return {
            "name": name,
            "seed": seed,
            "round": int(previous.get("round", 0)),
            "picks": {q: [list(p) for p in v] for q, v in (previous.get("picks") or {}).items()},
        }
    return _fresh(name, seed)


def _mtf_order(rankers: Sequence[str], history: Sequence[Sequence[str]], labels: Mapping[Pair, int], qid: str):
    order = list(rankers)
    kept = []
    for doc, ranker in history:
        grade = labels.get((qid, doc))
        if grade is None:
            continue  # never labelled: dropped from the history, it can be drawn again
        kept.append([doc, ranker])
        if grade < RELEVANT and ranker in order:
            order.remove(ranker)
            order.append(ranker)
    return order, kept


def _next_doc(docs: Sequence[str], qid: str, labels: Mapping[Pair, int], taken: set[str]) -> tuple[int, str] | None:
    for i, d in enumerate(docs):
        if (qid, d) not in labels and d not in taken:
            return i, d
    return None


def _query_picks(
    name: str,
    qid: str,
    lists: Mapping[str, Sequence[str]],
    rankers: Sequence[str],
    labels: Mapping[Pair, int],
    state: dict[str, Any],
) -> Generator[tuple[str, str], None, None]:
    """The picks of one query in this round, in order, as (doc_id, ranker); lazily."""
    taken: set[str] = set()
    if name == "mtf":
        order, kept = _mtf_order(rankers, state["picks"].get(qid, []), labels, qid)
        state["picks"][qid] = kept
        while True:
            for ranker in order:
                nxt = _next_doc(lists.get(ranker, ()), qid, labels, taken)
                if nxt is not None:
                    taken.add(nxt[1])
                    state["picks"][qid].append([nxt[1], ranker])
                    yield nxt[1], ranker
                    break
            else:
                return
    rng = random.Random(f"{state['seed']}:{state['round']}:{qid}")
    while True:
        best: tuple[float, int, str, str] | None = None
        for idx, ranker in enumerate(rankers):
            docs = lists.get(ranker, ())
            nxt = _next_doc(docs, qid, labels, taken)
            if nxt is None:
                continue
            above = [labels[(qid, d)] for d in docs[: nxt[0]] if (qid, d) in labels]
            wins = sum(1 for g in above if g >= RELEVANT)
            theta = rng.betavariate(1 + wins, 1 + len(above) - wins)
            if best is None or theta > best[0]:
                best = (theta, idx, nxt[1], ranker)
        if best is None:
            return
        taken.add(best[2])
        yield best[2], best[3]


def plan_round(
    name: str,
    lists: Mapping[str, Mapping[str, Sequence[str]]],
    rankers: Sequence[str],
    labels: Mapping[Pair, int],
    *,
    budget: int | None = None,
    seed: int = 0,
    previous: Mapping[str, Any] | None = None,
    depth_order: Sequence[Pair] | None = None,
    vectors: Vectors | None = None,
) -> Plan:
    """One round of `name` over `lists` (query_id -> ranker -> doc_ids, best first).

    `labels` holds the grade of every pair labelled at its current version; `depth_order`
    the pooled pairs in the pool's own priority order (what `depth` keeps); `vectors` the
    dense vectors `feedback` orders a query's documents by (None: each query's documents
    in depth order, best rank first). Returns the picks in queue order and the state to
    store with the pool run.
    """
    check_strategy(name, budget)
    state = resume(name, seed, previous)
    state["round"] += 1
    if name == "feedback":
        drawn = _feedback_picks(lists, rankers, labels, budget, state, vectors)
        return Plan(drawn, {"name": name, "seed": seed, "round": state["round"]})
    if name == "depth":
        order = list(depth_order) if depth_order is not None else _depth_order(lists, rankers, labels)
        chosen = order[:budget] if budget is not None else order
        first: dict[Pair, str] = {}
        for qid, per in lists.items():
            for ranker in rankers:
                for d in per.get(ranker, ()):
                    first.setdefault((qid, d), ranker)
        return Plan([(q, d, first.get((q, d), "")) for q, d in chosen], {"name": name, "round": state["round"]})
    gens = {qid: _query_picks(name, qid, lists[qid], rankers, labels, state) for qid in sorted(lists)}
    picks: list[tuple[str, str, str]] = []
    while gens and (budget is None or len(picks) < budget):
        for qid in list(gens):
            if budget is not None and len(picks) >= budget:
                break
            nxt = next(gens[qid], None)
            if nxt is None:
                del gens[qid]
                continue
            picks.append((qid, nxt[0], nxt[1]))
    for gen in gens.values():
        gen.close()
    if name == "bandit":
        state.pop("picks", None)
    return Plan(picks, state)


def _depth_order(
    lists: Mapping[str, Mapping[str, Sequence[str]]], rankers: Sequence[str], labels: Mapping[Pair, int]
) -> list[Pair]:
    """The pool's priority without the warehouse: best rank, more rankers first, query_id, doc_id."""
    best: dict[Pair, tuple[int, int]] = {}
    for qid, per in lists.items():
        for ranker in rankers:
            for rank, d in enumerate(per.get(ranker, ()), start=1):
                if (qid, d) in labels:
                    continue
                b, n = best.get((qid, d), (rank, 0))
                best[(qid, d)] = (min(b, rank), n + 1)
    return sorted(best, key=lambda p: (best[p][0], -best[p][1], p[0], p[1]))


def _candidates(per: Mapping[str, Sequence[str]], rankers: Sequence[str], qid: str, labels: Mapping[Pair, int]):
    """Unlabelled documents of one query -> (first ranker in --rankers order, best rank, rankers returning it)."""
    out: dict[str, tuple[str, int, int]] = {}
    for ranker in rankers:
        for rank, d in enumerate(per.get(ranker, ()), start=1):
            if (qid, d) in labels:
                continue
            first, best, n = out.get(d, (ranker, rank, 0))
            out[d] = (first, min(best, rank), n + 1)
    return out


def _rocchio_order(qid: str, docs: Sequence[str], judged: Sequence[tuple[str, int]], vectors: Vectors) -> list[str]:
    """`docs` by Rocchio's query built from the query's labelled documents; ties by doc_id."""
    w_query, w_rel, w_non = ROCCHIO
    v = w_query * np.asarray(vectors.queries[qid], dtype=np.float64)
    rel = [d for d, g in judged if g >= RELEVANT and d in vectors.docs]
    non = [d for d, g in judged if g < RELEVANT and d in vectors.docs]
    if rel:
        v = v + w_rel * np.mean([vectors.docs[d] for d in rel], axis=0)
    if non:
        v = v - w_non * np.mean([vectors.docs[d] for d in non], axis=0)
    score = {d: float(np.dot(np.asarray(vectors.docs[d], dtype=np.float64), v)) for d in docs}
    return sorted(docs, key=lambda d: (-score[d], d))


def _feedback_picks(
    lists: Mapping[str, Mapping[str, Sequence[str]]],
    rankers: Sequence[str],
    labels: Mapping[Pair, int],
    budget: int | None,
    state: Mapping[str, Any],
    vectors: Vectors | None,
) -> list[tuple[str, str, str]]:
    """Rocchio's order inside each query; Thompson sampling over queries for every pick of the round."""
    judged: dict[str, list[tuple[str, int]]] = {}
    for (q, d), g in sorted(labels.items()):
        judged.setdefault(q, []).append((d, g))
    qids, queues = [], []
    for qid in sorted(lists):
        cands = _candidates(lists[qid], rankers, qid, labels)
        if not cands:
            continue
        if vectors is not None and qid in vectors.queries:
            order = _rocchio_order(qid, sorted(cands), judged.get(qid, []), vectors)
        else:
            order = sorted(cands, key=lambda d: (cands[d][1], -cands[d][2], d))
        qids.append(qid)
        queues.append([(d, cands[d][0]) for d in order])
    wins = np.array([sum(1 for _, g in judged.get(q, []) if g >= RELEVANT) for q in qids], dtype=np.float64)
    alpha = 1.0 + wins
    beta = 1.0 + np.array([len(judged.get(q, [])) for q in qids], dtype=np.float64) - wins
    digest = hashlib.sha256(f"{state['seed']}:{state['round']}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    taken = [0] * len(qids)
    live = np.ones(len(qids), dtype=bool)
    total = sum(len(q) for q in queues)
    picks: list[tuple[str, str, str]] = []
    while len(picks) < total and (budget is None or len(picks) < budget):
        theta = np.where(live, rng.beta(alpha, beta), -1.0)
        i = int(np.argmax(theta))  # the first maximum: ties go to the smaller query_id
        doc, ranker = queues[i][taken[i]]
        picks.append((qids[i], doc, ranker))
        taken[i] += 1
        beta[i] += 1.0  # a provisional miss until the label arrives
        live[i] = taken[i] < len(queues[i])
    return picks


def query_vectors(con: Connection, embedder, tasks: Mapping[str, str], documents: Mapping[str, Any]) -> Vectors:
    """The packaged model's vectors of each query's text and each document (title and text), cached in the warehouse."""
    from goldenset.embeddings import embed_cached

    qids = sorted(tasks)
    doc_ids = sorted(documents)
    texts = [f"{d.title}\n{d.text}" if d.title else d.text for d in (documents[i] for i in doc_ids)]
    qv: list[np.ndarray] = list(embed_cached(con, [tasks[q] for q in qids], embedder)) if qids else []
    dv: list[np.ndarray] = list(embed_cached(con, texts, embedder)) if doc_ids else []
    return Vectors(dict(zip(qids, qv, strict=True)), dict(zip(doc_ids, dv, strict=True)))


# --------------------------------------------------------------------------- in the pool


def current_labels(con: Connection, active_versions: Mapping[str, str]) -> dict[Pair, int]:
    """(query_id, doc_id) -> grade of every golden_set row at the document's current version."""
    rows = con.execute("SELECT query_id, doc_id, doc_version, coalesce(grade, relevance) FROM golden_set").fetchall()
    return {(q, d): int(g) for q, d, v, g in rows if active_versions.get(d) == v}


def previous_state(con: Connection) -> dict[str, Any] | None:
    """The strategy state stored with the latest pool run, if it had one."""
    row = con.execute("SELECT report FROM pool_runs ORDER BY pool_id DESC LIMIT 1").fetchone()
    if row is None:
        return None
    value = json.loads(row[0]).get("strategy")
    return value if isinstance(value, dict) else None


def apply(
    con: Connection,
    chosen: list[tuple[Pair, tuple[str, str]]],
    report: Any,
    lists: Mapping[str, Mapping[str, Sequence[str]]],
    rankers: Sequence[str],
    snapshot: Any,
    name: str,
    budget: int | None,
    seed: int,
    embedder: Any = None,
    tasks: Mapping[str, str] | None = None,
) -> tuple[list[tuple[Pair, tuple[str, str]]], Any]:
    """Reorder and cap the pool's `pooled` pairs by strategy `name`; the other rows keep their places
    before or after the pooled ones (contract 11.2).

    `feedback` embeds each query's `tasks` text and the documents it reads with `embedder`
    (vectors cached in the warehouse, as the reference retriever's are).
    """
    from dataclasses import replace

    labels = current_labels(con, {d: doc.version for d, doc in snapshot.active.items()})
    pooled = [(pair, rv) for pair, rv in chosen if rv[0] == "pooled"]
    # The rows 7.4 orders before the pooled ones stay before the strategy's picks, those it
    # orders after them (successors of documents judged not relevant) stay after.
    first = next((i for i, (_, rv) in enumerate(chosen) if rv[0] == "pooled"), len(chosen))
    before = chosen[:first]
    after = [(pair, rv) for pair, rv in chosen[first:] if rv[0] != "pooled"]
    by_pair = dict(pooled)
    # Only pooled pairs are the strategy's to draw (and to count against the budget); stale and
    # successor rows are queued anyway. Labelled documents stay in the lists: the bandit's evidence.
    drawable = {
        q: {r: [d for d in docs if (q, d) in by_pair or (q, d) in labels] for r, docs in per.items()}
        for q, per in lists.items()
    }
    vectors = None
    if name == "feedback" and embedder is not None and tasks is not None:
        wanted = {d for per in drawable.values() for docs in per.values() for d in docs}
        wanted |= {d for q, d in labels if q in drawable}
        vectors = query_vectors(
            con, embedder, {q: tasks[q] for q in drawable if q in tasks}, {d: snapshot.active[d] for d in wanted}
        )
    plan = plan_round(
        name,
        drawable,
        rankers,
        labels,
        budget=budget,
        seed=seed,
        previous=previous_state(con),
        depth_order=[pair for pair, _ in pooled],
        vectors=vectors,
    )
    kept = [((q, d), by_pair[(q, d)]) for q, d, _ in plan.picks if (q, d) in by_pair]
    out = before + kept + after
    reasons = ("stale", "successor", "pooled")
    queue = {r: sum(1 for _, (reason, _) in out if reason == r) for r in reasons}
    state = {**plan.state, "budget": budget, "pooled_before_budget": len(pooled)}
    return out, replace(report, queue=queue, strategy=state)
