"""The benchmark's entry points over paths: open the warehouse, call the library, write reports.

The CLI commands and the Dagster asset call these and only print or attach the
result, so both behave the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from goldenset import settings, warehouse
from goldenset.bench import golden, trec
from goldenset.bench import metrics as M
from goldenset.bench.compare import Comparison, compare_rows, compare_runs
from goldenset.bench.compare_many import ManyComparison, compare_many, order_runs
from goldenset.bench.coverage import Thresholds
from goldenset.bench.report import write_comparison_report, write_run_report
from goldenset.bench.runner import BenchConfig, run_benchmark
from goldenset.bench.runs import BenchmarkRun, list_runs, load_run, store_run
from goldenset.bench.runs import rescore as rescore_run
from goldenset.corpus import read_corpus
from goldenset.embeddings import Embedder
from goldenset.errors import InputError

EVAL_TABLE_METRICS = M.EVAL_METRICS + ("noise@5", "noise@10", "hole@5", "hole@10")
EVAL_POLICIES = {
    M.QueryPolicy.TREC_EVAL: (
        "Averaged over the queries in both the run and the qrels, as trec_eval does without -c: a query judged "
        "with no relevant document (relevance >= 1) counts and scores 0; qrels queries missing from the run are "
        "ignored. Ranks re-derived from scores (ties: larger doc_id first)."
    ),
    M.QueryPolicy.COMPLETE: (
        "Averaged over every query of the qrels, as trec_eval -c does: a query missing from the run scores 0, "
        "as does one judged with no relevant document (relevance >= 1). Ranks re-derived from scores "
        "(ties: larger doc_id first)."
    ),
    M.QueryPolicy.SKIP_NO_RELEVANT: (
        "Averaged over the queries in both the run and the qrels that have a relevant document (relevance >= 1), "
        "as `bench run` does. Ranks re-derived from scores (ties: larger doc_id first)."
    ),
}
EVAL_POLICY = EVAL_POLICIES[M.QueryPolicy.TREC_EVAL]


@dataclass
class RunResult:
    """A stored run, its comparisons against core and where its report went."""

    run: BenchmarkRun
    comparisons: list[Comparison]
    report: Path | None
    files: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class EvalResult:
    """Means of a run file against qrels, the queries they were taken over, and the policy that chose them."""

    means: dict[str, float]
    n_queries: int
    qrels_source: str
    policy: str = EVAL_POLICY
    json_metrics: tuple[str, ...] = M.EVAL_METRICS
    selection: M.QuerySelection | None = None
    query_policy: M.QueryPolicy = M.QueryPolicy.TREC_EVAL

    def notes(self) -> list[str]:
        """One line per kind of query that was not averaged as usual, with its count."""
        sel = self.selection
        if sel is None:
            return []
        out = []
        if sel.no_relevant:
            out.append(
                f"{len(sel.no_relevant)} query(ies) judged with no relevant document: averaged in, "
                "0 on every trec_eval metric"
            )
        if sel.skipped_no_relevant:
            out.append(f"{len(sel.skipped_no_relevant)} query(ies) skipped: no relevant document")
        if sel.missing_from_run:
            scored = "scored 0 (--complete)" if self.query_policy is M.QueryPolicy.COMPLETE else "ignored"
            out.append(f"{len(sel.missing_from_run)} qrels query(ies) missing from the run, {scored}")
        if sel.not_in_qrels:
            out.append(f"{len(sel.not_in_qrels)} run query(ies) not in the qrels, ignored")
        return out


def _require_db(db: Path) -> None:
    if not Path(db).exists():
        raise warehouse.missing_warehouse(Path(db))


def run_and_store(
    db: Path,
    corpus_path: Path,
    config: BenchConfig,
    *,
    report_dir: Path | None = None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
) -> RunResult:
    """Read the corpus, gate and run the benchmark, store it in one transaction, write its report."""
    _require_db(db)
    corpus = read_corpus(corpus_path)
    con = warehouse.connect(db, wait=settings.lock_timeout())
    try:
        run = run_benchmark(con, corpus, embedder or Embedder(), config, now=now)
        store_run(con, run)
        qrels = golden.load_qrels(con, config.exclude_stale).qrels
    finally:
        con.close()
    comps = compare_rows(run)
    out = Path(report_dir) if report_dir else settings.resolve("reports") / run.run_id
    md = write_run_report(run, comps, out)
    files = [md, md.with_suffix(".html"), out / "differences.png"]
    for row, lists in run.ranked.items():
        slug = row.strip("+").replace("+", "-").replace(" ", "-")
        files.append(trec.write_run(out / f"{slug}.run", lists, f"{run.run_id}_{slug}"))
    files.append(trec.write_qrels(out / "qrels.trec", qrels))
    return RunResult(run, comps, md, files)


def evaluate_run_file(
    run_path: Path,
    qrels_path: Path | None,
    db: Path,
    *,
    exclude_stale: bool = False,
    policy: M.QueryPolicy = M.QueryPolicy.TREC_EVAL,
    k_values: Sequence[int] | None = None,
) -> EvalResult:
    """Evaluate a TREC run file against qrels (a TREC or BEIR file, else the current golden set).

    `policy` chooses the queries averaged over (metrics.py, "Query policy"); `k_values`
    replaces the cut-offs of recall, precision, noise and hole (default EVAL_TABLE_METRICS).
    """
    policy = M.QueryPolicy(policy)
    json_names = M.eval_metric_names(k_values)
    table_names: tuple[str, ...] = EVAL_TABLE_METRICS
    if k_values:
        ks = M.check_cutoffs(k_values)
        table_names = (*json_names, *(f"{fam}@{k}" for fam in ("noise", "hole") for k in ks))
    run = trec.ranked_lists(trec.read_run(run_path))
    if qrels_path is not None:
        qrels, source = trec.read_qrels(qrels_path), str(qrels_path)
    else:
        _require_db(db)
        con = warehouse.connect(db, read_only=True, wait=settings.lock_timeout())
        try:
            build = golden.latest_build(con)
            qrels = golden.load_qrels(con, exclude_stale).qrels
        finally:
            con.close()
        source = f"golden build {build.build_id}"
    selection = M.select_queries(run, qrels, policy)
    if not set(selection.evaluated) & set(run):
        # trec_eval 9 stops here too, with -c or without ("No queries with both results and relevance
        # info"); 10 -c prints zeros. A run sharing no query with its qrels is a mix-up, not a score.
        if policy is M.QueryPolicy.SKIP_NO_RELEVANT:
            raise InputError(
                f"no query of run {run_path} has a relevant document in {source}: check that the query ids match"
            )
        raise InputError(
            f"no query of run {run_path} appears in {source}, so none has a relevant document "
            "to score: check that the query ids match"
        )
    metrics = [M.get_metric(m) for m in table_names]
    per_query = M.evaluate(run, qrels, metrics, policy=policy)
    return EvalResult(
        M.mean_over_queries(per_query, [m.name for m in metrics]),
        len(per_query),
        source,
        EVAL_POLICIES[policy],
        json_names,
        selection,
        policy,
    )


def compare_stored(
    db: Path,
    run_a: str,
    run_b: str,
    *,
    row: str = "core",
    metrics: Sequence[str] | None = None,
    bootstrap: int | None = None,
    seed: int = 0,
    report_dir: Path | None = None,
    thresholds: Thresholds | None = None,
    rescore: bool = False,
    estimate: str | None = None,
    judge: str | None = None,
    ppi_lambda: float | None = None,
) -> tuple[Comparison, Path | None]:
    """Load two stored runs and compare B against A; write a report when report_dir is given.

    `rescore` measures both deciding rows again from their stored rankings against the
    current golden set (runs.rescore), so labels added since show without a new `bench run`.
    """
    _require_db(db)
    con = warehouse.connect(db, read_only=True, wait=settings.lock_timeout())
    try:
        a, b = load_run(con, run_a), load_run(con, run_b)
        if rescore:
            a, b = rescore_run(con, a), rescore_run(con, b)
    finally:
        con.close()
    comp = compare_runs(
        a,
        b,
        row=row,
        metrics=metrics,
        bootstrap=bootstrap,
        seed=seed,
        thresholds=thresholds,
        estimate=estimate,
        judge=judge,
        ppi_lambda=ppi_lambda,
    )
    md = write_comparison_report(comp, report_dir) if report_dir else None
    return comp, md


def compare_many_stored(
    db: Path,
    run_ids: Sequence[str],
    *,
    baseline: str | None = None,
    report_dir: Path | None = None,
    rescore: bool = False,
    **options: Any,
) -> tuple[ManyComparison, Path | None]:
    """Load the runs (the baseline first when not among them) and compare them all (contract 16).

    `options` are compare_many's (row, metrics, test, correction, permutations, seed, thresholds).
    """
    from goldenset.bench.report_many import write_many_report

    ids = order_runs(run_ids, baseline)
    _require_db(db)
    con = warehouse.connect(db, read_only=True, wait=settings.lock_timeout())
    try:
        runs = [load_run(con, r) for r in ids]
        if rescore:
            runs = [rescore_run(con, r) for r in runs]
    finally:
        con.close()
    comp = compare_many(runs, baseline=baseline, **options)
    md = write_many_report(comp, report_dir) if report_dir else None
    return comp, md


def stored_runs(db: Path, wait: float | None = None) -> list[dict]:
    """Every stored run, newest first (waiting up to `wait` s, else GOLDENSET_LOCK_TIMEOUT, for a writer)."""
    _require_db(db)
    con = warehouse.connect(db, read_only=True, wait=settings.lock_timeout(wait))
    try:
        return list_runs(con)
    finally:
        con.close()
