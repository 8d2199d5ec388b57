"""The retrieval benchmark as an asset: gated by blocking checks, every run stored in DuckDB."""

import base64
import math
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from goldenset import settings
from goldenset.bench import golden
from goldenset.bench.gates import MAX_AGE_DAYS
from goldenset.bench.ppi import check_design, check_lambda
from goldenset.bench.runner import DEFAULT_K, BenchConfig
from goldenset.bench.runs import DECIDING_ROW, BenchmarkRun
from goldenset.clock import utcnow
from goldenset.errors import ComponentDown, GoldenSetTooOld, UsageError
from goldenset.retrieval.retriever import REFERENCE
from goldenset_dagster.commands import handed_over
from goldenset_dagster.resources import CorpusSource, WarehouseResource
from goldenset_dagster.resources.embedder import EmbedderResource

AGE_CHECK = "golden_set_fresh"
COMPONENTS_CHECK = "retrieval_components_up"


class BenchmarkConfig(dg.Config):
    """What `goldenset bench run` takes, as run config."""

    retriever: str = Field(default=REFERENCE, description="Retriever factory as module:factory.")
    retriever_config: str = Field(default="", description="Options for the factory, a JSON object.")
    k_values: list[int] = Field(default=list(DEFAULT_K), description="Cut-offs of recall/precision/noise/hole.")
    depth: int | None = Field(default=None, description="Documents asked per query (default max(100, largest k)).")
    exclude_stale: bool = Field(default=False, description="Leave stale labels out of the qrels.")
    max_age_days: float = Field(default=MAX_AGE_DAYS, description="Refuse a golden set built longer ago than this.")
    allow_degraded: bool = Field(
        default=False, description="Run with a retriever component down; the run is stamped DEGRADED."
    )
    index_dir: str = Field(default="", description="Lexical index cache; empty: GOLDENSET_HOME/bench-index.")
    report_dir: str = Field(default="", description="Report folder; empty: GOLDENSET_HOME/reports/RUN_ID.")
    estimate_judge: str = Field(
        default="",
        description="Judge annotator for prediction-powered estimates beside the means (bench run --estimate ppi "
        "--judge NAME); empty: none.",
    )
    estimate_design: str = Field(default="finite", description="finite or independent (bench run --design).")
    estimate_lambda: str = Field(
        default="tuned", description="tuned (PPI++) or a fixed lambda in [0, 1] (bench run --ppi-lambda)."
    )
    measures: list[str] = Field(
        default=[],
        description="Named measures as ir_measures writes them (bench run --measure), e.g. nDCG@20, R@100.",
    )


def _age_days(warehouse: WarehouseResource) -> float:
    con = warehouse.connect()
    try:
        build = golden.latest_build(con)
    finally:
        con.close()
    return (utcnow() - build.built_at).total_seconds() / 86400


def _options(text: str) -> dict:
    # Same rule as the CLI's --retriever-config: empty, or a JSON object.
    from goldenset.retrieval.retriever import parse_retriever_config

    return parse_retriever_config(text, "retriever_config")


def _inline_plot(markdown: str, report: Path) -> str:
    # The UI cannot follow a relative image path, so the plot travels inside the Markdown.
    png = report.parent / "differences.png"
    if not png.exists():
        return markdown
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return markdown.replace("](differences.png)", f"](data:image/png;base64,{data})")


def _run(config: BenchmarkConfig, db: Path, corpus_source: CorpusSource, embedder: EmbedderResource):
    """Run and store the benchmark the run config asks for."""
    bench = BenchConfig(
        retriever=config.retriever,
        retriever_config=_options(config.retriever_config),
        k_values=tuple(config.k_values),
        depth=config.depth,
        exclude_stale=config.exclude_stale,
        max_age_days=config.max_age_days,
        allow_degraded=config.allow_degraded,
        index_dir=Path(config.index_dir) if config.index_dir else settings.resolve("bench_index"),
        # The fifth gate's floor, as `bench run` reads it (GOLDENSET_COVERAGE_FLOOR, else 0.80).
        coverage_floor=settings.coverage_floor(),
        estimate_judge=config.estimate_judge or None,
        estimate_design=check_design(config.estimate_design),
        estimate_lambda=check_lambda(config.estimate_lambda),
        measures=tuple(config.measures),
    )
    # Imported here: the benchmark's statistics (scipy) cost a second at every load of the location.
    from goldenset.bench.service import run_and_store

    return run_and_store(
        db,
        Path(corpus_source.path),
        bench,
        report_dir=Path(config.report_dir) if config.report_dir else None,
        embedder=embedder.get_embedder(),
    )


