"""Benchmark runs in DuckDB: one transaction per run, read back for reports and comparisons."""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import pyarrow as pa

from goldenset.bench.estimate import RunEstimates, load_estimates, store_estimates
from goldenset.connection import Connection
from goldenset.errors import UsageError
from goldenset.retrieval.rankings import load_rankings, rankings_table
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
    # The build whose labels were measured (a `repeat` build shares an earlier one's); None: unknown.
    labels_build_id: int | None = None
    # Golden queries skipped for want of a label with grade >= 1; None for runs stored before it was kept.
    skipped_queries: int | None = None
    # The fifth gate on this run (coverage.check_run): BIASED lines and the command, printed first.
    coverage_warnings: list[str] = field(default_factory=list)
    # row -> query_id -> [(doc_id, score)] as ranked; kept in memory for the TREC files, not stored
    ranked: dict[str, dict[str, list[tuple[str, float]]]] = field(default_factory=dict, repr=False)
    # `bench run --estimate ppi`: prediction-powered estimates (goldenset.bench.estimate); None without.
    estimates: RunEstimates | None = None
    # `bench run --measure NAME`: ir_measures' canonical names (contract 16.5), values beside the metrics'.
    measures: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[str]:
        return [r for r in ROWS if r in self.values] + [r for r in self.values if r not in ROWS]

    @property
    def config_summary(self) -> str:
        """The retriever and the options it was given, short: `goldenset.retrieval.reference:hybrid rrf_k=10`."""
        return config_summary(self.retriever, self.retriever_config.get("options") or {})

    @property
    def n_queries(self) -> int:
        return len(self.values.get(DECIDING_ROW) or next(iter(self.values.values()), {}))

    def means(self, row: str) -> dict[str, float]:
        """The mean of every metric and named measure over the row's queries (nan without any)."""
        per_query = self.values.get(row, {})
        n = len(per_query)
        return {
            m: (sum(v[m] for v in per_query.values()) / n if n else math.nan) for m in self.metric_names + self.measures
        }

    def per_query(self, row: str, metric: str) -> dict[str, float]:
        if row not in self.values:
            raise UsageError(f"run {self.run_id} has no row {row!r}; it has {', '.join(self.rows)}")
        if metric not in self.metric_names and metric not in self.measures:
            raise UsageError(
                f"run {self.run_id} did not measure {metric!r}; it measured {', '.join(self.metric_names + self.measures)}"
            )
        return {q: v[metric] for q, v in self.values[row].items()}

    def to_json(self) -> dict:
        """What `bench run --json` prints of the run (contract 12.2): the keys of `bench list --json` for it, the
        means of every row (unrounded, as stored; null for a row with no query), its warnings and notes, and the
        estimate object (null without --estimate)."""
        return {
            "run_id": self.run_id,
            "started_at": self.started_at.isoformat(),
            "build_id": self.build_id,
            "labels_build_id": self.labels_build_id,
            "retriever": self.retriever,
            "config": self.config_summary,
            "retriever_config": self.retriever_config,
            "degraded": self.degraded,
            "n_queries": self.n_queries,
            "skipped_queries": self.skipped_queries,
            "corpus_fingerprint": self.corpus_fingerprint,
            "coverage_warnings": list(self.coverage_warnings),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "row_means": {
                row: {m: (v if math.isfinite(v) else None) for m, v in self.means(row).items()} for row in self.rows
            },
            "estimate": self.estimates.to_json() if self.estimates is not None else None,
        }


def _option_value(value: object) -> str:
    if isinstance(value, str) and value and not any(c.isspace() or c in '=,"' for c in value):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def config_summary(retriever: str, options: Mapping[str, object]) -> str:
    """`retriever key=value ...`: the import path and the options it was given, keys sorted.

    Options are what a user changes between runs (`--retriever-config`), so they are
    what tells two runs of one retriever apart; the full configuration, defaults
    included, is in `retriever_config` and the report.
    """
    return " ".join([retriever, *(f"{k}={_option_value(options[k])}" for k in sorted(options))])


