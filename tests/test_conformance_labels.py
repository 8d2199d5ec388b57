"""The labelling loop's worked example (tests/data/conformance: rubric.yaml, labels/, labels-expected.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from goldenset.build import build_golden_set
from goldenset.corpus import read_corpus
from goldenset.ingest import ingest_all
from goldenset.labelling.ingest import ingest_labels
from goldenset.labelling.rubric import load_rubric
from goldenset.settings import Settings
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from tests.helpers import isolated_settings, json_rows

# Every test here starts from builds made once per module: seconds before the first.
pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data" / "conformance"
EXPECTED = json.loads((DATA / "labels-expected.json").read_text())


def _two_builds_at(db: Path):
    con = connect(db)
    ingest_all(con, DATA / "logs")
    store_snapshot(con, read_corpus(DATA / "corpus.jsonl"))
    build_golden_set(con)
    ingest_labels(con, DATA / "labels", load_rubric(DATA / "rubric.yaml"))
    build_golden_set(con)
    return con


@pytest.fixture(scope="module")
def library_world(tmp_path_factory) -> Path:
    """The warehouse of the library's two builds (logs, then labels), made once for the module."""
    db = tmp_path_factory.mktemp("library-world") / "g.duckdb"
    _two_builds_at(db).close()
    return db


@pytest.fixture
def two_builds(library_world, tmp_path):
    """A connection to the test's own copy of library_world."""
    db = tmp_path / "g.duckdb"
    shutil.copyfile(library_world, db)
    con = connect(db)
    yield con
    con.close()


def assert_matches_labels_expected(con):
    build = json_rows(con, "SELECT * FROM golden_builds ORDER BY build_id DESC LIMIT 1")[0]
    assert build["build_id"] == EXPECTED["build"]
    assert {k: build[k] for k in EXPECTED["golden_builds"]} == EXPECTED["golden_builds"]
    golden = json_rows(con, "SELECT * FROM golden_set ORDER BY query_id, doc_id")
    keys = list(EXPECTED["golden_set"][0])
    assert [{k: row[k] for k in keys} for row in golden] == EXPECTED["golden_set"]
    queue = json_rows(
        con,
        "SELECT query_id, doc_id, judged_version, current_version, superseded_by, reason "
        "FROM relabel_queue ORDER BY query_id, doc_id",
    )
    assert queue == EXPECTED["relabel_queue"]
    rejected = json_rows(
        con,
        "SELECT source_file, line, reason FROM rejected_records "
        "WHERE starts_with(source_file, 'labels/') ORDER BY source_file, line",
    )
    assert rejected == EXPECTED["rejected_records"]


def test_library_build_with_labels_matches_the_worked_example(two_builds):
    assert_matches_labels_expected(two_builds)


def test_label_lines_do_not_count_toward_the_logs_rejected_share(two_builds):
    con = two_builds
    first, second = json_rows(con, "SELECT lines_rejected, label_lines_rejected FROM golden_builds ORDER BY build_id")
    assert first == {"lines_rejected": 2, "label_lines_rejected": 0}
    assert second == {"lines_rejected": 2, "label_lines_rejected": 8}


def test_an_unknown_version_joins_once_a_snapshot_holds_it(two_builds, tmp_path):
    con = two_builds
    corpus = [json.loads(line) for line in (DATA / "corpus.jsonl").read_text().splitlines() if line.strip()]
    for d in corpus:
        if d["doc_id"] == "d2":
            d["version"] = "v1"  # line 15 labels d2 at v1, which no snapshot held so far
    path = tmp_path / "corpus-d2-v1.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in corpus))
    store_snapshot(con, read_corpus(path))
    build_golden_set(con)
    rejected = json_rows(
        con, "SELECT line, reason FROM rejected_records WHERE starts_with(source_file, 'labels/') ORDER BY line"
    )
    assert {"line": 15, "reason": "unknown_document_version"} not in rejected
    d2 = json_rows(con, "SELECT doc_version, label, source FROM golden_set WHERE doc_id = 'd2'")
    # ana's lines 4 (v2) and 15 (v1) share ts 10:00: once both count, the later line is current.
    assert d2 == [{"doc_version": "v1", "label": "relevant", "source": "human"}]


def _cli_build(tmp_path, *extra):
    from goldenset_dagster.cli import main

    return main(
        [
            "build",
            "--logs",
            str(DATA / "logs"),
            "--corpus",
            str(DATA / "corpus.jsonl"),
            "--db",
            str(tmp_path / "g.duckdb"),
            *extra,
        ]
    )


@pytest.fixture(scope="module")
def cli_world(tmp_path_factory) -> Path:
    """The warehouse of `goldenset build` of the logs, then again with --labels and --rubric,
    made once for the module with a test's settings; tests read or extend their own copy."""
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    root = tmp_path_factory.mktemp("cli-world")
    with isolated_settings(root / "goldenset-home"), pytest.MonkeyPatch.context() as mp, set_defs_state_storage(None):
        mp.chdir(root)
        assert _cli_build(root) == 0
        assert _cli_build(root, "--labels", str(DATA / "labels"), "--rubric", str(DATA / "rubric.yaml")) == 0
    return root / "g.duckdb"


