"""Benchmark runs in DuckDB: one transaction per run, read back for reports and comparisons."""

from __future__ import annotations

import json
import math
import secrets
from dataclasses import dataclass, field
from datetime import datetime

import pyarrow as pa

from goldenset.errors import UsageError
from goldenset.warehouse import transaction

ROWS = ("core", "+graph", "+graph+boosts", "+graph+boosts honest")
DECIDING_ROW = "core"
ALL = "all"  # query_id of the mean rows; golden query ids are 16 hex digits, never "all"


@dataclass
class BenchmarkRun:
    """One benchmark run: its provenance, its warnings and every per-query value."""

    run_id: str
    started_at: datetime
    build_id: int
    corpus_fingerprint: str
    retriever: str
    retriever_config: dict
    degraded: bool
    warnings: list[str]
    k_values: tuple[int, ...]
    depth: int
    exclude_stale: bool
    stale_labels: int
    corpus_drift: float | None
    down_components: list[str]
    metric_names: list[str]
    # row -> query_id -> metric -> value
    values: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # row -> query_id -> [(doc_id, score)] as ranked; kept in memory for the TREC files, not stored
    ranked: dict[str, dict[str, list[tuple[str, float]]]] = field(default_factory=dict, repr=False)

    @property
    def rows(self) -> list[str]:
        return [r for r in ROWS if r in self.values] + [r for r in self.values if r not in ROWS]

    @property
    def n_queries(self) -> int:
        return len(self.values.get(DECIDING_ROW) or next(iter(self.values.values()), {}))

    def means(self, row: str) -> dict[str, float]:
        per_query = self.values.get(row, {})
        n = len(per_query)
        return {m: (sum(v[m] for v in per_query.values()) / n if n else math.nan) for m in self.metric_names}

    def per_query(self, row: str, metric: str) -> dict[str, float]:
        if row not in self.values:
            raise UsageError(f"run {self.run_id} has no row {row!r}; it has {', '.join(self.rows)}")
        if metric not in self.metric_names:
            raise UsageError(
                f"run {self.run_id} did not measure {metric!r}; it measured {', '.join(self.metric_names)}"
            )
        return {q: v[metric] for q, v in self.values[row].items()}


def new_run_id(started_at: datetime) -> str:
    """A sortable, unique run id: UTC start time plus 6 random hex digits."""
    return f"{started_at:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def store_run(con, run: BenchmarkRun) -> None:
    """Write the run and all its values (per query and the means) in one transaction."""
    rid, row_names, qids, metrics, vals = [], [], [], [], []
    for row in run.rows:
        for qid, by_metric in run.values[row].items():
            for m, v in by_metric.items():
                rid.append(run.run_id), row_names.append(row), qids.append(qid), metrics.append(m), vals.append(v)
        for m, v in run.means(row).items():
            rid.append(run.run_id), row_names.append(row), qids.append(ALL), metrics.append(m), vals.append(v)
    table = pa.table({"run_id": rid, "row_name": row_names, "query_id": qids, "metric": metrics,
                      "value": pa.array(vals, type=pa.float64())})
    with transaction(con):
        con.execute(
            "INSERT INTO benchmark_runs (run_id, started_at, build_id, corpus_fingerprint, retriever, "
            "retriever_config, degraded, warnings, k_values, depth, exclude_stale, n_queries, stale_labels, "
            "corpus_drift, down_components, metrics) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [run.run_id, run.started_at, run.build_id, run.corpus_fingerprint, run.retriever,
             json.dumps(run.retriever_config, sort_keys=True), run.degraded, json.dumps(run.warnings),
             json.dumps(list(run.k_values)), run.depth, run.exclude_stale, run.n_queries, run.stale_labels,
             run.corpus_drift, json.dumps(run.down_components), json.dumps(run.metric_names)],
        )
        con.register("_goldenset_bench_values", table)
        try:
            con.execute(
                "INSERT INTO benchmark_results (run_id, row_name, query_id, metric, value) "
                "SELECT run_id, row_name, query_id, metric, value FROM _goldenset_bench_values"
            )
        finally:
            con.unregister("_goldenset_bench_values")


def load_run(con, run_id: str) -> BenchmarkRun:
    """Read one run back; UsageError naming `bench list` when it does not exist."""
    meta = con.execute(
        "SELECT run_id, started_at, build_id, corpus_fingerprint, retriever, retriever_config, degraded, "
        "warnings, k_values, depth, exclude_stale, stale_labels, corpus_drift, down_components, metrics "
        "FROM benchmark_runs WHERE run_id = ?",
        [run_id],
    ).fetchone()
    if meta is None:
        raise UsageError(f"no benchmark run {run_id!r} in the warehouse; `goldenset bench list` shows the runs")
    run = BenchmarkRun(
        run_id=meta[0], started_at=meta[1], build_id=meta[2], corpus_fingerprint=meta[3], retriever=meta[4],
        retriever_config=json.loads(meta[5] or "{}"), degraded=bool(meta[6]), warnings=json.loads(meta[7] or "[]"),
        k_values=tuple(json.loads(meta[8] or "[]")), depth=meta[9], exclude_stale=bool(meta[10]),
        stale_labels=meta[11] or 0, corpus_drift=meta[12], down_components=json.loads(meta[13] or "[]"),
        metric_names=json.loads(meta[14] or "[]"),
    )
    for row, qid, metric, value in con.execute(
        "SELECT row_name, query_id, metric, value FROM benchmark_results "
        "WHERE run_id = ? AND query_id <> ? ORDER BY row_name, query_id, metric",
        [run_id, ALL],
    ).fetchall():
        run.values.setdefault(row, {}).setdefault(qid, {})[metric] = value
        if metric not in run.metric_names:
            run.metric_names.append(metric)
    return run


def list_runs(con) -> list[dict]:
    """Every stored run, newest first, with its deciding-row means of recall and nDCG."""
    rows = con.execute(
        "SELECT r.run_id, r.started_at, r.build_id, r.retriever, r.degraded, r.n_queries, "
        "r.corpus_fingerprint, m.metric, m.value "
        "FROM benchmark_runs r LEFT JOIN benchmark_results m "
        "ON m.run_id = r.run_id AND m.query_id = ? AND m.row_name = ? "
        "ORDER BY r.started_at DESC, r.run_id DESC, m.metric",
        [ALL, DECIDING_ROW],
    ).fetchall()
    out: dict[str, dict] = {}
    for run_id, started, build_id, retriever, degraded, n, fp, metric, value in rows:
        item = out.setdefault(run_id, {
            "run_id": run_id, "started_at": started, "build_id": build_id, "retriever": retriever,
            "degraded": bool(degraded), "n_queries": n, "corpus_fingerprint": fp, "means": {},
        })
        if metric is not None:
            item["means"][metric] = value
    return list(out.values())
