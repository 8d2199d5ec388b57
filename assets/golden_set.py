"""The golden-set build, its checks, the relabel queue and the export."""

from datetime import UTC, timedelta
from pathlib import Path

import dagster as dg
from pydantic import Field

from goldenset import settings
from goldenset.bench.gates import MAX_AGE_DAYS
from goldenset.build import TRIGGERS, BuildResult, build_golden_set
from goldenset.build_record import FunnelStep, load_build
from goldenset.checks import CHECKS, BuildChecks, CheckOutcome
from goldenset.counts import Counts, FunnelRow, golden_counts
from goldenset.errors import BuildBlocked
from goldenset.export import export_build
from goldenset.labelling.judge_gate import JudgeGate, deprecated_settings
from goldenset.neardup import NEAR_DUPLICATE_THRESHOLD, plan_merges, query_map
from goldenset.scoring.judge_health import judge_health
from goldenset.status import drift_between_builds, rejected_sample, relabel_summary
from goldenset_dagster.assets import raise_for, sample_caption, short_fingerprint, table_metadata
from goldenset_dagster.assets.corpus import corpus_snapshot
from goldenset_dagster.assets.labels import human_labels
from goldenset_dagster.assets.serve_log import serve_log
from goldenset_dagster.resources import LabelSource, WarehouseResource
from goldenset_dagster.resources.embedder import EmbedderResource

_DEFAULTS = BuildChecks()


class GoldenSetConfig(dg.Config):
    """How a build runs; the defaults are what the nightly schedule uses."""

    trigger: str = Field(default="manual", description="What started the build: schedule, reindex or manual.")
    warn_rejected_share: float = Field(
        default=_DEFAULTS.warn_rejected_share, description="Warn above this share of rejected log lines."
    )
    block_rejected_share: float = Field(
        default=_DEFAULTS.block_rejected_share, description="Refuse to publish above this share of rejected log lines."
    )
    near_duplicates: bool = Field(
        default=False, description="Fold near-duplicate tasks of a project into one query by embedding similarity."
    )
    near_duplicate_threshold: float = Field(
        default=NEAR_DUPLICATE_THRESHOLD, description="Cosine similarity at or above which two tasks are one query."
    )
    judge_min_pairs: int = Field(
        default_factory=lambda: JudgeGate.from_environment().min_pairs,
        description="A judge's labels count only with at least this many pairs measured against "
        "the human label on the audit (GOLDENSET_JUDGE_MIN_PAIRS, default 50).",
    )
    judge_min_kappa: float = Field(
        default_factory=lambda: JudgeGate.from_environment().min_kappa,
        description="... and the lower bound of its Cohen's kappa's 95% interval at least this "
        "(GOLDENSET_JUDGE_MIN_KAPPA, default 0.6).",
    )
    judge_audits: int = Field(
        default_factory=lambda: JudgeGate.from_environment().audits,
        description="The judge's gate reads the latest this many audits; 0 reads every audit "
        "(GOLDENSET_JUDGE_AUDITS, default 0).",
    )


def _check_result(o: CheckOutcome) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name=o.name,
        passed=o.passed,
        severity=dg.AssetCheckSeverity.ERROR if o.severity == "ERROR" else dg.AssetCheckSeverity.WARN,
        description=o.detail,
        metadata={k: _metadata_value(k, v) for k, v in o.metadata.items()},
    )


JUDGE_HEALTH_CHECK = "judge_health"


def _metadata_value(key: str, value):
    # Shares are fractions, like their thresholds (docs/reference/counts.md, Units).
    return dg.MetadataValue.json(value) if isinstance(value, dict) else value


# The benchmark refuses a golden set built more than MAX_AGE_DAYS ago (exit 3): the UI says
# "failing" from that moment, and warns a week before, while a build still helps.
FRESHNESS_NOTICE_DAYS = 7
FRESHNESS = dg.FreshnessPolicy.time_window(
    fail_window=timedelta(days=MAX_AGE_DAYS), warn_window=timedelta(days=MAX_AGE_DAYS - FRESHNESS_NOTICE_DAYS)
)


