"""Optional near-duplicate task merging with sentence embeddings (off by default).

Exact normalisation (contract section 3) decides what a query is unless this is
switched on; then tasks of one project whose embeddings are at least `threshold`
cosine-similar fold into one query, and every fold is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from goldenset.connection import Connection
from goldenset.embeddings import Embedder, embed_cached
from goldenset.records import query_id

# Cosine similarity at or above which two tasks of a project are one query (--near-duplicates).
NEAR_DUPLICATE_THRESHOLD = 0.92

_CANDIDATES = """
SELECT project, task_norm, count(DISTINCT serve_id) AS serves
FROM judgments WHERE channel = 'ranked'
GROUP BY project, task_norm
ORDER BY project, serves DESC, task_norm
"""


@dataclass(frozen=True)
class Merge:
    project: str
    task_norm: str
    merged_into: str
    cosine: float


def plan_merges(con: Connection, embedder: Embedder, threshold: float) -> list[Merge]:
    """Fold each task into the most-served earlier task of its project it is close to.

    Greedy and deterministic: tasks are visited by serve count, then text; a task
    joins the first representative at or above `threshold`, else becomes one.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold}")
    rows = con.execute(_CANDIDATES).fetchall()
    if not rows:
        return []
    vectors = embed_cached(con, [r[1] for r in rows], embedder)
    merges: list[Merge] = []
    by_project: dict[str, list[int]] = {}
    for i, (project, _, _) in enumerate(rows):
        by_project.setdefault(project, []).append(i)
    for project, idx in by_project.items():
        reps: list[int] = []
        for i in idx:
            if reps:
                sims = vectors[reps] @ vectors[i]
                best = int(np.argmax(sims))
                if sims[best] >= threshold:
                    merges.append(Merge(project, rows[i][1], rows[reps[best]][1], float(sims[best])))
                    continue
            reps.append(i)
    return merges


def query_map(merges: list[Merge]) -> list[tuple[str, str, str]]:
    """Rows (project, task_norm, query_id) for the build's `_query_map`."""
    return [(m.project, m.task_norm, query_id(m.project, m.merged_into)) for m in merges]
