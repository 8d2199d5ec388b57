"""A stored benchmark run as a ranker of the pool (`goldenset pool --from-run RUN_ID`, contract section 11).

The pool asks it for a query's documents by query_id and it answers from
`benchmark_rankings` (the run's deciding row as it was measured), so the candidate
retriever is never run again and the pool holds exactly what the comparison scored.
Its ranker name is the run's retriever; a query the run did not measure returns nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from goldenset.bench.runs import load_rankings


@dataclass(frozen=True)
class RunRanking:
    """The deciding-row ranking of one stored run, answering the pool by query_id."""

    run_id: str
    retriever: str
    lists: dict[str, list[str]]

    @classmethod
    def load(cls, con, run_id: str) -> RunRanking:
        retriever, lists = load_rankings(con, run_id)
        return cls(run_id, retriever, lists)

    def for_query(self, query_id: str, depth: int) -> list[tuple[str, float]]:
        docs = self.lists.get(query_id, [])[:depth]
        # Scores by rank: the pool reads the order only.
        return [(d, float(len(docs) - i)) for i, d in enumerate(docs)]

    def __call__(self, query: str, k: int) -> list[tuple[str, float]]:  # pragma: no cover - pool uses for_query
        raise TypeError("a stored run answers by query_id (for_query), not by query text")
