"""The corpus snapshot."""

from datetime import UTC

import dagster as dg

from goldenset.snapshots import snapshot_corpus
from goldenset_dagster.assets import raise_for, short_fingerprint
from goldenset_dagster.assets.inputs import corpus_file, corpus_observation
from goldenset_dagster.resources import CorpusSource, WarehouseResource


@dg.asset(deps=[corpus_file], pool="duckdb", group_name="corpus", kinds={"duckdb", "python"})
def corpus_snapshot(context: dg.AssetExecutionContext, warehouse: WarehouseResource, corpus_source: CorpusSource):
    """What the index holds now, fingerprinted; all or nothing.

    A missing, unreadable or invalid file fails the run with a one-line reason and
    leaves the last good snapshot current. The fingerprint (contract section 2)
    ignores line order, titles and retired documents; drift is the share of the
    previous snapshot's active documents added, removed or changed.
    """
    try:
        con = warehouse.connect()
        try:
            stored = snapshot_corpus(con, corpus_source.path)
            taken_at = con.execute(
                "SELECT taken_at FROM corpus_snapshots WHERE fingerprint = ?", [stored.fingerprint]
            ).fetchone()[0]
        finally:
            con.close()
    except Exception as exc:
        raise_for(exc, warehouse.db_path)
    context.log_event(corpus_observation(corpus_source.path, stored.fingerprint, stored.active_docs))
    return dg.MaterializeResult(
        metadata={
            "fingerprint": short_fingerprint(stored.fingerprint),
            "fingerprint_full": dg.MetadataValue.text(stored.fingerprint),
            "first_seen": dg.MetadataValue.timestamp(taken_at.replace(tzinfo=UTC)),
            "active_docs": stored.active_docs,
            "retired_docs": stored.retired_docs,
            "new_fingerprint": stored.new_fingerprint,
            # A share in data is a fraction (docs/reference/counts.md, Units).
            "drift_from_previous": dg.MetadataValue.float(stored.drift_from_previous)
            if stored.drift_from_previous is not None
            else dg.MetadataValue.text("first snapshot"),
            "source": dg.MetadataValue.path(corpus_source.path),
        },
        data_version=dg.DataVersion(stored.fingerprint),
    )
