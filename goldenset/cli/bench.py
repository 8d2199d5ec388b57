"""`goldenset bench`: run the benchmark, evaluate a TREC run, compare two runs, list runs.

Each command parses, calls one library function and prints. Errors are raised as
GoldensetError subclasses; goldenset.cli.app turns them into exit codes (1 error,
2 usage, 3 golden set too old, 4 component down, 5 comparison biased with --fail-on-bias).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from goldenset import hooks, settings
from goldenset.cli.options import DbOpt
from goldenset.cli.shared import command_group
from goldenset.settings import resolve_paths

app = command_group("bench", "Benchmark retrieval against the golden set: run, eval, compare, list.")

FloorOpt = Annotated[
    float | None,
    typer.Option(
        "--coverage-floor",
        help="BIASED when a run's judged@k is below this share (else GOLDENSET_COVERAGE_FLOOR, else 0.80).",
    ),
]
PpiLambdaOpt = Annotated[
    str,
    typer.Option(
        "--ppi-lambda",
        help="Weight of the judge's prediction: tuned (PPI++, lambda fitted on the audit and clipped to [0, 1]) "
        "or a fixed lambda in [0, 1] (1: classical PPI, 0: human-only).",
    ),
]
CorpusOpt = Annotated[
    str | None,
    typer.Option(
        "--corpus", help="Corpus snapshot the retriever searches (else GOLDENSET_CORPUS, else HOME/corpus.jsonl)."
    ),
]
MeasureOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--measure",
        help="A measure as ir_measures names it (nDCG@20, R@100, P(rel=2)@5), computed by trec_eval and "
        "stored beside the metrics; repeat for several.",
    ),
]
RunJsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print one JSON object instead of the tables: the run, every row's means, the estimate object.",
    ),
]


@app.command("run")
def run_cmd(
    db: DbOpt = None,
    corpus: CorpusOpt = None,
    retriever: Annotated[
        str, typer.Option(help="Retriever factory as module:factory.")
    ] = "goldenset.retrieval.reference:hybrid",
    retriever_config: Annotated[str | None, typer.Option(help="Options for the factory, a JSON object.")] = None,
    k: Annotated[
        list[int] | None,
        typer.Option("--k", help="Cut-off for recall/precision/noise/hole; repeat for several (default 5 and 24)."),
    ] = None,
    depth: Annotated[int | None, typer.Option(help="Documents asked per query (default max(100, largest k)).")] = None,
    exclude_stale: Annotated[
        bool, typer.Option("--exclude-stale", help="Leave stale labels out of the qrels.")
    ] = False,
    max_age_days: Annotated[float, typer.Option(help="Refuse (exit 3) a golden set built longer ago than this.")] = 30,
    allow_degraded: Annotated[
        bool,
        typer.Option(
            "--allow-degraded",
            help="Run even with a component of the retriever down (not all); the run is stamped DEGRADED.",
        ),
    ] = False,
    index_dir: Annotated[
        Path | None,
        typer.Option(help="Where the lexical index is cached (else GOLDENSET_BENCH_INDEX, else HOME/bench-index)."),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            help="Folder for report.md, the plot and TREC files (else GOLDENSET_REPORTS/RUN_ID, else HOME/reports/RUN_ID)."
        ),
    ] = None,
    coverage_floor: FloorOpt = None,
    estimate: Annotated[
        str | None,
        typer.Option(help="ppi: prediction-powered estimates beside the means, from the audit and --judge."),
    ] = None,
    judge: Annotated[
        str | None, typer.Option(help="Judge annotator whose labels fill the pairs humans left open (--estimate ppi).")
    ] = None,
    design: Annotated[
        str,
        typer.Option(
            "--design",
            help="finite (the golden queries are the population) or independent (ppi-python's "
            "ppi_mean_ci: an infinite population).",
        ),
    ] = "finite",
    ppi_lambda: PpiLambdaOpt = "tuned",
    measure: MeasureOpt = None,
    as_json: RunJsonOpt = False,
) -> None:
    """Gate, run the retriever on every golden query, store the run, print tables and the run_id."""
    from goldenset.bench.coverage import Thresholds
    from goldenset.bench.estimate import check_estimate
    from goldenset.bench.measures import parse_measures
    from goldenset.bench.ppi import check_design, check_lambda
    from goldenset.bench.report import console, print_run
    from goldenset.bench.runner import DEFAULT_K, BenchConfig
    from goldenset.bench.service import run_and_store
    from goldenset.retrieval.retriever import parse_retriever_config

    paths = resolve_paths(None, corpus, db)
    config = BenchConfig(
        estimate_judge=check_estimate(estimate, judge, tuning=(design, ppi_lambda)),
        estimate_design=check_design(design),
        estimate_lambda=check_lambda(ppi_lambda),
        retriever=retriever,
        retriever_config=parse_retriever_config(retriever_config, "--retriever-config"),
        k_values=tuple(k) if k else DEFAULT_K,
        depth=depth,
        exclude_stale=exclude_stale,
        max_age_days=max_age_days,
        allow_degraded=allow_degraded,
        index_dir=index_dir or settings.resolve("bench_index"),
        coverage_floor=Thresholds(floor=settings.coverage_floor(coverage_floor)).floor,
        measures=tuple(parse_measures(measure or [])),
    )
    # A run of the retrieval_benchmark_job when the Dagster program runs this command (goldenset.hooks).
    result = hooks.perform(
        "bench_run", lambda: run_and_store(paths.db, paths.corpus, config, report_dir=report), db=paths.db
    )
    if as_json:
        typer.echo(json.dumps(result.run.to_json() | {"report": str(result.report) if result.report else None}))
    else:
        print_run(console(), result.run, result.report)


@app.command("eval")
def eval_cmd(
    run: Annotated[Path, typer.Option("--run", help="TREC run file: query_id Q0 doc_id rank score tag.")],
    qrels: Annotated[
        Path | None,
        typer.Option(
            "--qrels",
            help="TREC qrels file, or BEIR qrels/test.tsv as `goldenset export` writes it (default: the current golden set).",
        ),
    ] = None,
    db: DbOpt = None,
    exclude_stale: Annotated[
        bool, typer.Option("--exclude-stale", help="With the golden set as qrels: leave stale labels out.")
    ] = False,
    complete: Annotated[
        bool,
        typer.Option(
            "--complete", help="Average over every qrels query; one missing from the run scores 0 (trec_eval -c)."
        ),
    ] = False,
    k: Annotated[
        list[int] | None,
        typer.Option(
            "--k",
            help="Cut-off for recall/precision/noise/hole; repeat for several (default recall 5, 10, 24; precision 5, 10).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object of the trec_eval-pinned metrics.")
    ] = False,
) -> None:
    """Evaluate a TREC run file against TREC or BEIR qrels with trec_eval's conventions."""
    from goldenset.bench.metrics import QueryPolicy
    from goldenset.bench.report import console, eval_table
    from goldenset.bench.service import evaluate_run_file

    policy = QueryPolicy.COMPLETE if complete else QueryPolicy.TREC_EVAL
    result = evaluate_run_file(
        run, qrels, resolve_paths(None, None, db).db, exclude_stale=exclude_stale, policy=policy, k_values=k
    )
    if as_json:
        typer.echo(json.dumps({m: round(result.means[m], 4) for m in result.json_metrics}))
        return
    out = console()
    out.print(f"{run} against {result.qrels_source}: {result.n_queries} queries", markup=False, highlight=False)
    out.print(eval_table(result.means))
    for note in result.notes():
        out.print(note, markup=False, highlight=False)
    out.print(result.policy, markup=False, highlight=False)


