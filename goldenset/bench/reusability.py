"""Leave-one-run-out (Zobel 1998): would a ranker that fed no labels be judged fairly by this set?

For each ranker that fed the labels, the relevant documents only it contributed (in its
top `depth` and in no other ranker's top `depth`) are taken out of the qrels, as if it
had never been pooled; every ranker is measured again. A ranker new to the set is in
that position: its unique finds are unjudged and count as misses. The largest change of
the metric and Kendall's tau between the rankers' orderings with and without it say how
much that matters: a tau well below 1 says a new ranker will be ranked unfairly.

Decisions (contract section 11.3): queries are those of the full qrels with a relevant
document (grade >= 1), fixed for every measurement, a query left with none scoring 0;
each ranker's list is read whole for the metric (its stored depth) and cut to `depth`
for what it contributed; tau is scipy's tau-b over the rankers' means (nan with fewer
than two rankers or when either ordering is all ties).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from goldenset.bench.metrics import RELEVANCE_LEVEL, get_metric
from goldenset.connection import Connection
from goldenset.errors import UsageError

DEFAULT_METRIC = "map"
DEFAULT_DEPTH = 5

Rankings = Mapping[str, Mapping[str, Sequence[str]]]  # ranker -> query_id -> doc_ids
Qrels = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class LeftOut:
    """What leaving one ranker's unique relevant documents out does to every ranker's metric."""

    ranker: str
    unique_relevant: int
    own_before: float
    own_after: float
    largest_change_ranker: str
    largest_change: float  # after - before, the largest in absolute value
    kendall_tau: float


@dataclass(frozen=True)
class LeaveOneOut:
    """The whole study: each ranker's metric on the full qrels, then one row per ranker left out."""

    metric: str
    depth: int
    queries: int
    before: dict[str, float]
    rows: tuple[LeftOut, ...]

    def to_json(self) -> dict[str, Any]:
        """The fields, in order; the rows a list of objects."""
        return asdict(self) | {"rows": [asdict(r) for r in self.rows]}


def _means(rankings: Rankings, qrels: Qrels, queries: Sequence[str], metric: str) -> dict[str, float]:
    m = get_metric(metric)
    return {
        name: sum(m(lists.get(q, ()), qrels.get(q, {})) for q in queries) / len(queries)
        for name, lists in rankings.items()
    }


def leave_one_out(
    rankings: Rankings, qrels: Qrels, *, depth: int = DEFAULT_DEPTH, metric: str = DEFAULT_METRIC
) -> LeaveOneOut:
    """Leave each ranker's unique relevant documents out in turn; measure every ranker again."""
    from scipy.stats import kendalltau

    metric = get_metric(metric).name
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise UsageError(f"--depth must be an integer >= 1, got {depth!r}")
    if not rankings:
        raise UsageError("leave-one-out needs at least one ranker (a stored benchmark run)")
    queries = sorted(q for q, rels in qrels.items() if any(g >= RELEVANCE_LEVEL for g in rels.values()))
    if not queries:
        raise UsageError("the qrels hold no relevant document: nothing to leave out")
    names = sorted(rankings)
    tops = {n: {(q, d) for q, docs in rankings[n].items() for d in docs[:depth]} for n in names}
    before = _means(rankings, qrels, queries, metric)
    rows = []
    for name in names:
        others = set().union(*(tops[o] for o in names if o != name))
        unique = {
            (q, d)
            for q, d in tops[name] - others
            if qrels.get(q, {}).get(d, 0) >= RELEVANCE_LEVEL and q in set(queries)
        }
        reduced = {q: {d: g for d, g in rels.items() if (q, d) not in unique} for q, rels in qrels.items()}
        after = _means(rankings, reduced, queries, metric)
        changes = {n: after[n] - before[n] for n in names}
        worst = max(names, key=lambda n: (abs(changes[n]), n == name))
        if len(names) >= 2:
            tau = float(kendalltau([before[n] for n in names], [after[n] for n in names]).statistic)
        else:
            tau = float("nan")
        rows.append(LeftOut(name, len(unique), before[name], after[name], worst, changes[worst], tau))
    return LeaveOneOut(metric, depth, len(queries), before, tuple(rows))


def stored_leave_one_out(
    con: Connection, run_ids: Sequence[str] | None = None, *, depth: int = DEFAULT_DEPTH, metric: str = DEFAULT_METRIC
) -> LeaveOneOut:
    """Leave-one-out over stored benchmark runs (their deciding rows) against the current golden set.

    The rankers are the runs given, else the newest run of each retriever configuration
    (`bench list`'s config), named by that configuration (by run id when two given share one).
    """
    from goldenset.bench.golden import load_qrels
    from goldenset.bench.runs import list_runs
    from goldenset.retrieval.rankings import load_rankings

    stored = list_runs(con)
    if run_ids:
        by_id = {r["run_id"]: r for r in stored}
        chosen = []
        for rid in run_ids:
            if rid not in by_id:
                raise UsageError(f"no benchmark run {rid!r} in the warehouse; `goldenset bench list` shows the runs")
            chosen.append(by_id[rid])
    else:
        seen: set[str] = set()
        chosen = []
        for r in stored:  # newest first
            if r["config"] not in seen:
                seen.add(r["config"])
                chosen.append(r)
    configs = [r["config"] for r in chosen]
    rankings = {
        (r["config"] if configs.count(r["config"]) == 1 else f"{r['config']}#{r['run_id']}"): load_rankings(
            con, r["run_id"]
        )[1]
        for r in chosen
    }
    return leave_one_out(rankings, load_qrels(con).qrels, depth=depth, metric=metric)
