"""What a stranger meets first: mistakes get one clear line, state lands under one home."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldenset_dagster.cli import main
from tests.helpers import copy_build, doc, write_corpus, write_log, write_one_serve

DATA = Path(__file__).parent / "data" / "conformance"


def _build(*args: str) -> int:
    return main(["build", *args])


def _err(capsys) -> str:
    return capsys.readouterr().err.strip()


def test_a_log_directory_holding_nothing_the_contract_reads_says_what_it_found(tmp_path, capsys):
    logs = tmp_path / "logs"
    (logs / "date=2026-11-02").mkdir(parents=True)
    (logs / "a.jsonl").write_text("{}\n")
    (logs / "b.jsonl").write_text("{}\n")
    db = tmp_path / "g.duckdb"
    assert _build("--logs", str(logs), "--corpus", str(DATA / "corpus.jsonl"), "--db", str(db)) == 1
    assert _err(capsys) == (
        f"Error: no files match {logs}/dt=YYYY-MM-DD/*.jsonl[.gz]; "
        "found 2 .jsonl files at the top level and a folder date=2026-11-02"
    )
    assert not db.exists()  # refused before anything was made


def test_dt_folders_without_log_files_are_named_in_the_error(tmp_path, capsys):
    logs = tmp_path / "logs"
    (logs / "dt=2026-11-01").mkdir(parents=True)
    (logs / "dt=2026-11-01" / "part-1.json").write_text("{}\n")
    assert _build("--logs", str(logs), "--corpus", str(DATA / "corpus.jsonl"), "--db", str(tmp_path / "g.duckdb")) == 1
    assert _err(capsys).endswith("found dt=2026-11-01 with 1 .json file")


@pytest.mark.parametrize("flag", ["--logs", "--corpus", "--db"])
def test_a_path_of_the_wrong_kind_is_one_line_not_a_traceback(tmp_path, capsys, flag):
    good = {"--logs": str(DATA / "logs"), "--corpus": str(DATA / "corpus.jsonl"), "--db": str(tmp_path / "g.duckdb")}
    wrong = tmp_path / "wrong"
    if flag == "--logs":
        wrong.write_text("not a folder")
    else:
        wrong.mkdir()
    good[flag] = str(wrong)
    assert _build(*[x for kv in good.items() for x in kv]) == 1
    err = _err(capsys)
    assert err.startswith("Error: ") and "\n" not in err and "Traceback" not in err
    assert str(wrong) in err


@pytest.mark.slow
def test_export_onto_a_file_is_one_line(tmp_path, capsys, conformance_build, isolated_home):
    db = tmp_path / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    target = tmp_path / "out.txt"
    target.write_text("x")
    capsys.readouterr()
    assert main(["export", "--out", str(target), "--db", str(db)]) == 1
    assert _err(capsys) == f"Error: --out {target} is a file; give a folder (it is created if missing)"
    assert target.read_text() == "x"


@pytest.mark.slow
def test_an_empty_golden_set_from_real_input_names_the_step_that_emptied_it(tmp_path, capsys):
    logs = tmp_path / "logs"
    write_one_serve(logs, "gone", "fix it", "2026-11-01T09:05:00Z")
    corpus = write_corpus(tmp_path / "c.jsonl", [doc("other")])
    assert _build("--logs", str(logs), "--corpus", str(corpus), "--db", str(tmp_path / "g.duckdb")) == 0
    new_warehouse, err = _err(capsys).split("\n", 1)
    assert new_warehouse == f"new warehouse: {tmp_path / 'g.duckdb'} (none was there before)"
    assert err.startswith("WARNING: the golden set is empty: 1 judgments, all dropped by `retired`")
    assert "--corpus" in err


@pytest.mark.slow
def test_a_blocked_rebuild_names_the_build_that_stays_current(tmp_path, capsys):
    logs = tmp_path / "logs"
    write_one_serve(logs, "d1", "t", "2026-11-01T09:01:00Z")
    corpus = write_corpus(tmp_path / "c.jsonl", [doc("d1")])
    db = tmp_path / "g.duckdb"
    assert _build("--logs", str(logs), "--corpus", str(corpus), "--db", str(db)) == 0
    write_log(logs, "2026-11-02", "part-0001.jsonl", ["junk", "more junk", "and more"])
    capsys.readouterr()
    assert _build("--logs", str(logs), "--corpus", str(corpus), "--db", str(db)) == 1
    err = _err(capsys)
    assert "3 of 5 log lines rejected at ingest (60.0%), above the blocking share 10% (--block-rejected-share" in err
    assert "`goldenset rejects` lists them; build 1 (built " in err and err.endswith("UTC) stays current")


def test_rejects_lists_quarantined_lines_filtered_and_as_json(tmp_path, capsys, conformance_build, isolated_home):
    db = tmp_path / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    capsys.readouterr()
    assert main(["rejects", "--db", str(db), "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(r["source_file"], r["line"], r["reason"]) for r in rows] == [
        ("dt=2026-11-01/part-0001.jsonl", 9, "invalid_field"),
        ("dt=2026-11-01/part-0001.jsonl", 10, "invalid_json"),
        ("dt=2026-11-02/part-0001.jsonl.gz", 7, "conflicting_duplicate_serve"),
    ]
    assert main(["rejects", "--db", str(db), "--reason", "invalid_json", "--json"]) == 0
    assert [json.loads(x)["line"] for x in capsys.readouterr().out.splitlines()] == [10]
    assert main(["rejects", "--db", str(db), "--file", "dt=2026-11-02/*", "--json"]) == 0
    assert [json.loads(x)["line"] for x in capsys.readouterr().out.splitlines()] == [7]
    assert main(["rejects", "--db", str(db), "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 of 3 rejected line(s)" in out and "2 more: raise --limit" in out


def test_status_points_at_goldenset_rejects(tmp_path, capsys, conformance_build, isolated_home):
    db = tmp_path / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    capsys.readouterr()
    assert main(["status", "--db", str(db)]) == 0
    assert "`goldenset rejects` lists them" in capsys.readouterr().out.replace("\n", " ")


@pytest.mark.slow
def test_with_only_goldenset_home_set_everything_lands_under_it(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("GOLDENSET_HOME", str(home))
    (home / "logs").mkdir(parents=True)
    import shutil

    shutil.copytree(DATA / "logs", home / "logs", dirs_exist_ok=True)
    shutil.copyfile(DATA / "corpus.jsonl", home / "corpus.jsonl")
    assert main(["build"]) == 0
    assert (home / "goldenset.duckdb").exists()
    assert (home / "dagster" / "dagster.yaml").exists()
    assert (home / "export" / "latest" / "manifest.json").exists()
    assert list(work.iterdir()) == []
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["build_id"] == 1


def test_rubric_check_through_the_program_exits_1_on_an_open_rubric_and_0_on_a_closed_one(capsys):
    from importlib.resources import files

    data = files("goldenset") / "data"
    assert main(["rubric", "check", str(data / "open-rubric.yaml")]) == 1
    assert "-> no label" in capsys.readouterr().out
    assert main(["rubric", "check", str(data / "support-policies.yaml")]) == 0
    assert capsys.readouterr().out.strip() == "closed: 32 assignments, 3 labels"


@pytest.mark.slow
def test_exporting_a_repeat_build_rewrites_only_the_manifest(tmp_path):
    db = tmp_path / "g.duckdb"
    args = ["--logs", str(DATA / "logs"), "--corpus", str(DATA / "corpus.jsonl"), "--db", str(db)]
    assert _build(*args) == 0
    out = tmp_path / "out"
    assert main(["export", "--out", str(out), "--db", str(db)]) == 0
    before = {p.name: p.stat().st_ino for p in (out / "corpus.jsonl", out / "qrels.trec", out / "qrels" / "test.tsv")}
    assert _build(*args) == 0  # a repeat: same input, same labels
    assert main(["export", "--out", str(out), "--db", str(db)]) == 0
    after = {p.name: p.stat().st_ino for p in (out / "corpus.jsonl", out / "qrels.trec", out / "qrels" / "test.tsv")}
    assert after == before
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["build_id"], manifest["labels_build_id"], manifest["computation"]) == (2, 1, "repeat")
    assert manifest["exported"] == {"queries": 1, "labels": 3, "documents": 6}


def _conformance(*extra: str) -> list[str]:
    return ["--logs", str(DATA / "logs"), "--corpus", str(DATA / "corpus.jsonl"), *extra]


def test_a_db_typo_after_a_first_build_is_refused_naming_the_homes_warehouse(
    tmp_path, capsys, conformance_build, isolated_home
):
    isolated_home.mkdir()
    db = copy_build(conformance_build, isolated_home / "goldenset.duckdb", isolated_home)
    typo = isolated_home / "goldenset.duckbd"
    capsys.readouterr()
    assert _build(*_conformance("--db", str(typo))) == 2
    assert _err(capsys) == (
        f"Error: no warehouse at --db {typo}; this home ({isolated_home}) has {db}: fix --db, "
        "or give --new-warehouse to start a new one there"
    )
    assert not typo.exists()
    # A command that reads or writes an existing warehouse says the same, with how to start one.
    for command in (["status"], ["pool", "--rankers", "lexical"], ["forget", "--logs", "*", "--yes"]):
        assert main([*command, "--db", str(typo)]) == 2, command
        assert _err(capsys) == (
            f"Error: no warehouse at --db {typo}; this home ({isolated_home}) has {db}: fix --db, "
            "or start a new warehouse there with `goldenset build --new-warehouse`"
        ), command
    assert not typo.exists()


def test_a_db_typo_named_by_its_variable_is_refused_naming_the_variable(
    tmp_path, capsys, monkeypatch, conformance_build, isolated_home
):
    isolated_home.mkdir()
    db = copy_build(conformance_build, isolated_home / "goldenset.duckdb", isolated_home)
    monkeypatch.setenv("GOLDENSET_DB", str(tmp_path / "typo.duckdb"))
    capsys.readouterr()
    assert _build(*_conformance()) == 2
    assert _err(capsys) == (
        f"Error: no warehouse at GOLDENSET_DB={tmp_path / 'typo.duckdb'}; this home ({isolated_home}) has {db}: "
        "fix GOLDENSET_DB (or --db), or give --new-warehouse to start a new one there"
    )


@pytest.mark.slow
def test_a_warehouse_outside_the_home_is_the_homes_and_a_second_one_needs_new_warehouse(tmp_path, capsys):
    first, second = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    assert _build(*_conformance("--db", str(first))) == 0  # a new home: its first warehouse is made
    capsys.readouterr()
    assert _build(*_conformance("--db", str(second))) == 2
    assert f"this home ({tmp_path / 'goldenset-home'}) has {first}: fix --db" in _err(capsys)
    assert not second.exists()
    assert _build(*_conformance("--db", str(second), "--new-warehouse")) == 0
    assert f"new warehouse: {second} (none was there before)" in _err(capsys)
    from goldenset.warehouse import home_warehouses

    assert home_warehouses(tmp_path / "goldenset-home") == [first, second]