@dg.asset(
    deps=[serve_log, human_labels, corpus_snapshot],
    pool="duckdb",
    group_name="golden_set",
    kinds={"duckdb"},
    freshness_policy=FRESHNESS,
    check_specs=[
        *(
            dg.AssetCheckSpec(c.name, asset="golden_set", blocking=c.blocking, description=c.description)
            for c in CHECKS
        ),
        dg.AssetCheckSpec(
            JUDGE_HEALTH_CHECK,
            asset="golden_set",
            blocking=False,
            description="Every judge was measured on the audit (a random sample) and the lower bound of its "
            "kappa's interval meets the gate, and its latest run's hallucinated-span rate is at most 5% and moved "
            "at most 5 points since its previous run (contract 13.3).",
        ),
    ],
)
def golden_set(
    context: dg.AssetExecutionContext,
    config: GoldenSetConfig,
    warehouse: WarehouseResource,
    embedder: EmbedderResource,
    labels: LabelSource,
):
    """Judgments through the four filters into labels, merged with human labels, with history; one transaction.

    A failing blocking check (rejected share, funnel, labels without a document)
    keeps the build unpublished: the previous build stays current, and the check
    shows its own result and figures. `computation` says how the build was made:
    `full` (first build, a changed snapshot, or merging on), `incremental` (only the
    queries that new or replaced log lines touched were recomputed; same result as a
    full build) or `repeat` (unchanged input: the previous build's labels are reused).
    """
    if config.trigger not in TRIGGERS:
        raise dg.Failure(
            description=f"trigger {config.trigger!r} is not one of {', '.join(TRIGGERS)}", allow_retries=False
        )
    for warning in deprecated_settings():
        context.log.warning(warning)
    try:
        con = warehouse.connect()
        try:
            rubric = labels.rubric() if labels.exists() else None
            merges = []
            if config.near_duplicates:
                merges = plan_merges(con, embedder.get_embedder(), config.near_duplicate_threshold)
                for m in merges:
                    context.log.info(
                        f"near-duplicate: [{m.project}] {m.task_norm!r} -> {m.merged_into!r} (cosine {m.cosine:.3f})"
                    )
            result = build_golden_set(
                con,
                trigger=config.trigger,
                checks=BuildChecks(config.warn_rejected_share, config.block_rejected_share),
                query_map=query_map(merges),
                judge_gate=JudgeGate(config.judge_min_pairs, config.judge_min_kappa, config.judge_audits),
                rubric_sha256=rubric.content_sha256 if rubric is not None else None,
                rubric_text=labels.rubric_text(rubric) if rubric is not None else None,
            )
            drift = None
            if result.build_id > 1:
                from goldenset.build_record import load_build

                drift = drift_between_builds(con, load_build(con, result.build_id - 1), result.record)
            sample = rejected_sample(con, limit=10)
            counts = golden_counts(con, result.record, result.funnel)
            health = judge_health(con)
        finally:
            con.close()
    except BuildBlocked as exc:
        # Each check shows its own result and figures, then the build fails for good:
        # a run retry would refuse the same way.
        for o in exc.checks:
            yield _check_result(o)
        raise dg.Failure(description=str(exc), allow_retries=False) from exc
    except Exception as exc:
        raise_for(exc, warehouse.db_path)

    # The checks travel with the materialization they judged: emitted before it, Dagster
    # would attach them to the previous build ("Target materialization" one build behind).
    warnings = [w for h in health for w in h.warnings]
    health_check = dg.AssetCheckResult(
        check_name=JUDGE_HEALTH_CHECK,
        passed=not warnings,
        severity=dg.AssetCheckSeverity.WARN,
        description="; ".join(warnings) if warnings else f"{len(health)} judge(s) healthy",
        metadata={
            "expected": dg.MetadataValue.text(
                "measured on the audit; kappa's lower bound >= the gate; hallucinated spans <= 5%, moved <= 5 points"
            ),
            "judges": dg.MetadataValue.json([h.to_json() for h in health]),
        },
    )
    yield dg.MaterializeResult(
        metadata=_build_metadata(result, drift, merges, sample, counts),
        check_results=[*(_check_result(o) for o in result.checks), health_check],
    )


