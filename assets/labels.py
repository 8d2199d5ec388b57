"""Label-file ingestion, one partition per dt= folder of LABELS (contract 7.2)."""

import dagster as dg

from goldenset.labelling.ingest import ingest_labels
from goldenset.status import label_partition_stats, partition_samples
from goldenset_dagster.assets import raise_for, table_metadata
from goldenset_dagster.assets.inputs import folder_observation, label_files, rubric_file, rubric_observation
from goldenset_dagster.assets.serve_log import sample_md
from goldenset_dagster.partitions import days
from goldenset_dagster.resources import LabelSource, WarehouseResource


@dg.asset(
    # After the serves: a label line is checked against the rubric of its query's project,
    # which the ingested serves give (contract 9.5), so a first build with both reads logs first.
    # And after the corpus snapshot: a line is held back until a snapshot holds its document
    # version, and the day counts it against the snapshot the build of this run reads.
    deps=[label_files, rubric_file, dg.AssetKey("serve_log"), dg.AssetKey("corpus_snapshot")],
    partitions_def=days,
    backfill_policy=dg.BackfillPolicy.single_run(),
    pool="duckdb",
    group_name="ingest",
    kinds={"duckdb", "python"},
)
def human_labels(context: dg.AssetExecutionContext, warehouse: WarehouseResource, labels: LabelSource):
    """Label lines of one day (people's, and judges'), checked against the rubric; bad lines quarantined.

    Read like the serve log: a file is read again when its bytes change, or when the
    rubric's content changed (every file is then checked again). Without a LABELS
    directory nothing is read, not even the rubric; with one, the rubric must be valid
    and closed. Lines whose document version no build's snapshot holds yet are kept,
    rejected as `unknown_document_version` and counted apart as held back
    (`label_lines_held_back`, part of `label_lines_rejected`) until one does.
    """
    keys = list(context.partition_keys)
    context.log_event(folder_observation(label_files, labels.root))
    if not labels.exists():
        # Only what stays true once the folder appears: a day's metadata is kept until
        # the day is read again, and a day with no label file is not (a per-day "no LABELS
        # directory" stayed on every such day for good). The run's log says why.
        context.log.info(f"no LABELS directory at {labels.root}: no label file read")
        for dt in keys:
            context.add_asset_metadata({"files": 0, "label_lines_read": 0, "labels": 0}, partition_key=dt)
        return dg.MaterializeResult()
    context.log_event(rubric_observation(labels.rubric_path))
    try:
        rubric = labels.rubric()
        con = warehouse.connect()
        try:
            reports = {r.dt: r for r in ingest_labels(con, labels.root, rubric, keys)}
            metadata = label_day_metadata(con, keys, reports, rubric.name)
        finally:
            con.close()
    except Exception as exc:
        raise_for(exc, warehouse.db_path)
    for dt in keys:
        context.add_asset_metadata(metadata[dt], partition_key=dt)
    return dg.MaterializeResult()


def label_day_metadata(con, keys: list[str], reports: dict, rubric_name: str) -> dict[str, dict]:
    """What the warehouse holds of each label day (files, lines, labels, rejects, a sample) and what this
    run did to it (`reports`: the day's ingest report, if it read the day)."""
    stats = label_partition_stats(con, keys)
    samples = partition_samples(con, [dt for dt in keys if stats[dt].label_lines_rejected_at_ingest], labels=True)
    out = {}
    for dt in keys:
        st, rep = stats[dt], reports.get(dt)
        out[dt] = {
            "files": st.files,
            # The names of goldenset.counts, for one day: label_lines_read = labels +
            # label_lines_rejected - unreadable_files + blank_lines, where label_lines_rejected =
            # label_lines_rejected_at_ingest + label_lines_held_back (unknown_document_version).
            "label_lines_read": st.lines_read,
            "labels": st.labels,
            "label_lines_rejected": st.label_lines_rejected,
            "label_lines_rejected_at_ingest": st.label_lines_rejected_at_ingest,
            "label_lines_held_back": st.label_lines_held_back,
            "blank_lines": st.blank_lines,
            "unreadable_files": st.unreadable_files,
            "label_lines_by_annotator": dg.MetadataValue.json(st.by_annotator),
            "rejected_by_reason": dg.MetadataValue.json(st.label_lines_rejected_by_reason()),
            "rejected_sample": dg.MetadataValue.md(sample_md(samples.get(dt, []), st.label_lines_rejected_at_ingest)),
            **table_metadata("human_labels", st.labels + st.label_lines_held_back),
            "files_ingested_this_run": rep.files_ingested if rep else 0,
            "files_unchanged_this_run": rep.files_unchanged if rep else 0,
            "rubric": rubric_name,
        }
    return out