def new_run_id(started_at: datetime) -> str:
    """A sortable, unique run id: UTC start time plus 6 random hex digits."""
    return f"{started_at:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def store_run(con: Connection, run: BenchmarkRun) -> None:
    """Write the run and all its values (per query and the means) in one transaction."""
    records: list[tuple[str, str, str, float]] = []  # (row, query_id, metric, value)
    for row in run.rows:
        records += [(row, qid, m, v) for qid, by_metric in run.values[row].items() for m, v in by_metric.items()]
        records += [(row, ALL, m, v) for m, v in run.means(row).items()]
    table = pa.table(
        {
            "run_id": [run.run_id] * len(records),
            "row_name": [r[0] for r in records],
            "query_id": [r[1] for r in records],
            "metric": [r[2] for r in records],
            "value": pa.array([r[3] for r in records], type=pa.float64()),
        }
    )
    with transaction(con):
        con.execute(
            "INSERT INTO benchmark_runs (run_id, started_at, build_id, corpus_fingerprint, retriever, "
            "retriever_config, degraded, warnings, k_values, depth, exclude_stale, n_queries, stale_labels, "
            "corpus_drift, down_components, metrics, labels_build_id, skipped_queries, measures) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run.run_id,
                run.started_at,
                run.build_id,
                run.corpus_fingerprint,
                run.retriever,
                json.dumps(run.retriever_config, sort_keys=True),
                run.degraded,
                json.dumps(run.warnings),
                json.dumps(list(run.k_values)),
                run.depth,
                run.exclude_stale,
                run.n_queries,
                run.stale_labels,
                run.corpus_drift,
                json.dumps(run.down_components),
                json.dumps(run.metric_names),
                run.labels_build_id,
                run.skipped_queries,
                json.dumps(run.measures),
            ],
        )
        con.register("_goldenset_bench_values", table)
        try:
            con.execute(
                "INSERT INTO benchmark_results (run_id, row_name, query_id, metric, value) "
                "SELECT run_id, row_name, query_id, metric, value FROM _goldenset_bench_values"
            )
        finally:
            con.unregister("_goldenset_bench_values")
        if run.estimates is not None:
            store_estimates(con, run.run_id, run.estimates)
        # Only the deciding row: it is what a comparison decides on, so what `pool --from-run` must fill.
        ranked = rankings_table(run.run_id, run.ranked.get(DECIDING_ROW, {}))
        if ranked.num_rows:
            con.register("_goldenset_bench_ranked", ranked)
            try:
                con.execute(
                    "INSERT INTO benchmark_rankings (run_id, query_id, rank, doc_id, score) "
                    "SELECT run_id, query_id, rank, doc_id, score FROM _goldenset_bench_ranked"
                )
            finally:
                con.unregister("_goldenset_bench_ranked")


# Runs stored before labels_build_id was kept: the build's own row still says which labels it
# holds (a build's labels_build_id never changes). Null only when that build is gone too.
_LABELS_BUILD = "coalesce(r.labels_build_id, b.labels_build_id)"


