"""Pooling strategies: which returned pairs to label first, and how many per round (contract section 11).

The pool (pool.py) collects what each ranker returned; a strategy orders the pairs that
need a label (reason `pooled`) and `--budget` keeps the first N of them. Stale and
successor rows are not the strategy's to order: they always come first, in full.

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

Common rules: a pair labelled in the golden set at the document's current version is
never drawn; a document two rankers return is drawn once, for the ranker that reached
it first; with a budget the queries take turns (query_id order, one pick each per turn)
until the budget is spent or nothing is left, so every query gets about budget / queries.
The round number and, for mtf, the picks are stored in `pool_runs.report` under
`strategy`; the next `pool --strategy S` with the same S resumes from the latest such
row, a different strategy or `--seed` starts over at round 1.
"""

from __future__ import annotations

import json
import random
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from goldenset.errors import UsageError

STRATEGIES = ("depth", "mtf", "bandit")
DEFAULT_STRATEGY = "depth"
RELEVANT = 1

Pair = tuple[str, str]  # (query_id, doc_id)


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
) -> Plan:
    """One round of `name` over `lists` (query_id -> ranker -> doc_ids, best first).

    `labels` holds the grade of every pair labelled at its current version; `depth_order`
    the pooled pairs in the pool's own priority order (what `depth` keeps). Returns the
    picks in queue order and the state to store with the pool run.
    """
    check_strategy(name, budget)
    state = resume(name, seed, previous)
    state["round"] += 1
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


# --------------------------------------------------------------------------- in the pool


def current_labels(con, active_versions: Mapping[str, str]) -> dict[Pair, int]:
    """(query_id, doc_id) -> grade of every golden_set row at the document's current version."""
    rows = con.execute("SELECT query_id, doc_id, doc_version, coalesce(grade, relevance) FROM golden_set").fetchall()
    return {(q, d): int(g) for q, d, v, g in rows if active_versions.get(d) == v}


def previous_state(con) -> dict[str, Any] | None:
    """The strategy state stored with the latest pool run, if it had one."""
    row = con.execute("SELECT report FROM pool_runs ORDER BY pool_id DESC LIMIT 1").fetchone()
    if row is None:
        return None
    value = json.loads(row[0]).get("strategy")
    return value if isinstance(value, dict) else None


def apply(
    con,
    chosen: list[tuple[Pair, tuple[str, str]]],
    report: Any,
    lists: Mapping[str, Mapping[str, Sequence[str]]],
    rankers: Sequence[str],
    snapshot: Any,
    name: str,
    budget: int | None,
    seed: int,
) -> tuple[list[tuple[Pair, tuple[str, str]]], Any]:
    """Reorder and cap the pool's `pooled` pairs by strategy `name`; stale and successor rows stay first."""
    from dataclasses import replace

    labels = current_labels(con, {d: doc.version for d, doc in snapshot.active.items()})
    pooled = [(pair, rv) for pair, rv in chosen if rv[0] == "pooled"]
    others = [(pair, rv) for pair, rv in chosen if rv[0] != "pooled"]
    by_pair = dict(pooled)
    # Only pooled pairs are the strategy's to draw (and to count against the budget); stale and
    # successor rows are queued anyway. Labelled documents stay in the lists: the bandit's evidence.
    drawable = {
        q: {r: [d for d in docs if (q, d) in by_pair or (q, d) in labels] for r, docs in per.items()}
        for q, per in lists.items()
    }
    plan = plan_round(
        name,
        drawable,
        rankers,
        labels,
        budget=budget,
        seed=seed,
        previous=previous_state(con),
        depth_order=[pair for pair, _ in pooled],
    )
    kept = [((q, d), by_pair[(q, d)]) for q, d, _ in plan.picks if (q, d) in by_pair]
    out = others + kept
    reasons = ("stale", "successor", "pooled")
    queue = {r: sum(1 for _, (reason, _) in out if reason == r) for r in reasons}
    state = {**plan.state, "budget": budget, "pooled_before_budget": len(pooled)}
    return out, replace(report, queue=queue, strategy=state)