@dg.asset(
    deps=[dg.AssetKey("golden_set")],
    pool="duckdb",
    group_name="benchmark",
    kinds={"duckdb", "python"},
    check_specs=[
        dg.AssetCheckSpec(
            AGE_CHECK,
            asset="retrieval_benchmark",
            blocking=True,
            description="The golden set was built no more than max_age_days ago (else exit 3).",
        ),
        dg.AssetCheckSpec(
            COMPONENTS_CHECK,
            asset="retrieval_benchmark",
            blocking=True,
            description="Every component of the retriever under test (its components(): lexical "
            "and dense for the reference) answers its probe query (else exit 4). Graph "
            "and boosts are learned reference features, not components: when they "
            "have nothing to learn from their rows are left out with a warning.",
        ),
    ],
)
def retrieval_benchmark(
    context: dg.AssetExecutionContext,
    config: BenchmarkConfig,
    warehouse: WarehouseResource,
    corpus_source: CorpusSource,
    embedder: EmbedderResource,
):
    """Measure the retriever against the current golden set; `core` decides, the other rows inform.

    Refuses (a failed blocking check, no materialization, no retry: the refusal would
    repeat) when the golden set is too old or a component of the retriever is down,
    unless allow_degraded, which stamps the run DEGRADED. Graph and boosts never
    refuse: a reference row they cannot feed is left out and the run says why.
    """
    db = Path(warehouse.db_path)
    handoff = handed_over("bench_run")
    said = handoff.details if handoff is not None else {}
    max_age, retriever = said.get("max_age_days", config.max_age_days), said.get("retriever", config.retriever)
    expected_age = dg.MetadataValue.text(f"<= {max_age:g} days")
    try:
        if handoff is not None:  # `goldenset bench run` with its own options
            result = handoff.work()
        else:
            result = _run(config, db, corpus_source, embedder)
    except UsageError as exc:
        # Wrong run config (retriever path, options, k, depth): a retry would fail the same way.
        raise dg.Failure(description=str(exc), allow_retries=False) from exc
    except GoldenSetTooOld as exc:
        yield dg.AssetCheckResult(
            check_name=AGE_CHECK,
            passed=False,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "expected": expected_age,
                "actual": dg.MetadataValue.text(f"{_age_days(warehouse):.2f} days"),
                "reason": dg.MetadataValue.text(str(exc)),
            },
        )
        raise dg.Failure(description=str(exc), allow_retries=False) from exc
    except ComponentDown as exc:
        yield dg.AssetCheckResult(check_name=AGE_CHECK, passed=True, metadata={"expected": expected_age})
        yield dg.AssetCheckResult(
            check_name=COMPONENTS_CHECK,
            passed=False,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "expected": dg.MetadataValue.text("every component of the retriever returns a hit for its probe"),
                "actual": dg.MetadataValue.text(str(exc)),
                "retriever": dg.MetadataValue.text(retriever),
            },
        )
        raise dg.Failure(description=str(exc), allow_retries=False) from exc

    run = result.run
    checks = [
        dg.AssetCheckResult(
            check_name=AGE_CHECK,
            passed=True,
            metadata={
                "expected": expected_age,
                "actual": dg.MetadataValue.text(f"{_age_days(warehouse):.2f} days"),
                "build_id": dg.MetadataValue.text(str(run.build_id)),
            },
        ),
        dg.AssetCheckResult(
            check_name=COMPONENTS_CHECK,
            passed=not run.degraded,
            # allow_degraded: the run is kept but the check still says what was down.
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "expected": dg.MetadataValue.text("no component of the retriever down"),
                "actual": dg.MetadataValue.text(", ".join(run.down_components) or "none down"),
                "retriever": dg.MetadataValue.text(run.config_summary),
            },
        ),
    ]
    markdown = result.report.read_text(encoding="utf-8") if result.report else ""
    # The checks travel with the run they judged (emitted before it, they would attach to the previous run).
    yield dg.MaterializeResult(metadata=materialization_metadata(run, markdown, result.report), check_results=checks)


