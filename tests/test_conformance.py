"""The worked example of the contract (tests/data/conformance, a copy of shared/conformance)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from goldenset.build import build_golden_set
from goldenset.corpus import read_corpus
from goldenset.ingest import ingest_all
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from tests.helpers import json_rows

DATA = Path(__file__).parent / "data" / "conformance"
EXPECTED = json.loads((DATA / "expected.json").read_text())


def assert_matches_expected(con):
    golden = json_rows(con, "SELECT * FROM golden_set ORDER BY query_id, doc_id")
    # The contract's columns; more are welcome (source, grade ... of section 7).
    assert [{k: row[k] for k in EXPECTED["golden_set"][0]} for row in golden] == EXPECTED["golden_set"]
    build = json_rows(con, "SELECT * FROM golden_builds")[0]
    assert {k: build[k] for k in EXPECTED["golden_builds"]} == EXPECTED["golden_builds"]
    funnel = json_rows(
        con,
        "SELECT step, judgments_dropped, judgments_left, units_left FROM filter_funnel "
        "WHERE build_id = 1 ORDER BY step_order",
    )
    assert funnel == EXPECTED["filter_funnel"]
    rejected = json_rows(con, "SELECT source_file, line, reason FROM rejected_records ORDER BY source_file, line")
    assert rejected == EXPECTED["rejected_records"]
    queue = json_rows(
        con,
        "SELECT query_id, doc_id, judged_version, current_version, superseded_by, reason, "
        "first_flagged_build FROM relabel_queue ORDER BY query_id, doc_id",
    )
    assert queue == EXPECTED["relabel_queue"]


@pytest.mark.slow
def test_library_build_matches_the_worked_example(tmp_path):
    con = connect(tmp_path / "g.duckdb")
    ingest_all(con, DATA / "logs")
    store_snapshot(con, read_corpus(DATA / "corpus.jsonl"))
    build_golden_set(con)
    assert_matches_expected(con)


@pytest.mark.slow
def test_cli_build_matches_the_worked_example(tmp_path, monkeypatch):
    from goldenset_dagster.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    db = tmp_path / "g.duckdb"
    code = main(["build", "--logs", str(DATA / "logs"), "--corpus", str(DATA / "corpus.jsonl"), "--db", str(db)])
    assert code == 0
    con = connect(db, read_only=True)
    assert_matches_expected(con)
    # The run went through the persistent instance under GOLDENSET_HOME/dagster, as the UI would show it.
    assert (Path(os.environ["GOLDENSET_HOME"]) / "dagster" / "dagster.yaml").exists()
    assert not (tmp_path / "var").exists()


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_ingesting_partitions_in_any_order_gives_the_same_build(tmp_path, order):
    con = connect(tmp_path / "g.duckdb")
    days = ["2026-11-01", "2026-11-02"]
    for day in days if order == "forward" else days[::-1]:
        ingest_all(con, DATA / "logs", [day])
    store_snapshot(con, read_corpus(DATA / "corpus.jsonl"))
    build_golden_set(con)
    assert_matches_expected(con)


def test_a_build_leaves_no_working_table_behind(tmp_path):
    from goldenset.warehouse import temp_objects

    con = connect(tmp_path / "g.duckdb")
    ingest_all(con, DATA / "logs")
    store_snapshot(con, read_corpus(DATA / "corpus.jsonl"))
    build_golden_set(con)
    assert temp_objects(con) == set()
    build_golden_set(con)  # a repeat build takes the other branch
    assert temp_objects(con) == set()