def _build_metadata(result: BuildResult, drift: float | None, merges, sample, counts: Counts) -> dict:
    r = result.record
    q = counts.quarantine
    at_ingest = q.log_lines_rejected_at_ingest + q.label_lines_rejected_at_ingest
    return {
        "build_id": r.build_id,
        "built_at": dg.MetadataValue.timestamp(r.built_at.replace(tzinfo=UTC)),
        "trigger": r.trigger,
        "computation": r.computation,
        "corpus_fingerprint": short_fingerprint(r.corpus_fingerprint),
        "corpus_active_docs": r.corpus_active_docs,
        # Shares are fractions in data (docs/reference/counts.md, Units).
        "corpus_drift_since_previous_build": dg.MetadataValue.float(drift)
        if drift is not None
        else dg.MetadataValue.text("first build"),
        "rejected_share": dg.MetadataValue.float(r.lines_rejected / r.lines_read if r.lines_read else 0.0),
        "funnel": _funnel_table(result.funnel),
        "full_funnel": _full_funnel_table(counts.funnel),
        # Every count under its one name (goldenset.counts): the keys of `status --json`'s counts,
        # but the labelling queue's, which the pool makes after the build (labelling_queue shows them).
        **{
            k: dg.MetadataValue.json(v) if isinstance(v, dict) else v
            for k, v in counts.to_json().items()
            if k not in ("labelling_queue", "labelling_queue_by_reason")
        },
        "rejected_by_source": dg.MetadataValue.json(q.by_source()),
        "history_versions_opened": result.history.versions_opened,
        "history_versions_closed": result.history.versions_closed,
        "queries_recomputed": result.recomputed_queries,
        "queries_folded": result.folded_queries,
        "near_duplicate_merges_list": dg.MetadataValue.json(
            [
                {"project": m.project, "task": m.task_norm, "into": m.merged_into, "cosine": round(m.cosine, 4)}
                for m in merges
            ]
        ),
        "rejected_sample": dg.MetadataValue.md(
            "\n".join(
                [
                    sample_caption(
                        len(sample), at_ingest, "lines rejected at ingest (log and label files), newest first"
                    )
                    + f"; rejected_records {q.rejected_records} in all (`goldenset rejects` lists them):",
                    "",
                ]
                + ["| file | line | reason |", "| --- | --- | --- |"]
                + [f"| {f} | {'' if n is None else n} | {r} |" for f, n, r, _ in sample]
            )
            if sample
            else f"No line rejected at ingest; rejected_records {q.rejected_records}."
        ),
        **table_metadata("golden_set", counts.golden_rows),
    }


def _full_funnel_table(rows: list[FunnelRow]) -> dg.MetadataValue:
    """The funnel from lines read to golden rows (goldenset.counts.full_funnel), as a table."""
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "step": row.step,
                    "unit": row.unit,
                    "count": row.count,
                    "left": row.left,
                    "units_left": row.units_left,
                    "by_reason": ", ".join(f"{k} {v}" for k, v in (row.by_reason or {}).items()),
                    "queries_kept_by": ", ".join(f"{k} {v}" for k, v in (row.queries_kept_by or {}).items()),
                }
            )
            for row in rows
        ],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("step", "string"),
                dg.TableColumn("unit", "string"),
                dg.TableColumn("count", "int"),
                dg.TableColumn(
                    "left", "int", description="judgments or rows left after the step (empty: a lines step)"
                ),
                dg.TableColumn("units_left", "int", description="serves or queries left (the filter steps)"),
                dg.TableColumn("by_reason", "string"),
                dg.TableColumn(
                    "queries_kept_by", "string", description="no_positive: queries kept by a log helped, by a human"
                ),
            ]
        ),
    )


