"""The retrieval benchmark as an asset: gated by blocking checks, every run stored in DuckDB."""

import base64
from pathlib import Path

import dagster as dg
from pydantic import Field

from goldenset import settings

from goldenset.bench import golden
from goldenset.bench.gates import utcnow
from goldenset.bench.retriever import REFERENCE
from goldenset.bench.runner import DEFAULT_K, BenchConfig
from goldenset.bench.runs import DECIDING_ROW
from goldenset.bench.service import run_and_store
from goldenset.errors import ComponentDown, GoldenSetTooOld
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
    max_age_days: float = Field(default=30, description="Refuse a golden set built longer ago than this.")
    allow_degraded: bool = Field(default=False, description="Run with a retriever component down; "
                                                            "the run is stamped DEGRADED.")
    index_dir: str = Field(default="", description="Lexical index cache; empty: GOLDENSET_HOME/bench-index.")
    report_dir: str = Field(default="", description="Report folder; empty: GOLDENSET_HOME/reports/RUN_ID.")


def _age_days(warehouse: WarehouseResource) -> float:
    con = warehouse.connect()
    try:
        build = golden.latest_build(con)
    finally:
        con.close()
    return (utcnow() - build.built_at).total_seconds() / 86400


def _options(text: str) -> dict:
    # Same rule as the CLI's --retriever-config: empty, or a JSON object.
    from goldenset.bench.cli import _parse_json_object

    return _parse_json_object(text, "retriever_config")


def _inline_plot(markdown: str, report: Path) -> str:
    # The UI cannot follow a relative image path, so the plot travels inside the Markdown.
    png = report.parent / "differences.png"
    if not png.exists():
        return markdown
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return markdown.replace("](differences.png)", f"](data:image/png;base64,{data})")


@dg.asset(
    deps=[dg.AssetKey("golden_set")],
    pool="duckdb",
    group_name="benchmark",
    kinds={"duckdb", "python"},
    check_specs=[
        dg.AssetCheckSpec(AGE_CHECK, asset="retrieval_benchmark", blocking=True,
                          description="The golden set was built no more than max_age_days ago (else exit 3)."),
        dg.AssetCheckSpec(COMPONENTS_CHECK, asset="retrieval_benchmark", blocking=True,
                          description="Every retrieval component answers its probe query (else exit 4)."),
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

    Refuses (a failed blocking check, no materialization) when the golden set is too
    old or a component is down, unless allow_degraded, which stamps the run DEGRADED.
    """
    db = Path(warehouse.db_path)
    bench = BenchConfig(
        retriever=config.retriever, retriever_config=_options(config.retriever_config),
        k_values=tuple(config.k_values), depth=config.depth, exclude_stale=config.exclude_stale,
        max_age_days=config.max_age_days, allow_degraded=config.allow_degraded,
        index_dir=Path(config.index_dir) if config.index_dir else settings.resolve("bench_index"),
    )
    expected_age = dg.MetadataValue.text(f"<= {config.max_age_days:g} days")
    try:
        result = run_and_store(db, Path(corpus_source.path), bench,
                               report_dir=Path(config.report_dir) if config.report_dir else None,
                               embedder=embedder.get_embedder())
    except GoldenSetTooOld as exc:
        yield dg.AssetCheckResult(
            check_name=AGE_CHECK, passed=False, severity=dg.AssetCheckSeverity.ERROR,
            metadata={"expected": expected_age, "actual": dg.MetadataValue.text(f"{_age_days(warehouse):.2f} days"),
                      "reason": dg.MetadataValue.text(str(exc))},
        )
        raise dg.Failure(description=str(exc), allow_retries=False) from exc
    except ComponentDown as exc:
        yield dg.AssetCheckResult(check_name=AGE_CHECK, passed=True, metadata={"expected": expected_age})
        yield dg.AssetCheckResult(
            check_name=COMPONENTS_CHECK, passed=False, severity=dg.AssetCheckSeverity.ERROR,
            metadata={"expected": dg.MetadataValue.text("every component returns a hit for its probe"),
                      "actual": dg.MetadataValue.text(str(exc))},
        )
        raise dg.Failure(description=str(exc), allow_retries=False) from exc

    run = result.run
    yield dg.AssetCheckResult(
        check_name=AGE_CHECK, passed=True,
        metadata={"expected": expected_age, "actual": dg.MetadataValue.text(f"{_age_days(warehouse):.2f} days"),
                  "build_id": run.build_id},
    )
    yield dg.AssetCheckResult(
        check_name=COMPONENTS_CHECK, passed=not run.degraded,
        # allow_degraded: the run is kept but the check still says what was down.
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"expected": dg.MetadataValue.text("no component down"),
                  "actual": dg.MetadataValue.text(", ".join(run.down_components) or "none down")},
    )
    means = run.means(DECIDING_ROW)
    table = "| metric | " + " | ".join(run.rows) + " |\n| --- |" + " ---: |" * len(run.rows) + "\n" + "\n".join(
        f"| {m} | " + " | ".join(f"{run.means(r)[m]:.4f}" for r in run.rows) + " |" for m in run.metric_names
    )
    markdown = result.report.read_text(encoding="utf-8") if result.report else ""
    yield dg.MaterializeResult(
        metadata={
            "run_id": run.run_id,
            "build_id": run.build_id,
            "degraded": run.degraded,
            "n_queries": run.n_queries,
            "corpus_fingerprint": run.corpus_fingerprint,
            "warnings": dg.MetadataValue.json(run.warnings),
            "metrics": dg.MetadataValue.md(table),
            "report": dg.MetadataValue.md(_inline_plot(markdown, result.report) if result.report else ""),
            "report_path": dg.MetadataValue.path(str(result.report)),
            **{f"core/{m}": float(v) for m, v in means.items()},
        }
    )


BENCHMARK_ASSETS = [retrieval_benchmark]
BENCHMARK_CHECK_NAMES = (AGE_CHECK, COMPONENTS_CHECK)
benchmark_job = dg.define_asset_job("retrieval_benchmark_job", selection=[retrieval_benchmark])
BENCHMARK_JOBS = [benchmark_job]
