"""The corpus snapshot."""


import dagster as dg

from goldenset.errors import CorpusError
from goldenset.snapshots import snapshot_corpus
from resources import CorpusSource, WarehouseResource


@dg.asset(pool="duckdb", group_name="corpus", kinds={"duckdb", "python"})
def corpus_snapshot(warehouse: WarehouseResource, corpus_source: CorpusSource):
    """What the index holds now, fingerprinted; all or nothing.

    A missing, unreadable or invalid file fails the run with a one-line reason and
    leaves the last good snapshot current.
    """
    con = warehouse.connect()
    try:
        stored = snapshot_corpus(con, corpus_source.path)
    except CorpusError as exc:
        raise dg.Failure(description=str(exc)) from exc
    finally:
        con.close()
    return dg.MaterializeResult(
        metadata={
            "fingerprint": stored.fingerprint,
            "active_docs": stored.active_docs,
            "retired_docs": stored.retired_docs,
            "new_fingerprint": stored.new_fingerprint,
            "drift_from_previous": dg.MetadataValue.float(stored.drift_from_previous)
            if stored.drift_from_previous is not None else dg.MetadataValue.text("first snapshot"),
            "source": corpus_source.path,
        },
        data_version=dg.DataVersion(stored.fingerprint),
    )