# The family form of `bench compare` (contract 16).
BaselineOpt = Annotated[
    str | None,
    typer.Option(help="Compare every other run against this one only (it is run a; added when not named)."),
]
TestOpt = Annotated[
    str | None,
    typer.Option("--test", help="t (Student's paired t, the default) or randomization (Fisher's, paired sign flips)."),
]
CorrectionOpt = Annotated[
    str | None,
    typer.Option(help="holm (the default), bonferroni or none: over every pair x deciding metric of the command."),
]
PermutationsOpt = Annotated[int | None, typer.Option(help="Sign flips of the randomization test (default 10000).")]
MaxGapOpt = Annotated[
    float | None,
    typer.Option(
        "--coverage-max-gap",
        help="BIASED when the runs' judged@k differ by more than this (else GOLDENSET_COVERAGE_MAX_GAP, else 0.10).",
    ),
]


@app.command("compare")
def compare_cmd(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Run ids. Two (A B): B against A, differences B - A. Three or more (or --test, --correction, "
            "--baseline): every pair, corrected for multiple testing (contract 16).",
            metavar="RUN",
            show_default=False,
        ),
    ],
    db: DbOpt = None,
    row: Annotated[str, typer.Option(help="Row to compare (core decides).")] = "core",
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help="Metric or named measure to compare; repeat for several (default: all both runs have; with more "
            "runs, every deciding metric all of them have).",
        ),
    ] = None,
    bootstrap: Annotated[
        int | None, typer.Option(help="Use a paired bootstrap with this many resamples instead of Student's t.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap or of the randomization test.")] = 0,
    baseline: BaselineOpt = None,
    test: TestOpt = None,
    correction: CorrectionOpt = None,
    permutations: PermutationsOpt = None,
    report: Annotated[
        Path | None, typer.Option(help="Write report.md, report.html and the plot into this folder.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of the table.")] = False,
    coverage_max_gap: MaxGapOpt = None,
    coverage_floor: FloorOpt = None,
    fail_on_bias: Annotated[
        bool, typer.Option("--fail-on-bias", help="Exit 5 when the comparison is BIASED (after printing it).")
    ] = False,
    rescore: Annotated[
        bool,
        typer.Option(
            "--rescore",
            help="Measure both runs' deciding rows again from their stored rankings against the current "
            "golden set (labels added since count; the retrievers are not run again).",
        ),
    ] = False,
    estimate: Annotated[
        str | None,
        typer.Option(help="ppi: add the prediction-powered difference (both runs made with --estimate ppi)."),
    ] = None,
    judge: Annotated[str | None, typer.Option(help="Require both runs' estimates to use this judge.")] = None,
    ppi_lambda: PpiLambdaOpt = "tuned",
) -> None:
    """Pair two runs query by query: mean difference, 95% CI, verdict per metric; BIASED first when
    the verdicts rest on documents the golden set never judged. More runs: every pair, corrected."""
    from goldenset.bench.coverage import Thresholds
    from goldenset.errors import ComparisonBiased

    thresholds = Thresholds(settings.coverage_max_gap(coverage_max_gap), settings.coverage_floor(coverage_floor))
    family = len(runs) != 2 or any(o is not None for o in (baseline, test, correction, permutations))
    if family:
        biased = _compare_many(
            runs,
            resolve_paths(None, None, db).db,
            row=row,
            metrics=metric,
            baseline=baseline,
            test=test,
            correction=correction,
            permutations=permutations,
            seed=seed,
            report=report,
            as_json=as_json,
            thresholds=thresholds,
            rescore=rescore,
            refused={
                "--bootstrap": bootstrap is not None,
                "--estimate": estimate is not None or judge is not None or ppi_lambda != "tuned",
            },
        )
    else:
        biased = _compare_two(
            runs[0],
            runs[1],
            resolve_paths(None, None, db).db,
            row=row,
            metrics=metric,
            bootstrap=bootstrap,
            seed=seed,
            report=report,
            as_json=as_json,
            thresholds=thresholds,
            rescore=rescore,
            estimate=estimate,
            judge=judge,
            ppi_lambda=ppi_lambda,
        )
    if fail_on_bias and biased:
        raise ComparisonBiased(biased)


