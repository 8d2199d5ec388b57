"""Stored rankings: a benchmark run's deciding-row lists, kept so that they can rank again.

`bench run` stores the deciding row's ranking of every measured query (`benchmark_rankings`,
contract 11.1); `pool --from-run RUN_ID` reads it back as a ranker of the pool, and `bench
compare --rescore` measures it again against a newer golden set. Both read it here, so the
labelling loop does not reach into the benchmark's package for it.

As a ranker the stored run answers by query_id (the run's deciding row as it was measured), so
the candidate retriever is never run again and the pool holds exactly what the comparison
scored. Its ranker name is the run's retriever (`retriever#RUN_ID` when two runs given share
one); a query the run did not measure returns nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from goldenset.connection import Connection
from goldenset.errors import GoldensetError, UsageError
from goldenset.retrieval.retriever import Hit


def rankings_table(run_id: str, lists: Mapping[str, Sequence[Hit]]) -> pa.Table:
    """The rows of `benchmark_rankings` for one run: rank 1, 2, ... per query, in the order given."""
    rows = [(q, i, d, s) for q, hits in sorted(lists.items()) for i, (d, s) in enumerate(hits, start=1)]
    return pa.table(
        {
            "run_id": pa.array([run_id] * len(rows), pa.string()),
            "query_id": pa.array([r[0] for r in rows], pa.string()),
            "rank": pa.array([r[1] for r in rows], pa.int32()),
            "doc_id": pa.array([r[2] for r in rows], pa.string()),
            "score": pa.array([float(r[3]) for r in rows], pa.float64()),
        }
    )


def load_rankings(con: Connection, run_id: str, depth: int | None = None) -> tuple[str, dict[str, list[str]]]:
    """(retriever, {query_id: [doc_id, ...]}) of a stored run's deciding row, each cut to `depth`.

    UsageError naming `bench list` for an unknown run; GoldensetError for a run stored
    before its rankings were kept (run the benchmark again).
    """
    meta = con.execute("SELECT retriever FROM benchmark_runs WHERE run_id = ?", [run_id]).fetchone()
    if meta is None:
        raise UsageError(f"no benchmark run {run_id!r} in the warehouse; `goldenset bench list` shows the runs")
    out: dict[str, list[str]] = {}
    for qid, doc in con.execute(
        "SELECT query_id, doc_id FROM benchmark_rankings WHERE run_id = ? AND (? IS NULL OR rank <= ?) "
        "ORDER BY query_id, rank",
        [run_id, depth, depth],
    ).fetchall():
        out.setdefault(qid, []).append(doc)
    if not out:
        raise GoldensetError(
            f"benchmark run {run_id} has no stored ranking (it was stored before rankings were kept, "
            "or measured no query); run `goldenset bench run` again and pool that run"
        )
    return meta[0], out


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