def load_run(con: Connection, run_id: str) -> BenchmarkRun:
    """Read one run back; UsageError naming `bench list` when it does not exist."""
    meta = con.execute(
        "SELECT r.run_id, r.started_at, r.build_id, r.corpus_fingerprint, r.retriever, r.retriever_config, "
        "r.degraded, r.warnings, r.k_values, r.depth, r.exclude_stale, r.stale_labels, r.corpus_drift, "
        "r.down_components, r.metrics, " + _LABELS_BUILD + ", r.skipped_queries, r.measures "
        "FROM benchmark_runs r LEFT JOIN golden_builds b ON b.build_id = r.build_id WHERE r.run_id = ?",
        [run_id],
    ).fetchone()
    if meta is None:
        raise UsageError(f"no benchmark run {run_id!r} in the warehouse; `goldenset bench list` shows the runs")
    run = BenchmarkRun(
        run_id=meta[0],
        started_at=meta[1],
        build_id=meta[2],
        corpus_fingerprint=meta[3],
        retriever=meta[4],
        retriever_config=json.loads(meta[5] or "{}"),
        degraded=bool(meta[6]),
        warnings=json.loads(meta[7] or "[]"),
        k_values=tuple(json.loads(meta[8] or "[]")),
        depth=meta[9],
        exclude_stale=bool(meta[10]),
        stale_labels=meta[11] or 0,
        corpus_drift=meta[12],
        down_components=json.loads(meta[13] or "[]"),
        metric_names=json.loads(meta[14] or "[]"),
        labels_build_id=meta[15],
        skipped_queries=meta[16],
        measures=json.loads(meta[17] or "[]"),
    )
    for row, qid, metric, value in con.execute(
        "SELECT row_name, query_id, metric, value FROM benchmark_results "
        "WHERE run_id = ? AND query_id <> ? ORDER BY row_name, query_id, metric",
        [run_id, ALL],
    ).fetchall():
        run.values.setdefault(row, {}).setdefault(qid, {})[metric] = value
        if metric not in run.metric_names and metric not in run.measures:
            run.metric_names.append(metric)
    run.estimates = load_estimates(con, run_id)
    return run


def list_runs(con: Connection) -> list[dict]:
    """Every stored run, newest first: provenance, retriever and config, deciding-row means.

    `config` is the short summary (config_summary), `retriever_config` the full JSON
    object stored with the run.
    """
    rows = con.execute(
        "SELECT r.run_id, r.started_at, r.build_id, " + _LABELS_BUILD + ", r.retriever, r.retriever_config, "
        "r.degraded, r.n_queries, r.corpus_fingerprint, r.measures, m.metric, m.value "
        "FROM benchmark_runs r LEFT JOIN golden_builds b ON b.build_id = r.build_id "
        "LEFT JOIN benchmark_results m ON m.run_id = r.run_id AND m.query_id = ? AND m.row_name = ? "
        "ORDER BY r.started_at DESC, r.run_id DESC, m.metric",
        [ALL, DECIDING_ROW],
    ).fetchall()
    out: dict[str, dict] = {}
    for run_id, started, build_id, labels, retriever, cfg, degraded, n, fp, measures, metric, value in rows:
        full = json.loads(cfg or "{}")
        item = out.setdefault(
            run_id,
            {
                "run_id": run_id,
                "started_at": started,
                "build_id": build_id,
                "labels_build_id": labels,
                "retriever": retriever,
                "config": config_summary(retriever, full.get("options") or {}),
                "retriever_config": full,
                "degraded": bool(degraded),
                "n_queries": n,
                "corpus_fingerprint": fp,
                "measures": json.loads(measures or "[]"),
                "means": {},
            },
        )
        if metric is not None:
            item["means"][metric] = value
    return list(out.values())


def rescore(con: Connection, run: BenchmarkRun) -> BenchmarkRun:
    """The run's deciding row measured again, from its stored ranking, against the current golden set.

    What `bench compare --rescore` compares after labels arrive: the retriever is not run
    again. Only the deciding row is kept (the reference rows re-rank with features learned
    from the labels, which changed); the queries are those of the stored ranking with a
    relevant label now (the skip_no_relevant policy); build and labels build become the
    latest build; everything else is the run's own.
    """
    import dataclasses

    from goldenset.bench.golden import latest_build, load_qrels
    from goldenset.bench.metrics import QueryPolicy, benchmark_metrics, evaluate

    _, lists = load_rankings(con, run.run_id)
    build = latest_build(con)
    metrics = benchmark_metrics(run.k_values)
    values = evaluate(lists, load_qrels(con, run.exclude_stale).qrels, metrics, policy=QueryPolicy.SKIP_NO_RELEVANT)
    return dataclasses.replace(
        run,
        build_id=build.build_id,
        labels_build_id=build.labels_build_id,
        metric_names=[m.name for m in metrics],
        values={DECIDING_ROW: values},
        notes=[*run.notes, f"rescored against golden build {build.build_id} from the stored ranking"],
    )
