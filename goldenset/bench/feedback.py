"""The two production features that learn from verdicts: the graph hop and the boosts.

Both learn from the `judgments` view: ranked items judged `helped`, one set of
helped documents per query (query_id). They are layers over any retriever's
ranked list, so they apply to a plugged-in retriever as well as to the reference.

- Graph: documents that helped on the same query are linked; an edge weighs the
  number of queries on which both helped. The neighbours of the top GRAPH_SEEDS
  hits are pulled in with HOP_DECAY times the seed's score, scaled by edge weight.
- Boosts: a document's score is multiplied by 1 + BOOST_STRENGTH * ln(1 + q), q
  being the number of queries on which it helped.

Scores of the underlying list are replaced by rank scores 1 / rank first, so the
layers behave the same whatever scale the retriever's scores use. (1 / rank, not
RRF's flat 1 / (60 + rank): on the flat scale a 1.35x boost would lift a document
from rank 20 over rank 1, and the boosts would be all there is.)
Leave-one-out (`exclude_query`): edges and boosts as if the given query's
verdicts had never been logged. Neighbours are restricted to active documents.

They feed only the reference rows, so they are not probed like the retriever's
parts: `graph_gap` and `boosts_gap` say when one has nothing to learn from, and the
runner leaves out the rows it would feed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from goldenset.connection import Connection

GRAPH_SEEDS = 3
HOP_DECAY = 0.5
BOOST_STRENGTH = 0.5


@dataclass
class Feedback:
    """Helped documents per query, and what the graph and boosts derive from them."""

    helped: dict[str, frozenset[str]]
    active: frozenset[str]
    doc_queries: dict[str, set[str]] = field(init=False)
    co: dict[str, dict[str, int]] = field(init=False)

    def __post_init__(self) -> None:
        self.doc_queries = defaultdict(set)
        self.co = defaultdict(lambda: defaultdict(int))
        for q, docs in self.helped.items():
            for d in docs:
                self.doc_queries[d].add(q)
                for e in docs:
                    if e != d:
                        self.co[d][e] += 1

    @classmethod
    def from_warehouse(cls, con: Connection, active: Iterable[str]) -> Feedback:
        """Learn from every ranked `helped` judgment in the warehouse."""
        rows = con.execute(
            "SELECT DISTINCT query_id, doc_id FROM judgments "
            "WHERE channel = ? AND verdict = ? ORDER BY query_id, doc_id",
            ["ranked", "helped"],
        ).fetchall()
        helped: dict[str, set[str]] = defaultdict(set)
        for q, d in rows:
            helped[q].add(d)
        return cls({q: frozenset(ds) for q, ds in helped.items()}, frozenset(active))

    def boost(self, doc: str, exclude_query: str | None = None) -> int:
        """Queries on which `doc` helped, leaving `exclude_query` out."""
        qs = self.doc_queries.get(doc, ())
        return len(qs) - (1 if exclude_query is not None and exclude_query in qs else 0)

    def neighbours(self, doc: str, exclude_query: str | None = None) -> dict[str, int]:
        """Active documents linked to `doc`, with edge weights, leaving `exclude_query` out."""
        left_out = self.helped.get(exclude_query, frozenset()) if exclude_query is not None else frozenset()
        out = {}
        for other, w in self.co.get(doc, {}).items():
            if doc in left_out and other in left_out:
                w -= 1
            if w > 0 and other in self.active:
                out[other] = w
        return out

    def graph_gap(self) -> str | None:
        """Why the graph has nothing to offer (no edge between active documents), else None."""
        if any(d in self.active and self.neighbours(d) for d in self.co):
            return None
        return "no two active documents helped on the same query, so the graph has no edge"

    def boosts_gap(self) -> str | None:
        """Why the boosts have nothing to offer (no active document ever helped), else None."""
        if any(d in self.active and qs for d, qs in self.doc_queries.items()):
            return None
        return "no active document has a `helped` verdict, so nothing would be boosted"


def rerank(
    hits: Sequence[tuple[str, float]],
    feedback: Feedback | None,
    *,
    graph: bool,
    boosts: bool,
    depth: int,
    exclude_query: str | None = None,
) -> list[tuple[str, float]]:
    """Apply the graph hop and/or boosts to a ranked list; ties go to the larger doc_id."""
    if feedback is None or not (graph or boosts):
        return list(hits)[:depth]
    score = {d: 1.0 / r for r, (d, _) in enumerate(hits, start=1)}
    if graph:
        for seed, _ in list(hits)[:GRAPH_SEEDS]:
            nbrs = feedback.neighbours(seed, exclude_query)
            if not nbrs:
                continue
            top = max(nbrs.values())
            for other, w in nbrs.items():
                pulled = score[seed] * HOP_DECAY * w / top
                if pulled > score.get(other, 0.0):
                    score[other] = pulled
    if boosts:
        for d in score:
            score[d] *= 1.0 + BOOST_STRENGTH * math.log1p(feedback.boost(d, exclude_query))
    ordered = sorted(sorted(score.items(), key=lambda p: p[0], reverse=True), key=lambda p: -p[1])
    return ordered[:depth]
