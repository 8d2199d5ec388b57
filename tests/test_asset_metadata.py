"""What the Dagster UI reads of each asset: check targets, counts that add up, named units, table schemas.

Expected figures are the conformance example's, derived by hand from its README (every
line is there for a rule), never read back from the code under test.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from goldenset.settings import Settings
from goldenset.warehouse import connect
from goldenset_dagster.assets.corpus import corpus_snapshot
from goldenset_dagster.assets.golden_set import golden_set, golden_set_export, relabel_queue
from goldenset_dagster.assets.labelling import pool_report_md
from goldenset_dagster.assets.labels import human_labels
from goldenset_dagster.assets.serve_log import serve_log
from goldenset_dagster.definitions import build_definitions
from goldenset_dagster.jobs import build_run_config
from goldenset_dagster.partitions import days as day_partitions
from goldenset_dagster.partitions import range_tags
from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource, WarehouseResource
from goldenset_dagster.resources.embedder import EmbedderResource

# Every test here starts from builds made once per module: seconds before the first.
pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data" / "conformance"
ASSETS = [serve_log, human_labels, corpus_snapshot, golden_set, relabel_queue, golden_set_export]
DAYS = ["2026-11-01", "2026-11-02", "2026-11-03"]


def _resources(tmp_path, labels: bool) -> dict:
    label_dir = DATA / "labels" if labels else tmp_path / "no-labels"
    return {
        "warehouse": WarehouseResource(db_path=str(tmp_path / "g.duckdb")),
        "logs": LogSource(path=str(DATA / "logs")),
        "corpus_source": CorpusSource(path=str(DATA / "corpus.jsonl")),
        "embedder": EmbedderResource(),
        "labels": LabelSource(path=str(label_dir), rubric_path=str(DATA / "rubric.yaml")),
    }


def _build(instance, tmp_path, labels: bool):
    known = instance.get_dynamic_partitions(day_partitions.name)
    instance.add_dynamic_partitions(day_partitions.name, [d for d in DAYS if d not in known])
    run_config = build_run_config("manual")
    run_config["ops"]["golden_set_export"] = {"config": {"out_dir": str(tmp_path / "export")}}
    result = dg.materialize(
        ASSETS,
        instance=instance,
        resources=_resources(tmp_path, labels),
        run_config=run_config,
        tags=range_tags(DAYS),
    )
    assert result.success
    return result


def _latest(instance, asset: str, partition: str | None = None) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None),
        limit=1,
    ).records
    return dict(records[0].asset_materialization.metadata)


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    """Build 1 without labels, build 2 with the conformance labels and rubric; the instance kept open."""
    tmp_path = tmp_path_factory.mktemp("ui")
    with dg.instance_for_test() as instance:
        _build(instance, tmp_path, labels=False)
        _build(instance, tmp_path, labels=True)
        yield instance, tmp_path


def test_each_check_result_targets_the_materialization_it_judged(two_builds):
    instance, _ = two_builds
    mats = instance.fetch_materializations(dg.AssetKey("golden_set"), limit=2).records
    assert [m.asset_materialization.metadata["build_id"].value for m in mats] == [2, 1]
    for check in ("funnel_adds_up", "rejected_share", "rejected_share_warning", "labels_point_at_active_documents"):
        key = dg.AssetCheckKey(dg.AssetKey("golden_set"), check)
        history = instance.event_log_storage.get_asset_check_execution_history(key, limit=2)
        targets = [h.event.dagster_event.event_specific_data.target_materialization_data.storage_id for h in history]
        # Newest first: build 2's checks point at build 2, build 1's at build 1 (not one behind).
        assert targets == [mats[0].storage_id, mats[1].storage_id], check


def test_rejected_share_shows_its_share_and_thresholds_in_one_named_unit(two_builds):
    instance, _ = two_builds
    key = dg.AssetCheckKey(dg.AssetKey("golden_set"), "rejected_share_warning")
    meta = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)[0].event.dagster_event
    meta = meta.event_specific_data.metadata
    # 2 lines rejected of the 13 + 7 the README lists over the two log days: 0.1 (10%), above the
    # 0.01 warning line; both fractions (docs/reference/counts.md, Units), no key in percent.
    assert meta["log_lines_rejected_at_ingest"].value == 2 and meta["log_lines_read"].value == 20
    assert meta["rejected_share"].value == 0.1
    assert meta["warn_above"].value == 0.01
    assert not any(k.endswith("_pct") for k in meta)


def test_a_log_day_counts_every_line_once_blank_lines_included(two_builds):
    instance, _ = two_builds
    meta = _latest(instance, "serve_log", "2026-11-01")
    # The README: 13 lines, serves s1 and s2, verdicts on lines 2-5, 7, 8, 11, 12, rejected 9 and 10, blank 13.
    keys = ("log_lines_read", "serves", "verdicts", "log_lines_rejected_at_ingest", "blank_lines", "unreadable_files")
    got = {k: meta[k].value for k in keys}
    assert got == {
        "log_lines_read": 13,
        "serves": 2,
        "verdicts": 8,
        "log_lines_rejected_at_ingest": 2,
        "blank_lines": 1,
        "unreadable_files": 0,
    }
    assert "2 of 2 lines rejected at ingest" in meta["rejected_sample"].value


def test_a_label_day_counts_a_line_of_unknown_version_once(two_builds):
    instance, _ = two_builds
    meta = _latest(instance, "human_labels", "2026-11-03")
    # The README: 22 lines; 14 blank; 15 an unknown document version (held back: a rejected line
    # that joins once a snapshot holds its version); 16-22 rejected at ingest; the other 13 are labels.
    keys = (
        "label_lines_read",
        "labels",
        "label_lines_rejected",
        "label_lines_held_back",
        "label_lines_rejected_at_ingest",
        "blank_lines",
        "unreadable_files",
    )
    got = {k: meta[k].value for k in keys}
    assert got == {
        "label_lines_read": 22,
        "labels": 13,
        "label_lines_rejected": 8,
        "label_lines_held_back": 1,
        "label_lines_rejected_at_ingest": 7,
        "blank_lines": 1,
        "unreadable_files": 0,
    }
    # The held-back line is a rejected line of its reason: the day's reasons add up to its rejected lines.
    assert meta["rejected_by_reason"].value["unknown_document_version"] == 1
    assert sum(meta["rejected_by_reason"].value.values()) == 8
    assert meta["dagster/row_count"].value == 14


def test_a_day_read_without_a_labels_folder_says_nothing_that_turns_false_later(tmp_path):
    with dg.instance_for_test() as instance:
        _build(instance, tmp_path, labels=False)
        meta = _latest(instance, "human_labels", "2026-11-01")
    assert {k: v.value for k, v in meta.items()} == {"files": 0, "label_lines_read": 0, "labels": 0}


def test_tables_carry_their_column_schema_and_row_count(two_builds):
    instance, tmp_path = two_builds
    con = connect(tmp_path / "g.duckdb", read_only=True)
    try:
        counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("golden_set", "relabel_queue")}
        columns = {t: [r[0] for r in con.execute(f"DESCRIBE {t}").fetchall()] for t in ("golden_set", "relabel_queue")}
    finally:
        con.close()
    for table in ("golden_set", "relabel_queue"):
        meta = _latest(instance, table)
        assert meta["dagster/row_count"].value == counts[table], table
        assert [c.name for c in meta["dagster/column_schema"].value.columns] == columns[table], table
        assert all(c.description for c in meta["dagster/column_schema"].value.columns)


def test_the_relabel_sample_names_the_task_and_says_how_much_it_shows(two_builds):
    instance, _ = two_builds
    meta = _latest(instance, "relabel_queue")
    # labels-expected.json: one pair to relabel, d4 superseded by d5, of "fix the REFUND window".
    sample = meta["sample"].value
    assert sample.startswith("1 of 1 pairs to relabel")
    assert "| billing | fix the REFUND window | d4 | v1 | v1 | d5 | superseded | " in sample
    assert meta["labels_build_id"].value == 2
    assert isinstance(meta["labels_built_at"], dg.TimestampMetadataValue)


def test_raw_inputs_are_external_assets_upstream_of_what_reads_them():
    graph = build_definitions(Settings.resolve()).resolve_asset_graph()
    external = {k.to_user_string() for k in graph.external_asset_keys}
    assert external == {"serve_log_files", "corpus_file", "label_files", "rubric_file"}
    parents = {
        a: {p.to_user_string() for p in graph.get(dg.AssetKey(a)).parent_keys}
        for a in ("serve_log", "corpus_snapshot", "human_labels", "serve_log_files")
    }
    assert parents == {
        "serve_log": {"serve_log_files"},
        # The trace import writes into the log folder: a refresh has no unmaterialized upstream to warn about.
        "serve_log_files": {"trace_export"},
        "corpus_snapshot": {"corpus_file"},
        # serve_log too: a label line is checked against its query's project's rubric (contract 9.5).
        # and corpus_snapshot: its held-back lines are counted against the snapshot the build reads.
        "human_labels": {"label_files", "rubric_file", "serve_log", "corpus_snapshot"},
    }


def test_the_pool_report_reads_as_a_table_and_its_arithmetic():
    report = {
        "build_id": 4,
        "rankers": ["lexical", "dense"],
        "depth": 10,
        "queries": 3,
        "returned": {"lexical": 30, "dense": 30},
        "outside_snapshot": {"lexical": 0, "dense": 1},
        "returned_total": 60,
        "returned_distinct": 41,
        "shared": [{"a": "lexical", "b": "dense", "pairs": 19}],
        "returned_stale": 2,
        "returned_successor": 1,
        "already_labelled": 8,
        "pooled": 30,
        "pooled_never_judged": 25,
        "queue": {"stale": 2, "successor": 1, "pooled": 30, "total": 33},
    }
    md = pool_report_md(report).splitlines()
    assert md[0] == "| ranker | returned | outside snapshot | shared with lexical | shared with dense |"
    assert md[2:4] == ["| lexical | 30 | 0 | - | 19 |", "| dense | 30 | 1 | 19 | - |"]
    assert "- queue: 2 stale + 1 successor + 30 pooled = 33 pairs" in md
    assert "- distinct: 60 - 19 duplicates = 41 pairs" in md


def test_jobs_run_in_one_process_unless_a_run_asks_for_a_process_per_step():
    defs = build_definitions(Settings.resolve())
    names = ("refresh_golden_set", "rebuild_golden_set", "pool_labelling_queue", "retrieval_benchmark_job")
    for name in (*names, "import_trace_export"):
        job = defs.resolve_job_def(name)
        assert job.executor_def.name == "in_process_unless_asked", name
        # What the UI launches without a word: the in-process executor (no process per step).
        default = job.executor_def.config_schema.as_field().default_value
        assert default == {"in_process": {}}, name
        # No job tag says what started a run: a job's tags are the same for every launch
        # (goldenset_dagster.jobs.stamp_trigger sets it from the run's own tags).
        assert "goldenset/trigger" not in job.tags, name
    assert defs.resolve_job_def("stage_serve_log").executor_def.name == "multiprocess"
