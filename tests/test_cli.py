"""The command line: exit codes, one-line messages, and docs generated from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from goldenset_dagster.cli import main
from goldenset_dagster.docs import stale
from tests.helpers import copy_build, doc, write_corpus, write_one_serve

DATA = Path(__file__).parent / "data" / "conformance"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project_dir(tmp_path, monkeypatch):
    """A working directory with no DAGSTER_HOME, so the CLI makes var/dagster there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    for env in ("GOLDENSET_LOGS", "GOLDENSET_CORPUS", "GOLDENSET_DB"):
        monkeypatch.delenv(env, raising=False)
    return tmp_path


def _build(db, logs=DATA / "logs", corpus=DATA / "corpus.jsonl"):
    return main(["build", "--logs", str(logs), "--corpus", str(corpus), "--db", str(db)])


@pytest.mark.slow
def test_status_json_reports_age_drift_funnel_and_queue(project_dir, capsys, conformance_build, isolated_home):
    db = project_dir / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    capsys.readouterr()
    assert main(["status", "--db", str(db), "--corpus", str(DATA / "corpus.jsonl"), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["build_id"] == 1 and st["age_days"] < 1
    assert st["corpus"]["drift_since_build"] == 0.0
    assert [s["judgments_left"] for s in st["funnel"]] == [8, 7, 6, 5, 3]
    assert st["rejected_records"] == 3 and st["orphan_verdicts"] == 1 and st["counts"]["relabel_queue"] == 2


def test_status_shows_drift_after_the_corpus_moved(project_dir, capsys, conformance_build, isolated_home):
    db = project_dir / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    moved = [json.loads(line) for line in (DATA / "corpus.jsonl").read_text().splitlines()]
    moved[0]["text"] = "Refunds are accepted within 30 days."
    corpus = write_corpus(project_dir / "moved.jsonl", moved)
    capsys.readouterr()
    assert main(["status", "--db", str(db), "--corpus", str(corpus), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["corpus"]["drift_since_build"] == pytest.approx(1 / 6)


@pytest.mark.slow
def test_env_variables_supply_the_paths(project_dir, monkeypatch):
    monkeypatch.setenv("GOLDENSET_LOGS", str(DATA / "logs"))
    monkeypatch.setenv("GOLDENSET_CORPUS", str(DATA / "corpus.jsonl"))
    monkeypatch.setenv("GOLDENSET_DB", str(project_dir / "env.duckdb"))
    assert main(["build"]) == 0
    assert (project_dir / "env.duckdb").exists()


def test_status_before_any_build_says_what_to_run(project_dir, capsys):
    assert main(["status", "--db", str(project_dir / "none.duckdb")]) == 1
    assert "run `goldenset build` first" in capsys.readouterr().err


def test_a_missing_corpus_fails_with_one_line_and_changes_nothing(
    project_dir, capsys, conformance_build, isolated_home
):
    db = project_dir / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    capsys.readouterr()
    assert _build(db, corpus=project_dir / "missing.jsonl") == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        f"Error: the corpus file --corpus {project_dir / 'missing.jsonl'} does not exist; point --corpus at the corpus file"
    )
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM golden_builds").fetchall() == [(1,)]
    assert con.execute("SELECT count(*) FROM corpus_loads").fetchall() == [(1,)]


def test_an_invalid_corpus_names_its_first_bad_rows(project_dir, capsys):
    corpus = write_corpus(
        project_dir / "bad.jsonl",
        [doc("d1"), {"doc_id": "d2", "version": "", "status": "active", "text": ""}, doc("d1")],
    )
    assert _build(project_dir / "g.duckdb", corpus=corpus) == 1
    err = capsys.readouterr().err
    assert "row 2: d2: version must be a non-empty string" in err and "row 3: doc_id 'd1' appears twice" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_blocked_build_exits_1_saying_why(project_dir, capsys):
    logs = project_dir / "logs"
    write_one_serve(logs, "d1", "t", "2026-11-01T09:01:00Z", "garbage", "more garbage")
    corpus = write_corpus(project_dir / "c.jsonl", [doc("d1")])
    assert _build(project_dir / "g.duckdb", logs=logs, corpus=corpus) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"new warehouse: {project_dir / 'g.duckdb'} (none was there before)",
        "Error: build not published: 2 of 4 log lines rejected at ingest (50.0%), above the blocking share 10% "
        "(--block-rejected-share changes it); `goldenset rejects` lists them; no build has been published yet",
    ]


def test_a_db_whose_folder_does_not_exist_is_refused_naming_the_folder(project_dir, capsys):
    db = project_dir / "nonexistent-dir" / "x.duckdb"
    assert _build(db) == 1
    err = capsys.readouterr().err
    assert err == (
        f"Error: the folder of the warehouse --db {db} does not exist: {db.parent}; create it first, or fix --db\n"
    )
    assert not db.parent.exists()


@pytest.mark.slow
def test_the_first_build_says_it_made_a_new_warehouse_and_later_builds_do_not(project_dir, capsys):
    db = project_dir / "g.duckdb"
    assert _build(db) == 0
    assert f"new warehouse: {db} (none was there before)" in capsys.readouterr().err.splitlines()
    assert _build(db) == 0
    assert "new warehouse" not in capsys.readouterr().err


def test_status_during_the_first_build_says_a_build_is_running(project_dir, capsys):
    from goldenset import build_marker
    from goldenset.warehouse import connect

    db = project_dir / "g.duckdb"
    connect(db).close()  # the first build has made the warehouse and not yet published
    capsys.readouterr()
    with build_marker.marking(db):
        assert main(["status", "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"Error: the first build is running (PID {os.getpid()}, since ")
    assert "run `goldenset status` again then" in err
    assert not build_marker.marker_path(db).exists()  # removed when the build ends
    # A marker left by a process that died is no build in progress.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    build_marker.marker_path(db).write_text(
        json.dumps({"pid": int(dead.stdout), "since": "2026-12-02T10:00:00+00:00"}), encoding="utf-8"
    )
    assert main(["status", "--db", str(db)]) == 1
    assert capsys.readouterr().err == "Error: no golden set has been built yet: run `goldenset build` first\n"


def test_export_writes_beir_and_trec_files(project_dir, capsys, conformance_build, isolated_home):
    db = project_dir / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    out = project_dir / "out"
    assert main(["export", "--out", str(out), "--db", str(db)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["build_id"] == 1 and manifest["corpus_active_docs"] == 6
    assert [s["step"] for s in manifest["funnel"]] == ["judged", "always_served", "retired", "repeats", "no_positive"]
    assert (out / "qrels" / "test.tsv").read_text().splitlines() == [
        "query-id\tcorpus-id\tscore",
        "07c6b23f1023f387\td1\t1",
        "07c6b23f1023f387\td2\t1",
        "07c6b23f1023f387\td4\t1",
    ]
    assert (out / "qrels.trec").read_text().splitlines()[0] == "07c6b23f1023f387 0 d1 1"
    queries = [json.loads(x) for x in (out / "queries.jsonl").read_text().splitlines()]
    assert queries == [{"_id": "07c6b23f1023f387", "text": "fix the REFUND window", "metadata": {"project": "billing"}}]
    corpus = [json.loads(x)["_id"] for x in (out / "corpus.jsonl").read_text().splitlines()]
    assert corpus == ["d1", "d2", "d4", "d5", "d6", "rule-1"]


def test_export_of_a_build_that_does_not_exist_is_refused(project_dir, capsys, conformance_build, isolated_home):
    db = project_dir / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    assert main(["export", "--out", str(project_dir / "o"), "--build", "7", "--db", str(db)]) == 1
    assert "build 7 does not exist" in capsys.readouterr().err


def test_wrong_usage_exits_2(project_dir):
    assert main(["build", "--no-such-flag"]) == 2
    assert main(["export"]) == 2  # --out is required


def test_a_held_database_is_reported_busy_with_the_holder_pid(project_dir, capsys, conformance_build, isolated_home):
    db = project_dir / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        capsys.readouterr()
        assert main(["status", "--db", str(db)]) == 1
        assert capsys.readouterr().err.strip() == (
            f"Error: database busy: held by PID {holder.pid}; try again when it finishes"
        )
        assert _build(db) == 1
        assert f"database busy: held by PID {holder.pid}" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()


def test_the_reference_pages_are_generated_from_the_cli_the_schema_and_the_settings():
    assert stale(ROOT) == [], "generated docs are stale: run `python -m goldenset_dagster.docs`"


def test_every_command_has_a_section_in_the_cli_reference():
    import typer.main

    from goldenset_dagster.cli import app

    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="goldenset")
    for name in root.list_commands(ctx):
        assert f"## `goldenset {name}`" in page, name


def test_a_missing_or_empty_log_directory_is_an_error_that_builds_nothing(project_dir, capsys):
    db = project_dir / "g.duckdb"
    assert _build(db, logs=project_dir / "nope") == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: the log directory --logs {project_dir / 'nope'} does not exist; point --logs at it"
    )
    (project_dir / "empty").mkdir()
    assert _build(db, logs=project_dir / "empty") == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: no files match {project_dir / 'empty'}/dt=YYYY-MM-DD/*.jsonl[.gz]; found nothing at all"
    )
    assert not db.exists()  # refused before anything was made


@pytest.mark.slow
def test_a_read_only_command_waits_for_the_writer_naming_its_pid(project_dir, capsys, conformance_build, isolated_home):
    db = project_dir / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    # The holder lets go a moment after it took the file; the waiter allows far longer.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
            "time.sleep(1.5); c.close()",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        capsys.readouterr()
        assert main(["status", "--db", str(db), "--wait", "120"]) == 0
        captured = capsys.readouterr()
        assert f"waiting for PID {holder.pid} to finish writing {db}" in captured.err.replace("\n", " ")
        assert "golden set: build 1" in captured.out
    finally:
        holder.kill()
        holder.wait()


def test_version_is_the_packaged_version_from_pyproject(capsys):
    import tomllib

    import goldenset

    expected = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert goldenset.__version__ == expected
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"goldenset {expected}\n"
    installed = subprocess.run(
        [sys.executable, "-m", "goldenset", "--version"], capture_output=True, text=True, check=True
    )
    assert installed.stdout == f"goldenset {expected}\n"
