"""A pool ranker (`fixed_rankers:ranker`) with a fixed answer per query text, for the judge tests' queue.

ANSWERS maps a golden task to document ids, best first; the pool leaves out the ones
the golden set holds already (r1, a1, r3 are log labels of the world in world.py).
"""

from __future__ import annotations

from world import Q1_TASK, Q2_TASK, Q3_TASK

ANSWERS = {
    Q1_TASK: ["r1", "d1", "d2", "d3", "d4"],
    Q2_TASK: ["a1", "d5", "d6", "d7", "d8"],
    Q3_TASK: ["r3", "d9", "p1", "p2", "p3"],
}


class FixedRanker:
    """Answers ANSWERS[query]; scores fall with the place, so the list is best first."""

    name = "fixed"

    def components(self) -> list[str]:
        return ["fixed"]

    def search_component(self, name: str, query: str, k: int) -> list[tuple[str, float]]:
        return self.search(query, k)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return [(d, 1.0 / r) for r, d in enumerate(ANSWERS.get(query, []), start=1)]


def ranker(ctx) -> FixedRanker:
    return FixedRanker()
