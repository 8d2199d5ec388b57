"""What the explorer's pages read: the queries (in the set or gone), builds with their funnel, runs, a comparison.

Every function takes a read-only connection and returns plain dicts; filters are SQL
parameters. Decisions:
- **Queries listed** are the latest build's golden queries and those that left the set (a
  label history with no open version), newest departure first after the golden ones; their
  project and text are those of their last label row.
- **Search** matches a substring of the text, case-insensitively, or a prefix of the query_id.
- **In an audit** means drawn by the latest audit (contract 12.1: the one estimates use).
- **Comparison**: the deciding row (`core`) of two runs, per query measured by both, d(q) =
  B - A on one metric; the mean and its 95% interval are `goldenset.bench.paired`'s (t
  interval, as `bench compare` prints them). Runs' judged@k are the stored means.
- **Several runs** are compared by `goldenset.bench.compare_many` itself (contract 16: the
  family of every pair, or the baseline against each other run, on the deciding metrics,
  Holm's correction, the t test unless asked otherwise), so the page says exactly what
  `goldenset bench compare RUN ...` prints; at most 8 runs, the letters of its summary table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from goldenset.connection import Connection
from goldenset.errors import UsageError

DECIDING_ROW = "core"
FILTERS = ("q", "project", "source", "stale", "audit", "status")
SOURCES = ("log", "human", "judge")

_QUERIES = """
WITH latest_audit AS (SELECT max(pool_id) AS pool_id FROM audit_samples),
audited AS (SELECT query_id FROM audit_queries WHERE pool_id = (SELECT pool_id FROM latest_audit)),
inset AS (
  SELECT query_id, project, task, labels, relevant, log_labels, human_labels, judge_labels, stale_labels, kept_by,
         'in' AS status, NULL::BIGINT AS left_build
  FROM golden_queries),
gone AS (
  SELECT query_id, max(valid_to_build) AS left_build FROM label_history GROUP BY query_id
  HAVING bool_and(valid_to_build IS NOT NULL)),
last_rows AS (
  SELECT c.query_id, arg_max(c.project, c.valid_to_build) AS project, arg_max(c.task, c.valid_to_build) AS task
  FROM build_labels_closed c SEMI JOIN gone g USING (query_id) GROUP BY c.query_id),
out AS (
  SELECT g.query_id, r.project, r.task, 0 AS labels, 0 AS relevant, 0 AS log_labels, 0 AS human_labels,
         0 AS judge_labels, 0 AS stale_labels, NULL AS kept_by, 'left' AS status, g.left_build
  FROM gone g JOIN last_rows r USING (query_id))
SELECT x.*, x.query_id IN (SELECT query_id FROM audited) AS in_audit
FROM (SELECT * FROM inset UNION ALL SELECT * FROM out) x
WHERE ($q = '' OR contains(lower(x.task), lower($q)) OR starts_with(x.query_id, lower($q)))
  AND ($project = '' OR x.project = $project)
  AND ($source = '' OR ($source = 'log' AND x.log_labels > 0) OR ($source = 'human' AND x.human_labels > 0)
       OR ($source = 'judge' AND x.judge_labels > 0))
  AND ($stale = '' OR x.stale_labels > 0)
  AND ($audit = '' OR x.query_id IN (SELECT query_id FROM audited))
  AND ($status = '' OR x.status = $status)
