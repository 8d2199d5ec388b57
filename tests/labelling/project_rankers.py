"""A plug-in ranker with fixed answers for the three projects of test_rubrics_by_project.py."""

from __future__ import annotations

BILLING_TASK = "How long is the refund window?"
OPS_TASK = "Restart the stuck worker"
WEB_TASK = "Rotate the API key"

# Best first: the served, helped document, then one nobody judged.
ANSWERS = {BILLING_TASK: ["a", "d"], OPS_TASK: ["c", "f"], WEB_TASK: ["e", "b"]}


class FixedRanker:
    """Answers from ANSWERS; unknown queries find nothing."""

    def components(self) -> list[str]:
        return ["fixed"]

    def search_component(self, name: str, query: str, k: int) -> list[tuple[str, float]]:
        return self.search(query, k)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return [(d, 1.0 / r) for r, d in enumerate(ANSWERS.get(query, []), start=1)]


def fixed(ctx) -> FixedRanker:
    return FixedRanker()
