"""The golden-set build, its checks, the relabel queue and the export."""


from pathlib import Path

import dagster as dg

from goldenset.build import TRIGGERS, build_golden_set
from goldenset.checks import BuildChecks
from goldenset.errors import BuildBlocked, NoBuild
from goldenset.export import export_build
from goldenset.neardup import plan_merges, query_map
from goldenset.status import drift_between_builds, rejected_sample, relabel_summary
from resources import WarehouseResource
from resources.embedder import EmbedderResource

from assets.corpus import corpus_snapshot
from assets.serve_log import serve_log

CHECKS = (
    ("funnel_adds_up", True, "Each step's judgments_left = the previous step's left - its dropped."),
    ("rejected_share", True, "Rejected log lines stay at or under the blocking share (default 10%)."),
    ("rejected_share_warning", False, "Rejected log lines stay at or under the warning share (default 1%)."),
    ("golden_set_not_empty", False, "At least one label survives the filters."),
    ("labels_point_at_active_documents", True, "Every label's document is active in the snapshot."),
)


class GoldenSetConfig(dg.Config):
    """How a build runs; the defaults are what the nightly schedule uses."""

    trigger: str = "manual"
    warn_rejected_share: float = 0.01
    block_rejected_share: float = 0.10
    near_duplicates: bool = False
    near_duplicate_threshold: float = 0.92


@dg.asset(
    deps=[serve_log, corpus_snapshot],
    pool="duckdb",
    group_name="golden_set",
    kinds={"duckdb"},
    check_specs=[
        dg.AssetCheckSpec(name, asset="golden_set", blocking=blocking, description=desc)
        for name, blocking, desc in CHECKS
    ],
)
def golden_set(
    context: dg.AssetExecutionContext,
    config: GoldenSetConfig,
    warehouse: WarehouseResource,
    embedder: EmbedderResource,
):
    """Judgments through the four filters into labels, with history; one transaction.

    A failing blocking check (rejected share, funnel, labels without a document)
    keeps the build unpublished: the previous build stays current.
    """
    if config.trigger not in TRIGGERS:
        raise dg.Failure(description=f"trigger {config.trigger!r} is not one of {', '.join(TRIGGERS)}")
    con = warehouse.connect()
    try:
        merges = []
        if config.near_duplicates:
            merges = plan_merges(con, embedder.get_embedder(), config.near_duplicate_threshold)
            for m in merges:
                context.log.info(
                    f"near-duplicate: [{m.project}] {m.task_norm!r} -> {m.merged_into!r} (cosine {m.cosine:.3f})"
                )
        try:
            result = build_golden_set(
                con,
                trigger=config.trigger,
                checks=BuildChecks(config.warn_rejected_share, config.block_rejected_share),
                query_map=query_map(merges),
            )
        except BuildBlocked as exc:
            raise dg.Failure(
                description=str(exc),
                metadata={o.name: dg.MetadataValue.text(o.detail) for o in exc.checks},
            ) from exc
        except NoBuild as exc:
            raise dg.Failure(description=str(exc)) from exc
        drift_md = (dg.MetadataValue.float(drift_between_builds(con, result.build_id - 1, result.build_id))
                    if result.build_id > 1 else "first build")
        sample = rejected_sample(con, limit=10)
    finally:
        con.close()

    checks = [
        dg.AssetCheckResult(
            check_name=o.name,
            passed=o.passed,
            severity=dg.AssetCheckSeverity.ERROR if o.severity == "ERROR" else dg.AssetCheckSeverity.WARN,
            description=o.detail,
            metadata={k: v for k, v in o.metadata.items()},
        )
        for o in result.checks
    ]
    return dg.MaterializeResult(
        metadata={
            "build_id": result.build_id,
            "trigger": result.trigger,
            "computation": result.computation,
            "corpus_fingerprint": result.corpus_fingerprint,
            "corpus_drift_since_previous_build": drift_md,
            "build_age_days": 0.0,
            "funnel": _funnel_table(result.funnel),
            **{k: v for k, v in result.counts.items() if k != "labels_missing_document"},
            "history_versions_opened": result.history.get("versions_opened", 0),
            "history_versions_closed": result.history.get("versions_closed", 0),
            "near_duplicate_merges": dg.MetadataValue.json(
                [{"project": m.project, "task": m.task_norm, "into": m.merged_into, "cosine": round(m.cosine, 4)}
                 for m in merges]
            ),
            "rejected_sample": dg.MetadataValue.md(
                "\n".join(["| file | line | reason |", "| --- | --- | --- |"]
                          + [f"| {f} | {'' if n is None else n} | {r} |" for f, n, r, _ in sample])
            ),
        },
        check_results=checks,
    )


def _funnel_table(funnel) -> dg.MetadataValue:
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord({"step": s.step, "judgments_dropped": s.judgments_dropped,
                            "judgments_left": s.judgments_left, "units_left": s.units_left})
            for s in funnel
        ],
        schema=dg.TableSchema(columns=[
            dg.TableColumn("step", "string"),
            dg.TableColumn("judgments_dropped", "int"),
            dg.TableColumn("judgments_left", "int"),
            dg.TableColumn("units_left", "int"),
        ]),
    )


@dg.asset(deps=[golden_set], pool="duckdb", group_name="golden_set", kinds={"duckdb"})
def relabel_queue(warehouse: WarehouseResource):
    """Labels whose document moved on (superseded or new version): exactly the rows to relabel."""
    con = warehouse.connect()
    try:
        by_reason, sample = relabel_summary(con)
    finally:
        con.close()
    lines = ["| query_id | doc_id | judged | current | superseded_by | reason | since build |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in sample]
    return dg.MaterializeResult(metadata={
        "queue_size": sum(by_reason.values()),
        "by_reason": dg.MetadataValue.json(by_reason),
        "sample": dg.MetadataValue.md("\n".join(lines)),
    })


class ExportConfig(dg.Config):
    out_dir: str = "var/export/latest"


@dg.asset(deps=[golden_set], pool="duckdb", group_name="golden_set", kinds={"duckdb", "json"})
def golden_set_export(config: ExportConfig, warehouse: WarehouseResource):
    """The latest build as BEIR files plus TREC qrels, with a manifest."""
    con = warehouse.connect()
    try:
        res = export_build(con, Path(config.out_dir))
    finally:
        con.close()
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(res.out.resolve())),
        "build_id": res.build_id,
        "queries": res.n_queries,
        "labels": res.n_labels,
        "documents": res.n_documents,
    })
