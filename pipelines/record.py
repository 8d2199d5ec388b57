"""What the command line does to an asset, recorded on that asset in the instance the UI shows.

`goldenset pool` and `goldenset bench run` call the library directly (no Dagster run: the
pool's output and the benchmark's progress are the command's own). Afterwards the command
announces what it did (`goldenset.hooks`), and the `goldenset` program of this package, which
listens, records a materialization of `labelling_queue` or `retrieval_benchmark` with the metadata
the asset itself attaches (one function makes both), so the asset no longer says "Never
materialized" while the warehouse holds a queue and runs. The materialization says it came
from the command line (`recorded_from`), and it is runless: job pages list runs only.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from goldenset.warehouse import connect

FROM_CLI = "recorded_from"


def record_pool(db: str | Path, instance: dg.DagsterInstance, command: str = "goldenset pool") -> None:
    """Record the latest pool (what `queue_summary` reads) as a materialization of labelling_queue."""
    from goldenset.labelling.pool import queue_summary
    from goldenset_dagster.assets.labelling import queue_metadata

    con = connect(db, read_only=True)
    try:
        summary = queue_summary(con)
    finally:
        con.close()
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            "labelling_queue",
            description=f"recorded by `{command}`",
            metadata={**queue_metadata(summary), FROM_CLI: dg.MetadataValue.text(command)},
        )
    )


def record_benchmark(result, instance: dg.DagsterInstance, command: str = "goldenset bench run") -> None:
    """Record a stored benchmark run (`run_and_store`'s result) as a materialization of retrieval_benchmark."""
    from goldenset_dagster.assets.benchmark import materialization_metadata

    markdown = result.report.read_text(encoding="utf-8") if result.report else ""
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            "retrieval_benchmark",
            description=f"recorded by `{command}`",
            metadata={
                **materialization_metadata(result.run, markdown, result.report),
                FROM_CLI: dg.MetadataValue.text(command),
            },
        )
    )