def _compare_two(
    run_a: str, run_b: str, db: Path, *, as_json: bool, estimate, judge, ppi_lambda, report, **options
) -> str | None:
    """`bench compare A B` as it always was; the --fail-on-bias message when BIASED, else None."""
    from dataclasses import asdict

    from goldenset.bench.estimate import check_compare_estimate
    from goldenset.bench.ppi import check_lambda
    from goldenset.bench.report import console, print_comparison
    from goldenset.bench.service import compare_stored

    comp, md = compare_stored(
        db,
        run_a,
        run_b,
        report_dir=report,
        estimate=check_compare_estimate(estimate, judge, ppi_lambda),
        judge=judge,
        ppi_lambda=check_lambda(ppi_lambda),
        **options,
    )
    if as_json:
        runs = {"a_run": asdict(comp.sides[0]), "b_run": asdict(comp.sides[1])} if comp.sides else {}
        check = comp.coverage
        typer.echo(
            json.dumps(
                {
                    "a": comp.a,
                    "b": comp.b,
                    "row": comp.row,
                    "warnings": comp.warnings,
                    "degraded": comp.degraded,
                    **runs,
                    "config_differences": comp.config_differences,
                    "coverage": check.coverage if check else {"a": {}, "b": {}},
                    "coverage_warning": check.warning if check else None,
                    "biased": comp.biased,
                    "metrics": [{**asdict(p), "incomplete_judgments": comp.incomplete(p.metric)} for p in comp.results],
                    **({"estimates": [e.to_json() for e in comp.estimates]} if comp.estimates else {}),
                }
            )
        )
    else:
        print_comparison(console(), comp, md)
    if comp.biased:
        return f"comparison of {comp.b} against {comp.a} is BIASED by unjudged documents (--fail-on-bias)"
    return None


