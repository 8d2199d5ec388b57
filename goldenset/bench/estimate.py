"""Prediction-powered benchmark numbers: per-query prediction and truth from the labels, then goldenset.bench.ppi.

For a benchmark row and metric, each measured query gets two values (contract 12.2):

- the **prediction**, for every measured query: the metric with the labels of every source
  except the audit, the judge's labels filling the pairs those leave open. On a pair the
  audit asked for, a human label is the audit's, so the prediction reads the log label it
  replaced (a log row the build kept as overridden) or else the judge's current label; it
  never sees an audit label, or the correction would vanish on exactly the audited queries.
- the **truth**, for the audited queries (goldenset.labelling.audit): the golden set's log
  and human rows, with the audit's human labels on every pair it asked for. A judge row
  (an admitted judge, contract 8.3) is left out: an estimate never takes a judge label for
  a human one.

Decisions
---------
- **The judge's labels** are its current labels (`current_labels`, kind `judge`, annotator
  NAME) at any version, graded by the rubric they were checked against. A judge without a
  label is refused (it would make the prediction the log-only metric and say nothing).
- **Population** = the queries the run measured (those with a label of grade >= 1 in the
  golden set); the audited queries outside it are left out, which keeps the sample a
  uniform one of the population (a uniform sample restricted to a subset is uniform on it).
- **Stale labels** follow --exclude-stale exactly as the golden qrels do, in both; a stale row
  left out frees its pair, which the judge's label then fills in the prediction (rule 3).
- **Only documents a ranker can return.** The judge fills a pair (rule 3) only when its
  document is active in the latest build's snapshot: 7.3 keeps human labels on other documents
  out of the set, and a judge label there would be a relevant document no ranker can return,
  lowering every recall of the prediction.
- **No estimate** for a row and metric without an audited query among its measured queries:
  `reason` says why and `hint` what to do, apart, so that a script can read the reason.
- **Paired** (`bench compare --estimate ppi`): per query the difference B - A of the
  predictions, and of the truths on queries audited in both; the same estimator, and the
  verdict read from its interval as goldenset.bench.paired reads the t interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from goldenset.bench.metrics import Metric, get_metric
from goldenset.bench.paired import verdict
from goldenset.bench.ppi import DEFAULT_DESIGN, TUNED, Bounds, PpiEstimate, ppi_mean, shown
from goldenset.connection import Connection
from goldenset.errors import UsageError
from goldenset.labelling.audit import Audit, latest_audit

Qrels = dict[str, dict[str, int]]

# Contract 12.2: the one reason a row and metric get no estimate, and what to do about it.
NO_AUDITED = "no audited query among the measured ones"
NO_AUDITED_HINT = "label the audit's pairs, then `goldenset build`"


@dataclass(frozen=True)
class EstimateLabels:
    """The two sets of qrels an estimate reads, with the judge and the audit they come from."""

    judge: str
    audit: Audit
    prediction: Qrels  # every golden query
    truth: Qrels  # audited queries only


def check_estimate(estimate: str | None, judge: str | None, *, tuning: tuple[str, str] | None = None) -> str | None:
    """`bench run --estimate ppi --judge NAME`: the judge's name, None without --estimate; UsageError otherwise.

    `tuning`: the (--design, --ppi-lambda) given, refused without --estimate unless at their defaults.
    """
    if estimate is None:
        if judge is not None:
            raise UsageError("--judge only applies to an estimate; add --estimate ppi")
        if tuning is not None and tuning != ("finite", TUNED):
            raise UsageError("--design and --ppi-lambda only apply to an estimate; add --estimate ppi --judge NAME")
        return None
    if estimate != "ppi":
        raise UsageError(f"--estimate {estimate!r} is not known; use --estimate ppi")
    if not judge:
        raise UsageError("--estimate ppi needs --judge NAME, the judge annotator whose labels it uses")
    return judge


def check_compare_estimate(estimate: str | None, judge: str | None, ppi_lambda: str = TUNED) -> str | None:
    """`bench compare --estimate ppi [--judge NAME] [--ppi-lambda L]`: "ppi" or None (a --judge alone implies
    ppi); a --ppi-lambda other than tuned without either is refused."""
    if estimate not in (None, "ppi"):
        raise UsageError(f"--estimate {estimate!r} is not known; use --estimate ppi")
    if not (estimate or judge) and ppi_lambda != TUNED:
        raise UsageError("--ppi-lambda only applies to an estimate; add --estimate ppi")
    return "ppi" if estimate or judge else None


def estimate_labels(con: Connection, judge: str, exclude_stale: bool = False) -> EstimateLabels:
    """Prediction and truth qrels of the latest build for `judge` and the latest audit (see the module)."""
    audit = latest_audit(con)
    judge_rows = con.execute(_JUDGE_ROWS, [judge]).fetchall()
    if not judge_rows:
        raise UsageError(
            f"judge {judge!r} has no label: run `goldenset judge label --annotator {judge}` over the queue, "
            "then `goldenset build`"
        )
    judged = {(q, d): int(g) for q, d, g, _ in judge_rows if g is not None}
    fillable = {(q, d) for q, d, g, active in judge_rows if g is not None and active}
    stale_filter = " AND stale_reason IS NULL" if exclude_stale else ""
    golden = con.execute(
        f"SELECT query_id, doc_id, coalesce(grade, relevance), source FROM golden_set WHERE true{stale_filter}"
    ).fetchall()
    replaced = {
        (q, d): int(g)
        for q, d, g in con.execute(
            f"SELECT query_id, doc_id, coalesce(grade, relevance) FROM overridden_log_labels WHERE true{stale_filter}"
        ).fetchall()
    }
    queries = {q for q, *_ in golden}
    prediction: Qrels = {q: {} for q in queries}
    truth_rows: Qrels = {q: {} for q in queries}
    for qid, doc_id, grade, source in golden:
        pair = (qid, doc_id)
        if source != "judge":
            truth_rows[qid][doc_id] = int(grade)
        if source == "human" and pair in audit.asked:
            fallback = replaced.get(pair, judged.get(pair))
            if fallback is not None:
                prediction[qid][doc_id] = fallback
        else:
            prediction[qid][doc_id] = int(grade)
    for (qid, doc_id), grade in judged.items():
        if qid in prediction and doc_id not in prediction[qid] and (qid, doc_id) in fillable:
            prediction[qid][doc_id] = grade
    truth = {q: truth_rows[q] for q in audit.audited if q in truth_rows}
    return EstimateLabels(judge, audit, prediction, truth)


# The judge's current labels, each with whether its document is active in the latest build's snapshot.
_JUDGE_ROWS = """
SELECT c.query_id, c.doc_id, c.grade, d.doc_id IS NOT NULL
FROM current_labels c
LEFT JOIN corpus_documents d ON d.doc_id = c.doc_id AND d.status = 'active'
     AND d.content_sha256 = (SELECT corpus_content_sha256 FROM golden_builds ORDER BY build_id DESC LIMIT 1)