def materialization_metadata(run: BenchmarkRun, markdown: str, report: Path | None) -> dict[str, Any]:
    """What the UI shows for a run: provenance, retriever and config, rounded means, the report."""
    table = (
        "| metric | "
        + " | ".join(run.rows)
        + " |\n| --- |"
        + " ---: |" * len(run.rows)
        + "\n"
        + "\n".join(
            f"| {m} | " + " | ".join(f"{run.means(r)[m]:.4f}" for r in run.rows) + " |" for m in run.metric_names
        )
    )
    meta: dict[str, Any] = {
        "run_id": run.run_id,
        "retriever": dg.MetadataValue.text(run.config_summary),
        "retriever_config": dg.MetadataValue.json(run.retriever_config),
        "build_id": run.build_id,
        "labels_build_id": run.labels_build_id if run.labels_build_id is not None else dg.MetadataValue.null(),
        "degraded": run.degraded,
        "rows": dg.MetadataValue.json(run.rows),
        "n_queries": run.n_queries,
        "skipped_queries": run.skipped_queries or 0,
        "corpus_fingerprint": dg.MetadataValue.text(run.corpus_fingerprint[:16]),
        "corpus_drift": dg.MetadataValue.float(_round(run.corpus_drift)),
        "warnings": dg.MetadataValue.json(run_warnings(run)),
        "stale_labels": run.stale_labels or 0,
        "notes": dg.MetadataValue.md("\n".join(f"- {n}" for n in run.notes) or "No notes."),
        # The fifth gate: judged@k of every row, and the BIASED lines when the deciding row is below the floor.
        "coverage": dg.MetadataValue.json(
            {r: {m: _round(v) for m, v in run.means(r).items() if m.startswith("judged@")} for r in run.rows}
        ),
        "coverage_warning": dg.MetadataValue.text("\n".join(run.coverage_warnings)),
        "metrics": dg.MetadataValue.md(table),
        "report": dg.MetadataValue.md(_inline_plot(markdown, report) if report else ""),
    }
    if report is not None:
        meta["report_path"] = dg.MetadataValue.path(str(report))
    if run.estimates is not None:
        meta["estimate"] = dg.MetadataValue.json(run.estimates.to_json())
    meta.update({f"core/{m}": dg.MetadataValue.float(_round(v)) for m, v in run.means(DECIDING_ROW).items()})
    return meta


def run_warnings(run: BenchmarkRun) -> list[str]:
    """The run's warnings, plus the stale labels measured when any were: the report notes them, the UI warns."""
    out = list(run.warnings)
    if run.stale_labels and not run.exclude_stale:
        out.append(
            f"WARNING: {run.stale_labels} stale label(s) included in the qrels: their documents moved on since "
            "they were judged (exclude_stale leaves them out; the relabel queue lists them)"
        )
    return out


def _round(x: float | None) -> float:
    # Four decimals as every table prints them; a float's repr (0.30158730158730157) is noise in the UI.
    return round(float(x), 4) if x is not None and math.isfinite(x) else float("nan")


BENCHMARK_ASSETS = [retrieval_benchmark]
BENCHMARK_CHECK_NAMES = (AGE_CHECK, COMPONENTS_CHECK)
benchmark_job = dg.define_asset_job(
    "retrieval_benchmark_job",
    selection=[retrieval_benchmark],
    description="Gate and measure a retriever against the current golden set, store the run and its report "
    "(and the runs of `goldenset bench run`, with the command's options). Not nightly: run it when a retriever "
    "changes.",
)
BENCHMARK_JOBS = [benchmark_job]
