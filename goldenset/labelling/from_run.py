"""A stored benchmark run as a ranker of the pool (`goldenset pool --from-run RUN_ID`, contract section 11).

The pool asks it for a query's documents by query_id and it answers from
`benchmark_rankings` (the run's deciding row as it was measured), so the candidate
retriever is never run again and the pool holds exactly what the comparison scored.
Its ranker name is the run's retriever (`retriever#RUN_ID` when two runs given share
one); a query the run did not measure returns nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from goldenset.bench.runs import load_rankings
from goldenset.connection import Connection
from goldenset.errors import UsageError


@dataclass(frozen=True)
class RunRanking:
    """The deciding-row ranking of one stored run, answering the pool by query_id."""

    run_id: str
    retriever: str
    lists: dict[str, list[str]]

    @classmethod
    def load(cls, con: Connection, run_id: str) -> RunRanking:
        retriever, lists = load_rankings(con, run_id)
        return cls(run_id, retriever, lists)

    def for_query(self, query_id: str, depth: int) -> list[tuple[str, float]]:
        docs = self.lists.get(query_id, [])[:depth]
        # Scores by rank: the pool reads the order only.
        return [(d, float(len(docs) - i)) for i, d in enumerate(docs)]

    def __call__(self, query: str, k: int) -> list[tuple[str, float]]:  # pragma: no cover - pool uses for_query
        raise TypeError("a stored run answers by query_id (for_query), not by query text")


def load_run_rankers(con: Connection, run_ids: Sequence[str]) -> dict[str, RunRanking]:
    """Ranker name -> stored run, in the order given; UsageError for a run named twice."""
    repeated = sorted({r for r in run_ids if list(run_ids).count(r) > 1})
    if repeated:
        raise UsageError(f"--from-run {repeated[0]} is given twice; name each run once")
    runs = [RunRanking.load(con, r) for r in run_ids]
    shared = {r.retriever for r in runs if sum(1 for o in runs if o.retriever == r.retriever) > 1}
    return {(f"{r.retriever}#{r.run_id}" if r.retriever in shared else r.retriever): r for r in runs}