WHERE c.kind = 'judge' AND c.annotator = ?
"""


@dataclass(frozen=True)
class QueryValues:
    """One row and metric: the prediction of every measured query and the truth of the audited ones."""

    row: str
    metric: str
    prediction: dict[str, float]
    truth: dict[str, float]
    # An active audit: the probability each audited query was drawn with (empty for a uniform audit).
    inclusion: dict[str, float] = field(default_factory=dict)


def query_values(
    ranked: Mapping[str, Mapping[str, Sequence[str]]],
    measured: Mapping[str, Sequence[str]],
    labels: EstimateLabels,
    metrics: Sequence[Metric],
) -> list[QueryValues]:
    """Per row and metric, the metric of each measured query under the prediction and the truth qrels.

    `ranked`: row -> query_id -> doc_ids in rank order; `measured`: row -> the query_ids the
    run measured on it.
    """
    out = []
    chance = labels.audit.inclusion() if labels.audit.active else {}
    for row, queries in measured.items():
        lists = ranked[row]
        for m in metrics:
            pred = {q: m(lists.get(q, []), labels.prediction.get(q, {})) for q in queries}
            true = {q: m(lists.get(q, []), labels.truth[q]) for q in queries if q in labels.truth}
            out.append(QueryValues(row, m.name, pred, true, {q: chance[q] for q in true} if chance else {}))
    return out


@dataclass(frozen=True)
class RowEstimate:
    """The PPI estimate of one row and metric (None with a reason when none can be made)."""

    row: str
    metric: str
    estimate: PpiEstimate | None
    reason: str | None = None  # why there is no estimate (None when there is one)
    verdict: str | None = None  # paired comparisons only
    hint: str | None = None  # what to do about `reason`
    paired: bool = False  # a comparison's: its JSON carries `verdict`, null without an estimate

    def to_json(self, digits: int | None = 4) -> dict[str, Any]:
        """Contract 12.2's object: with an estimate, `reason` null and the estimate's keys; without one, exactly
        row, metric, reason and hint (and a comparison's verdict, null)."""
        head = {"row": self.row, "metric": self.metric, **({"verdict": self.verdict} if self.paired else {})}
        if self.estimate is None:
            return head | {"reason": self.reason, "hint": self.hint}
        return head | {"reason": None, **self.estimate.to_json(digits)}


def _estimate(
    pred: Mapping[str, float],
    true: Mapping[str, float],
    chance: Mapping[str, float],
    design: str,
    lam: float | None,
    bounds: Bounds | None,
) -> PpiEstimate | None:
    """The estimate, None without an audited query (reason NO_AUDITED)."""
    if not true:
        return None
    queries = sorted(pred)
    audited = sorted(true)
    est = ppi_mean(
        [pred[q] for q in queries],
        [pred[q] for q in audited],
        [true[q] for q in audited],
        design=design,
        lam=lam,
        inclusion=[chance[q] for q in audited] if chance else None,
        bounds=bounds,
    )
    return est


def estimate_rows(
    values: Sequence[QueryValues], design: str = DEFAULT_DESIGN, lam: float | None = None
) -> list[RowEstimate]:
    """One PPI estimate per row and metric of a run, clamped into each metric's range."""
    out = []
    for v in values:
        est = _estimate(v.prediction, v.truth, v.inclusion, design, lam, get_metric(v.metric).bounds)
        out.append(_row_estimate(v.row, v.metric, est))
    return out


def _row_estimate(row: str, metric: str, est: PpiEstimate | None, verdict: str | None = None) -> RowEstimate:
    if est is None:
        return RowEstimate(row, metric, None, NO_AUDITED, None, NO_AUDITED_HINT, paired=verdict is not None)
    return RowEstimate(row, metric, est, verdict=verdict, paired=verdict is not None)


def estimate_difference(
    metric: str, row: str, a: QueryValues, b: QueryValues, design: str = DEFAULT_DESIGN, lam: float | None = None
) -> RowEstimate:
    """PPI estimate of the mean difference B - A over the queries both measured, with its verdict.

    Lambda is tuned (or fixed) on the differences themselves; the interval is clamped into
    [lo - hi, hi - lo] of the metric's range, [-1, 1] for a metric in [0, 1].
    """
    common = sorted(set(a.prediction) & set(b.prediction))
    if not common:
        raise UsageError(f"{metric}: the two runs have no query in common; nothing to compare")
    pred = {q: b.prediction[q] - a.prediction[q] for q in common}
    true = {q: b.truth[q] - a.truth[q] for q in common if q in a.truth and q in b.truth}
    chance = {q: a.inclusion[q] for q in true if q in a.inclusion}
    m = get_metric(metric)
    bounds = (m.bounds[0] - m.bounds[1], m.bounds[1] - m.bounds[0]) if m.bounds else None
    est = _estimate(pred, true, chance, design, lam, bounds)
    if est is None:
        return RowEstimate(row, metric, None, NO_AUDITED, None, NO_AUDITED_HINT, paired=True)
    return RowEstimate(row, metric, est, verdict=verdict(est.lo, est.hi, m.direction), paired=True)


def ppi_line(e: RowEstimate) -> str:
    """One line a person reads: the estimate with its interval and lambda, the human-only one, and the gain."""
    if e.estimate is None:
        return f"{e.row} {e.metric}: no PPI estimate ({e.reason}); {e.hint}"
    x = e.estimate
    gain = "n/a" if x.ess_gain is None else ("inf" if math.isinf(x.ess_gain) else f"{shown(x.ess_gain, 2)}x")
    tuned = "tuned" if x.lam_rule == TUNED else "fixed"
    head = f"{e.row} {e.metric}: {x.method} {_f(x.estimate)} [{_f(x.lo)}, {_f(x.hi)}] at lambda {_f(x.lam)} ({tuned})"
    tail = (
        f"human-only {_f(x.human)} [{_f(x.human_lo)}, {_f(x.human_hi)}] on {x.n_audited} audited of "
        f"{x.n_population} queries; effective sample size gain {gain}"
    )
    return head + (f" {e.verdict}" if e.verdict else "") + "; " + tail


def _f(x: float) -> str:
    return shown(x, 4) if math.isfinite(x) else ("-inf" if x < 0 else "inf")


def printed(estimates: Sequence[RowEstimate], row: str | None) -> list[RowEstimate]:
    """The estimates a command prints: the deciding metrics (Metric.deciding) of `row` (None: any row; `bench
    run` passes its deciding row); every other one stays in --json and the stored run."""
    return [e for e in estimates if (row is None or e.row == row) and get_metric(e.metric).deciding]


# --------------------------------------------------------------------------- a run's estimates


@dataclass(frozen=True)
class RunEstimates:
    """What `bench run --estimate ppi` adds to a run: the per-query values and one estimate per row and metric."""

    judge: str
    design: str
    audit: dict[str, Any]
    values: tuple[QueryValues, ...]
    estimates: tuple[RowEstimate, ...]
    lam: float | None = None  # None: tuned per row and metric (PPI++); else fixed

    def to_json(self) -> dict[str, Any]:
        return {
            "method": "ppi",
            "judge": self.judge,
            "design": self.design,
            "lambda": TUNED if self.lam is None else self.lam,
            "confidence": 0.95,
            "audit": self.audit,
            "estimates": [e.to_json() for e in self.estimates],
        }

    def by_key(self) -> dict[tuple[str, str], QueryValues]:
        return {(v.row, v.metric): v for v in self.values}


def run_estimates(
    con: Connection,
    judge: str,
    ranked: Mapping[str, Mapping[str, Sequence[str]]],
    measured: Mapping[str, Sequence[str]],
    metrics: Sequence[Metric],
    *,
    exclude_stale: bool = False,
    design: str = DEFAULT_DESIGN,
    lam: float | None = None,
) -> RunEstimates:
    """Read the labels, compute every row's per-query values and their PPI estimates."""
    labels = estimate_labels(con, judge, exclude_stale)
    if design != "finite" and labels.audit.active:
        raise UsageError(
            f"the latest audit (pool {labels.audit.pool_id}) is active, which has the finite design only; "
            "use --design finite, or draw a uniform audit (`goldenset pool --audit N`)"
        )
    values = tuple(query_values(ranked, measured, labels, metrics))
    rows = tuple(estimate_rows(values, design, lam))
    return RunEstimates(judge, design, labels.audit.to_json(), values, rows, lam)


def store_estimates(con: Connection, run_id: str, est: RunEstimates) -> None:
    """Write the per-query values and the summary of a run's estimates; the caller holds the transaction."""
    import json

    import pyarrow as pa

    rows = [
        (v.row, q, v.metric, p, v.truth.get(q), v.inclusion.get(q))
        for v in est.values
        for q, p in sorted(v.prediction.items())
    ]
    table = pa.table(
        {
            "run_id": pa.array([run_id] * len(rows), pa.string()),
            "row_name": pa.array([r[0] for r in rows], pa.string()),
            "query_id": pa.array([r[1] for r in rows], pa.string()),
            "metric": pa.array([r[2] for r in rows], pa.string()),
            "prediction": pa.array([r[3] for r in rows], pa.float64()),
            "truth": pa.array([r[4] for r in rows], pa.float64()),
            "inclusion": pa.array([r[5] for r in rows], pa.float64()),
        }
    )
    con.register("_goldenset_estimates", table)
    try:
        con.execute("INSERT INTO benchmark_estimates BY NAME SELECT * FROM _goldenset_estimates")
    finally:
        con.unregister("_goldenset_estimates")
    con.execute("UPDATE benchmark_runs SET estimate = ? WHERE run_id = ?", [json.dumps(est.to_json()), run_id])


def load_estimates(con: Connection, run_id: str) -> RunEstimates | None:
    """A stored run's estimates, None when it was made without --estimate."""
    import json

    try:
        row = con.execute("SELECT estimate FROM benchmark_runs WHERE run_id = ?", [run_id]).fetchone()
    except duckdb.BinderException:  # a warehouse opened read-only before the column was added
        return None
    if row is None or row[0] is None:
        return None
    summary = json.loads(row[0])
    values: dict[tuple[str, str], QueryValues] = {}
    for r, q, m, p, t, pi in con.execute(
        "SELECT row_name, query_id, metric, prediction, truth, inclusion FROM benchmark_estimates WHERE run_id = ? "
        "ORDER BY row_name, metric, query_id",
        [run_id],
    ).fetchall():
        v = values.setdefault((r, m), QueryValues(r, m, {}, {}))
        v.prediction[q] = p
        if t is not None:
            v.truth[q] = t
        if pi is not None:
            v.inclusion[q] = pi
    vals = tuple(values.values())
    # A run stored before lambda was tuned (issue 37) has no "lambda": it was estimated at lambda 1.
    stored = summary.get("lambda", 1.0)
    lam = None if stored == TUNED else float(stored)
    design = summary["design"]
    return RunEstimates(summary["judge"], design, summary["audit"], vals, tuple(estimate_rows(vals, design, lam)), lam)


def compare_estimates(
    a: RunEstimates | None,
    b: RunEstimates | None,
    run_ids: tuple[str, str],
    row: str,
    metrics: Sequence[str],
    judge: str | None = None,
    lam: float | None = None,
) -> list[RowEstimate]:
    """PPI differences B - A for each metric on `row`, lambda tuned on the differences (or `lam`); UsageError
    when a run has no estimate, or the two differ in judge, audit or design."""
    a = _needed(a, run_ids[0], judge)
    b = _needed(b, run_ids[1], judge)
    if (a.judge, a.audit.get("pool_id"), a.design) != (b.judge, b.audit.get("pool_id"), b.design):
        raise UsageError(
            f"the runs' estimates are not on the same judge, audit and design: run {run_ids[0]} has judge "
            f"{a.judge!r}, the audit of pool {a.audit.get('pool_id')}, design {a.design}; run {run_ids[1]} has judge "
            f"{b.judge!r}, the audit of pool {b.audit.get('pool_id')}, design {b.design}. Estimate both again with "
            "`goldenset bench run --estimate ppi --judge NAME` after the same `goldenset pool --audit N`"
        )
    va, vb = a.by_key(), b.by_key()
    out = []
    for m in metrics:
        if (row, m) not in va or (row, m) not in vb:
            raise UsageError(f"a run has no estimate of {m} on row {row!r}")
        out.append(estimate_difference(m, row, va[(row, m)], vb[(row, m)], a.design, lam))
    return out


def _needed(est: RunEstimates | None, run_id: str, judge: str | None) -> RunEstimates:
    if est is None:
        raise UsageError(
            f"run {run_id} has no prediction-powered estimate; make it with "
            "`goldenset bench run --estimate ppi --judge NAME`"
        )
    if judge is not None and est.judge != judge:
        raise UsageError(
            f"run {run_id} was estimated with judge {est.judge!r}, not {judge!r} (--judge); compare without "
            f"--judge, or estimate the run again with `goldenset bench run --estimate ppi --judge {judge}`"
        )
    return est