def _compare_many(
    runs: list[str],
    db: Path,
    *,
    as_json: bool,
    refused: dict[str, bool],
    report: Path | None,
    test: str | None,
    correction: str | None,
    permutations: int | None,
    **options,
) -> str | None:
    """`bench compare` of a family (contract 16); the --fail-on-bias message when a pair is BIASED, else None."""
    from goldenset.bench import significance as sig
    from goldenset.bench.report import console
    from goldenset.bench.report_many import many_json, print_many
    from goldenset.bench.service import compare_many_stored
    from goldenset.errors import UsageError

    if refused["--bootstrap"]:
        raise UsageError(
            "--bootstrap compares two runs; with more runs (or --test, --correction, --baseline) the tests are "
            "--test t or --test randomization"
        )
    if refused["--estimate"]:
        raise UsageError(
            "--estimate ppi compares two runs: its intervals are not corrected for a family of comparisons; "
            "compare two runs at a time with --estimate ppi, or leave it out"
        )
    test = sig.check_test(test or sig.DEFAULT_TEST)
    if permutations is not None and test != "randomization":
        raise UsageError(
            f"--permutations {permutations} is for --test randomization; add it or leave --permutations out"
        )
    comp, md = compare_many_stored(
        db,
        runs,
        report_dir=report,
        test=test,
        correction=sig.check_correction(correction or sig.DEFAULT_CORRECTION),
        permutations=sig.check_permutations(permutations if permutations is not None else sig.DEFAULT_PERMUTATIONS),
        **options,
    )
    if as_json:
        typer.echo(json.dumps(many_json(comp)))
    else:
        print_many(console(), comp, md)
    if comp.biased:
        pairs = len(comp.coverage.biased_pairs)
        return f"{pairs} comparison(s) of {len(comp.runs)} runs are BIASED by unjudged documents (--fail-on-bias)"
    return None


@app.command("list")
def list_cmd(
    db: DbOpt = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print a JSON list: every run with its full retriever config and deciding-row means."
        ),
    ] = False,
    wait: Annotated[
        float | None,
        typer.Option(
            "--wait",
            help="Seconds to wait for another process writing the DuckDB file (else GOLDENSET_LOCK_TIMEOUT, else 30).",
        ),
    ] = None,
) -> None:
    """List stored benchmark runs, newest first: retriever and config, deciding row's recall and nDCG, and the
    means of its named measures (bench run --measure)."""
    from rich.table import Table

    from goldenset.bench.report import console, fmt
    from goldenset.bench.service import stored_runs

    runs = stored_runs(resolve_paths(None, None, db).db, wait=wait)
    if as_json:
        typer.echo(json.dumps([{**r, "started_at": r["started_at"].isoformat()} for r in runs]))
        return
    t = Table(title=f"{len(runs)} benchmark run(s)", title_justify="left")
    for col in (
        "run_id",
        "started (UTC)",
        "build",
        "queries",
        "retriever and config",
        "degraded",
        "ndcg@10",
        "recall@5",
        "named measures",
    ):
        t.add_column(col)
    for r in runs:
        t.add_row(
            r["run_id"],
            f"{r['started_at']:%Y-%m-%d %H:%M}",
            str(r["build_id"]),
            str(r["n_queries"]),
            r["config"],
            "DEGRADED" if r["degraded"] else "",
            fmt(r["means"].get("ndcg@10")),
            fmt(r["means"].get("recall@5")),
            ", ".join(f"{m} {fmt(r['means'].get(m))}" for m in r["measures"]),
        )
    console().print(t)
