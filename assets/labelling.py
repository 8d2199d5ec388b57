"""The labelling queue: pairs to label next, pooled from several rankers after each build (contract 7.4)."""

import dagster as dg
from pydantic import Field

from goldenset import settings
from goldenset.labelling.pool import DEFAULT_DEPTH, DEFAULT_RANKERS, queue_summary, run_pool
from goldenset_dagster.assets import raise_for, table_metadata
from goldenset_dagster.assets.golden_set import golden_set
from goldenset_dagster.commands import handed_over, run_handed
from goldenset_dagster.resources import LabelSource, WarehouseResource
from goldenset_dagster.resources.embedder import EmbedderResource


class PoolConfig(dg.Config):
    """How the queue is pooled; the defaults are `goldenset pool`'s."""

    rankers: str = Field(
        default=",".join(DEFAULT_RANKERS),
        description="Rankers, in order: lexical, dense, core or module:factory, comma-separated.",
    )
    depth: int = Field(default=DEFAULT_DEPTH, description="Documents asked of each ranker per golden query.")
    index_dir: str = Field(default="", description="Lexical index cache; empty: GOLDENSET_HOME/bench-index.")


@dg.asset(deps=[golden_set], pool="duckdb", group_name="labelling", kinds={"duckdb", "python"})
def labelling_queue(config: PoolConfig, warehouse: WarehouseResource, embedder: EmbedderResource, labels: LabelSource):
    """Stale labels first, then successors of superseded documents, then what the rankers found unlabelled.

    Its own job (`pool_labelling_queue`), not the nightly refresh: the pool asks every
    ranker about every golden query. Launched here it runs only when the labelling loop is
    in use (a LABELS directory exists); without it the queue is left as it is and says so.
    A run of `goldenset pool` pools with the command's own options.
    """
    handoff = handed_over("pool")
    if handoff is None and not labels.exists():
        return dg.MaterializeResult(metadata={"note": f"no LABELS directory at {labels.root}: nothing pooled"})
    if handoff is not None:
        run_handed(handoff)  # `goldenset pool` with its own options
    try:
        con = warehouse.connect(read_only=handoff is not None)
        try:
            if handoff is None:
                run_pool(
                    con,
                    embedder=embedder.get_embedder(),
                    rankers=config.rankers,
                    depth=config.depth,
                    index_dir=config.index_dir or settings.resolve("bench_index"),
                )
            summary = queue_summary(con)
        finally:
            con.close()
    except Exception as exc:
        raise_for(exc, warehouse.db_path)
    return dg.MaterializeResult(metadata=queue_metadata(summary))


def queue_metadata(summary: dict) -> dict:
    """What the UI shows of the queue and the pool that made it (`queue_summary`'s values), the asset's and the CLI's."""
    meta: dict = {
        # goldenset.counts' names: `status --json` says labelling_queue and labelling_queue_by_reason too.
        "labelling_queue": summary["labelling_queue"],
        "labelling_queue_by_reason": dg.MetadataValue.json(summary["labelling_queue_by_reason"]),
        "pool_id": summary["pool_id"],
        "build_id": summary["build_id"],
        "rankers": ", ".join(summary["rankers"] or []),
        # Text, not a number: a setting the UI would plot as a flat line run after run.
        "depth": dg.MetadataValue.text(str(summary["depth"])),
        "pool_report": dg.MetadataValue.md(pool_report_md(summary["report"])),
        **table_metadata("labelling_queue", summary["labelling_queue"]),
    }
    return meta


def pool_report_md(report: dict | None) -> str:
    """The pool's report as a reader takes it: a table of rankers (returned, shared), then the arithmetic."""
    if not report:
        return "No pool has run yet."
    from goldenset.labelling.pool import PoolReport

    r = PoolReport.from_json(report)
    shared = {(a, b): n for a, b, n in r.shared}
    head = ["ranker", "returned", "outside snapshot", *(f"shared with {b}" for b in r.rankers)]
    rows = [
        [a, str(r.returned.get(a, 0)), str(r.outside_snapshot.get(a, 0))]
        + ["-" if a == b else str(shared.get((a, b), shared.get((b, a), 0))) for b in r.rankers]
        for a in r.rankers
    ]
    table = ["| " + " | ".join(head) + " |", "|" + " --- |" + " ---: |" * (len(head) - 1)]
    table += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join([*table, "", *(f"- {line}" for line in r.lines())])
