"""The WARN check `label_lines_rejected` on `golden_set`, read from the Dagster run (contract 9.4)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from goldenset_dagster.assets.corpus import corpus_snapshot
from goldenset_dagster.assets.golden_set import golden_set
from goldenset_dagster.assets.labels import human_labels
from goldenset_dagster.assets.serve_log import serve_log
from goldenset_dagster.jobs import build_run_config
from goldenset_dagster.partitions import days as day_partitions
from goldenset_dagster.partitions import range_tags
from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource, WarehouseResource
from goldenset_dagster.resources.embedder import EmbedderResource

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data" / "conformance"


def test_rejected_label_lines_fail_the_warning_check_with_count_and_reasons(tmp_path):
    days = ["2026-11-01", "2026-11-02", "2026-11-03"]  # two log days and the label day
    resources = {
        "warehouse": WarehouseResource(db_path=str(tmp_path / "g.duckdb")),
        "logs": LogSource(path=str(DATA / "logs")),
        "corpus_source": CorpusSource(path=str(DATA / "corpus.jsonl")),
        "embedder": EmbedderResource(),
        "labels": LabelSource(path=str(DATA / "labels"), rubric_path=str(DATA / "rubric.yaml")),
    }
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(day_partitions.name, days)
        result = dg.materialize(
            [serve_log, human_labels, corpus_snapshot, golden_set],
            instance=instance,
            resources=resources,
            run_config=build_run_config("manual"),
            tags=range_tags(days),
            raise_on_error=False,
        )
        assert result.success
        checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    check = checks["label_lines_rejected"]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    # labels-expected.json: lines 15 (unknown_document_version), 16-17 (label_contradicts_rubric),
    # 18-19 (invalid_field), 20 (missing_field), 21 (unknown_event), 22 (invalid_json); 22 lines read.
    assert check.metadata["rejected"].value == 8 and check.metadata["lines_read"].value == 22
    assert check.metadata["reasons"].value == {
        "invalid_field": 2,
        "label_contradicts_rubric": 2,
        "invalid_json": 1,
        "missing_field": 1,
        "unknown_document_version": 1,
        "unknown_event": 1,
    }