ORDER BY x.status = 'left', x.left_build DESC NULLS FIRST, x.project, x.task, x.query_id
"""


def queries(con: Connection, **chosen: str) -> list[dict[str, Any]]:
    """The golden queries and those that left, filtered by `chosen` (FILTERS; '' means any)."""
    params = {k: (chosen.get(k) or "").strip() for k in FILTERS}
    if params["source"] and params["source"] not in SOURCES:
        raise UsageError(f"source {params['source']!r} is not one of {', '.join(SOURCES)}")
    return _rows(con, _QUERIES, params)


def projects(con: Connection) -> list[str]:
    """Every project of a golden query or of a label row (for the filter's choices)."""
    return [r[0] for r in con.execute("SELECT DISTINCT project FROM label_rows ORDER BY project").fetchall()]


def builds(con: Connection) -> list[dict[str, Any]]:
    """Every build, newest first, with its counts and its funnel (step rows in order)."""
    out = _rows(
        con,
        "SELECT build_id, built_at, trigger, computation, labels_build_id, n_queries, n_helped, n_noise, n_wrong, "
        "n_human_labels, n_judge_labels, n_stale, human_labels_unused, log_labels_overridden, contract_version "
        "FROM golden_builds ORDER BY build_id DESC",
    )
    steps = _rows(
        con,
        "SELECT build_id, step, judgments_dropped, judgments_left, units_left, "
        "coalesce(units_kept_by_human, 0) AS units_kept_by_human, "
        "coalesce(judgments_kept_by_human, 0) AS judgments_kept_by_human FROM filter_funnel "
        "ORDER BY build_id, step_order",
    )
    by_build: dict[int, list[dict[str, Any]]] = {}
    for s in steps:
        by_build.setdefault(s.pop("build_id"), []).append(s)
    for b in out:
        b["funnel"] = by_build.get(b["build_id"], [])
    return out


def runs(con: Connection) -> list[dict[str, Any]]:
    """Every benchmark run, newest first, with its deciding row's judged@k means."""
    out = _rows(
        con,
        "SELECT run_id, started_at, build_id, retriever, n_queries, skipped_queries, exclude_stale "
        "FROM benchmark_runs ORDER BY started_at DESC, run_id DESC",
    )
    means = con.execute(
        "SELECT run_id, metric, value FROM benchmark_results WHERE row_name = ? AND query_id = 'all' "
        "ORDER BY run_id, metric",
        [DECIDING_ROW],
    ).fetchall()
    by_run: dict[str, dict[str, float]] = {}
    for run_id, metric, value in means:
        by_run.setdefault(run_id, {})[metric] = value
    for r in out:
        r["means"] = by_run.get(r["run_id"], {})
        r["judged"] = {m: v for m, v in r["means"].items() if m.startswith("judged@")}
    return out


def compare(con: Connection, a: str, b: str, metric: str | None = None) -> dict[str, Any]:
    """Per-query differences B - A on `metric` (default: ndcg@10 if both have it) over the queries both measured."""
    from goldenset.bench.metrics import get_metric
    from goldenset.bench.paired import compare_paired

    known = {r["run_id"]: r for r in runs(con)}
    for run_id in (a, b):
        if run_id not in known:
            raise UsageError(f"no benchmark run {run_id!r}; the runs page lists them")
    shared = sorted(set(known[a]["means"]) & set(known[b]["means"]))
    if not shared:
        raise UsageError(f"runs {a} and {b} share no metric on row {DECIDING_ROW}")
    chosen = metric or ("ndcg@10" if "ndcg@10" in shared else shared[0])
    if chosen not in shared:
        raise UsageError(f"metric {chosen!r} is not measured by both runs; choose one of {', '.join(shared)}")
    va, vb = (_per_query(con, run_id, chosen) for run_id in (a, b))
    both = sorted(set(va) & set(vb))
    tasks = dict(con.execute("SELECT query_id, any_value(task) FROM label_rows GROUP BY query_id").fetchall())
    diffs = sorted(
        ({"query_id": q, "task": tasks.get(q), "a": va[q], "b": vb[q], "diff": vb[q] - va[q]} for q in both),
        key=lambda d: (d["diff"], d["query_id"]),
    )
    paired = compare_paired(chosen, va, vb, get_metric(chosen).direction) if both else None
    return {
        "a": known[a],
        "b": known[b],
        "metric": chosen,
        "metrics": shared,
        "queries": diffs,
        "only_a": sorted(set(va) - set(vb)),
        "only_b": sorted(set(vb) - set(va)),
        "paired": None
        if paired is None
        else {k: _finite(getattr(paired, k)) for k in ("n", "diff", "lo", "hi")}
        | {"verdict": paired.verdict, "mean_a": paired.mean_a, "mean_b": paired.mean_b},
    }


def _per_query(con: Connection, run_id: str, metric: str) -> dict[str, float]:
    return dict(
        con.execute(
            "SELECT query_id, value FROM benchmark_results WHERE run_id = ? AND row_name = ? AND metric = ? "
            "AND query_id <> 'all'",
            [run_id, DECIDING_ROW, metric],
        ).fetchall()
    )


def _finite(v: Any) -> Any:
    return None if isinstance(v, float) and not np.isfinite(v) else v


def _rows(con: Connection, sql: str, params: Any = ()) -> list[dict[str, Any]]:
    cur = con.execute(sql, params if isinstance(params, dict) else list(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


MAX_RUNS = 8
TESTS = ("t", "randomization")


def compare_runs(con: Connection, run_ids: list[str], baseline: str | None, test: str = "t"):
    """Contract 16's comparison of several stored runs: `goldenset.bench.compare_many` on their deciding row."""
    from goldenset.bench.compare_many import compare_many
    from goldenset.bench.runs import load_run

    chosen = list(dict.fromkeys(r for r in run_ids if r))
    if len(chosen) < 2:
        raise UsageError("choose at least two runs to compare on the runs page")
    if len(chosen) > MAX_RUNS:
        raise UsageError(f"{len(chosen)} runs chosen; compare at most {MAX_RUNS} at once")
    if baseline and baseline not in chosen:
        raise UsageError(f"the baseline {baseline!r} is not one of the runs chosen")
    if test not in TESTS:
        raise UsageError(f"test {test!r} is not one of {', '.join(TESTS)}")
    known = {r["run_id"] for r in runs(con)}
    for run_id in chosen:
        if run_id not in known:
            raise UsageError(f"no benchmark run {run_id!r}; the runs page lists them")
    return compare_many([load_run(con, r) for r in chosen], baseline=baseline or None, test=test)