@pytest.fixture
def cli_builds(cli_world, tmp_path) -> Path:
    """The test's own copy of cli_world's warehouse, at tmp_path / "g.duckdb"."""
    return Path(shutil.copyfile(cli_world, tmp_path / "g.duckdb"))


def test_cli_build_with_labels_matches_the_worked_example(cli_builds):
    con = connect(cli_builds, read_only=True)
    assert_matches_labels_expected(con)


def test_a_labels_directory_without_a_rubric_is_an_error_naming_the_rubric_file(tmp_path, capsys):
    missing = tmp_path / "nope.yaml"
    assert _cli_build(tmp_path, "--labels", str(DATA / "labels"), "--rubric", str(missing)) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"Error: {missing}: cannot read the rubric file")
    assert not (tmp_path / "g.duckdb").exists() or connect(tmp_path / "g.duckdb", read_only=True).execute(
        "SELECT count(*) FROM golden_builds"
    ).fetchone() == (0,)


def test_an_open_rubric_is_refused_before_anything_is_ingested(tmp_path, capsys):
    from importlib.resources import files

    open_rubric = files("goldenset") / "data" / "open-rubric.yaml"
    assert _cli_build(tmp_path, "--labels", str(DATA / "labels"), "--rubric", str(open_rubric)) == 1
    err = capsys.readouterr().err.strip()
    assert "is open:" in err and "goldenset rubric check" in err


def test_without_a_labels_directory_the_rubric_is_not_read(tmp_path):
    assert _cli_build(tmp_path, "--labels", str(tmp_path / "no-labels"), "--rubric", str(tmp_path / "absent")) == 0


def test_agreement_over_the_warehouse_matches_the_worked_example(two_builds):
    from goldenset.labelling.agreement import agreement_report
    from goldenset.labelling.store import agreement_inputs

    con = two_builds
    inputs = agreement_inputs(con)
    report = agreement_report(inputs.lines, inputs.agent_labels, inputs.human_labels, load_rubric(DATA / "rubric.yaml"))
    assert {k: report[k] for k in EXPECTED["agreement"]} == EXPECTED["agreement"]
    # The conformance README: ana and ben disagree on d1 and d5 (ben: partial, irrelevant).
    assert [(d["doc_id"], d["labels"]) for d in report["disagreements"]] == [
        ("d1", {"ana": "relevant", "ben": "partial", "cy": "relevant"}),
        ("d5", {"ana": "relevant", "ben": "irrelevant"}),
    ]


def test_labels_agreement_json_prints_the_contracts_object(cli_builds, tmp_path, capsys):
    from goldenset_dagster.cli import main

    assert (
        main(
            ["labels", "agreement", "--json", "--db", str(tmp_path / "g.duckdb"), "--rubric", str(DATA / "rubric.yaml")]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    # The contract's three keys, then notes (15.9): none, as both tables have entries.
    assert list(printed) == ["annotators", "agent", "disagreements", "notes"] and printed["notes"] == []
    assert {k: printed[k] for k in EXPECTED["agreement"]} == EXPECTED["agreement"]
    assert main(["labels", "agreement", "--db", str(tmp_path / "g.duckdb"), "--rubric", str(DATA / "rubric.yaml")]) == 0
    table = capsys.readouterr().out
    assert "(human" in table and "disagreements by" in table and "decided_by" in table


def test_the_pool_job_refreshes_the_labelling_queue_after_a_build_with_labels(cli_builds, tmp_path, monkeypatch):
    import dagster as dg

    from goldenset_dagster.definitions import build_definitions

    con = connect(tmp_path / "g.duckdb", read_only=True)
    assert con.execute("SELECT count(*) FROM pool_runs").fetchone() == (0,)  # a build does not pool
    con.close()
    for env, value in (
        ("GOLDENSET_DB", tmp_path / "g.duckdb"),
        ("GOLDENSET_LABELS", DATA / "labels"),
        ("GOLDENSET_RUBRIC", DATA / "rubric.yaml"),
    ):
        monkeypatch.setenv(env, str(value))
    with dg.instance_for_test() as instance:
        result = (
            build_definitions(Settings.resolve())
            .resolve_job_def("pool_labelling_queue")
            .execute_in_process(instance=instance)
        )
    assert result.success
    con = connect(tmp_path / "g.duckdb", read_only=True)
    ((pool_id, build_id),) = con.execute("SELECT pool_id, build_id FROM pool_runs").fetchall()
    assert build_id == 2
    queue = con.execute("SELECT reason, doc_id FROM labelling_queue ORDER BY priority").fetchall()
    # d2 left the relabel queue (ana labelled it at v2); d4 is stale only as superseded, so it is
    # never queued as stale; its successor d5 already has a golden row.
    assert ("stale", "d2") not in queue and ("stale", "d4") not in queue
    assert queue and {reason for reason, _ in queue} == {"pooled"}
    metadata = result.asset_materializations_for_node("labelling_queue")[0].metadata
    assert metadata["labelling_queue"].value == len(queue)
