"""The benchmark's entry points over paths: open the warehouse, call the library, write reports.

The CLI commands and the Dagster asset call these and only print or attach the
result, so both behave the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Sequence

from goldenset import warehouse
from goldenset.bench import golden, metrics as M, trec
from goldenset.bench.compare import Comparison, compare_rows, compare_runs
from goldenset.bench.report import write_comparison_report, write_run_report
from goldenset.bench.runner import BenchConfig, run_benchmark
from goldenset.bench.runs import BenchmarkRun, list_runs, load_run, store_run
from goldenset.corpus import read_corpus
from goldenset.embeddings import Embedder
from goldenset.errors import InputError, NoBuild

EVAL_TABLE_METRICS = M.EVAL_METRICS + ("noise@5", "noise@10", "hole@5", "hole@10")
EVAL_POLICY = (
    "Averaged over queries that are in the run and have at least one relevant document (relevance >= 1), "
    "as trec_eval does without -c; ranks re-derived from scores (ties: larger doc_id first)."
)


@dataclass
class RunResult:
    """A stored run, its comparisons against core and where its report went."""

    run: BenchmarkRun
    comparisons: list[Comparison]
    report: Path | None
    files: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class EvalResult:
    means: dict[str, float]
    n_queries: int
    qrels_source: str
    policy: str = EVAL_POLICY
    json_metrics: tuple[str, ...] = M.EVAL_METRICS


def _require_db(db: Path) -> None:
    if not Path(db).exists():
        raise NoBuild(f"no warehouse at {db}: run `goldenset build` first")


def run_and_store(db: Path, corpus_path: Path, config: BenchConfig, *, report_dir: Path | None = None,
                  embedder: Embedder | None = None, now: datetime | None = None) -> RunResult:
    """Read the corpus, gate and run the benchmark, store it in one transaction, write its report."""
    _require_db(db)
    corpus = read_corpus(corpus_path)
    con = warehouse.connect(db)
    try:
        run = run_benchmark(con, corpus, embedder or Embedder(), config, now=now)
        store_run(con, run)
        qrels = golden.load_qrels(con, config.exclude_stale).qrels
    finally:
        con.close()
    comps = compare_rows(run)
    out = Path(report_dir) if report_dir else Path(db).parent / "reports" / run.run_id
    md = write_run_report(run, comps, out)
    files = [md, out / "differences.png"]
    for row, lists in run.ranked.items():
        slug = row.strip("+").replace("+", "-").replace(" ", "-")
        files.append(trec.write_run(out / f"{slug}.run", lists, f"{run.run_id}_{slug}"))
    files.append(trec.write_qrels(out / "qrels.trec", qrels))
    return RunResult(run, comps, md, files)


def evaluate_run_file(run_path: Path, qrels_path: Path | None, db: Path, *,
                      exclude_stale: bool = False) -> EvalResult:
    """Evaluate a TREC run file against qrels (a TREC file, else the current golden set)."""
    run = trec.ranked_lists(trec.read_run(run_path))
    if qrels_path is not None:
        qrels, source = trec.read_qrels(qrels_path), str(qrels_path)
    else:
        _require_db(db)
        con = warehouse.connect(db, read_only=True)
        try:
            build = golden.latest_build(con)
            qrels = golden.load_qrels(con, exclude_stale).qrels
        finally:
            con.close()
        source = f"golden build {build.build_id}"
    metrics = [M.get_metric(m) for m in EVAL_TABLE_METRICS]
    per_query = M.evaluate(run, qrels, metrics)
    if not per_query:
        raise InputError(
            f"no query of run {run_path} has a relevant document in {source}: check that the query ids match"
        )
    return EvalResult(M.mean_over_queries(per_query, [m.name for m in metrics]), len(per_query), source)


def compare_stored(db: Path, run_a: str, run_b: str, *, row: str = "core", metrics: Sequence[str] | None = None,
                   bootstrap: int | None = None, seed: int = 0,
                   report_dir: Path | None = None) -> tuple[Comparison, Path | None]:
    """Load two stored runs and compare B against A; write a report when report_dir is given."""
    _require_db(db)
    con = warehouse.connect(db, read_only=True)
    try:
        a, b = load_run(con, run_a), load_run(con, run_b)
    finally:
        con.close()
    comp = compare_runs(a, b, row=row, metrics=metrics, bootstrap=bootstrap, seed=seed)
    md = write_comparison_report(comp, report_dir) if report_dir else None
    return comp, md


def stored_runs(db: Path) -> list[dict]:
    """Every stored run, newest first."""
    _require_db(db)
    con = warehouse.connect(db, read_only=True)
    try:
        return list_runs(con)
    finally:
        con.close()