def _funnel_table(funnel: list[FunnelStep]) -> dg.MetadataValue:
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "step": s.step,
                    "judgments_dropped": s.judgments_dropped,
                    "judgments_left": s.judgments_left,
                    "units_left": s.units_left,
                }
            )
            for s in funnel
        ],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("step", "string"),
                dg.TableColumn("judgments_dropped", "int"),
                dg.TableColumn("judgments_left", "int"),
                dg.TableColumn("units_left", "int"),
            ]
        ),
    )


@dg.asset(deps=[golden_set], pool="duckdb", group_name="golden_set", kinds={"duckdb"})
def relabel_queue(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    """Labels whose document moved on (superseded or new version): exactly the rows to relabel."""
    try:
        con = warehouse.connect(read_only=True)
        try:
            labels = load_build(con, load_build(con).labels_build_id)
            # A repeat build holds the labels, history and snapshot of the build it repeats,
            # so the queue is the one last materialized for those labels (that build of this
            # warehouse: its id and time): say it again.
            key = (labels.build_id, labels.built_at.replace(tzinfo=UTC).timestamp())
            last = context.instance.get_latest_materialization_event(context.asset_key)
            meta = dict(last.asset_materialization.metadata) if last and last.asset_materialization else {}
            held = tuple(getattr(meta.get(k), "value", None) for k in ("labels_build_id", "labels_built_at"))
            if held == key and {"relabel_queue", "relabel_queue_by_reason", "sample"} <= set(meta):
                return dg.MaterializeResult(metadata=meta)
            by_reason, sample = relabel_summary(con)
        finally:
            con.close()
    except Exception as exc:
        raise_for(exc, warehouse.db_path)
    total = sum(by_reason.values())
    lines = [
        sample_caption(len(sample), total, "pairs to relabel, oldest flagged first") + ":",
        "",
        "| project | task | doc_id | judged | current | superseded_by | reason | since build |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in sample]
    return dg.MaterializeResult(
        metadata={
            # goldenset.counts' names: `status --json` says relabel_queue and relabel_queue_by_reason too.
            "relabel_queue": total,
            "relabel_queue_by_reason": dg.MetadataValue.json(by_reason),
            "sample": dg.MetadataValue.md("\n".join(lines) if sample else "The relabel queue is empty."),
            # The build whose labels the queue is of, as a reader says it: its id, and when it was built.
            "labels_build_id": dg.MetadataValue.int(key[0]),
            "labels_built_at": dg.MetadataValue.timestamp(key[1]),
            **table_metadata("relabel_queue", total),
        }
    )


def _cell(value) -> str:
    """A value in a Markdown table cell: a pipe or a line break would end the cell or the row."""
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


class ExportConfig(dg.Config):
    out_dir: str = Field(
        default="",
        description="Folder to write; empty: GOLDENSET_HOME/export/latest (GOLDENSET_EXPORT_DIR/latest when set).",
    )


@dg.asset(deps=[golden_set], pool="duckdb", group_name="golden_set", kinds={"duckdb", "json"})
def golden_set_export(config: ExportConfig, warehouse: WarehouseResource):
    """The latest build as BEIR files plus TREC qrels, with a manifest."""
    out = Path(config.out_dir) if config.out_dir else settings.resolve("exports") / "latest"
    try:
        con = warehouse.connect(read_only=True)
        try:
            res = export_build(con, out)
        finally:
            con.close()
    except Exception as exc:
        raise_for(exc, warehouse.db_path)
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(res.out.resolve())),
            "build_id": res.build_id,
            "queries": res.n_queries,
            "labels": res.n_labels,
            "documents": res.n_documents,
        }
    )
