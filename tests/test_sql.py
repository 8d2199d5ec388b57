"""`goldenset sql`: read-only SQL on the warehouse that never stands in a build's way (contract 17.3).

The warehouse is a copy of the conformance build (conftest's conformance_build), one build;
expected values are read from it through plain DuckDB. A build holding the writer in another
process is in tests/reliability/test_concurrency.py.
"""

from __future__ import annotations

import io
import json
import os
import threading
import time

import duckdb
import pytest

from goldenset import build_marker
from goldenset.cli.sql import Prompt
from goldenset.errors import DatabaseBusy
from goldenset.sql import run
from goldenset_dagster.cli import main
from tests.helpers import copy_build


@pytest.fixture
def db(tmp_path, conformance_build, isolated_home):
    return copy_build(conformance_build, tmp_path / "g.duckdb", isolated_home)


def _plain(db, sql: str):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_query_prints_as_a_table_csv_or_json(db, capsys):
    (built_at,) = _plain(db, "SELECT built_at FROM golden_builds")[0]
    query = "SELECT build_id, trigger, built_at, NULL AS nothing FROM golden_builds"
    assert main(["sql", query, "--db", str(db), "--format", "csv"]) == 0
    assert capsys.readouterr().out == f"build_id,trigger,built_at,nothing\n1,manual,{built_at.isoformat(sep=' ')},\n"
    assert main(["sql", query, "--db", str(db), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"build_id": 1, "trigger": "manual", "built_at": str(built_at), "nothing": None}
    ]
    assert main(["sql", query, "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split("┃")[1:-1] == [" build_id ", " trigger ", " built_at                   ", " nothing "]
    assert lines[3].split("│")[1:-1] == ["        1 ", " manual  ", f" {built_at.isoformat(sep=' ')} ", " NULL    "]
    assert lines[-1] == "1 row(s)"


@pytest.mark.parametrize(
    ("statement", "refusal"),
    [
        ("DELETE FROM golden_builds", 'Cannot execute statement of type "DELETE"'),
        ("COPY (SELECT 1) TO 'out.csv'", "file system operations are disabled"),
        ("ATTACH 'other.duckdb' AS other", "file system operations are disabled"),
        ("SET enable_external_access = true", "the configuration has been locked"),
        ("SELEC 1", "syntax error"),
    ],
    ids=["write", "copy-to", "attach", "unlock", "parse"],
)
def test_what_would_write_or_leave_the_warehouse_is_one_line_and_exit_1(
    db, tmp_path, monkeypatch, capsys, statement, refusal
):
    monkeypatch.chdir(tmp_path)
    assert main(["sql", statement, "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: the query failed: ") and refusal in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "other.duckdb").exists()
    assert _plain(db, "SELECT count(*) FROM golden_builds") == [(1,)]


def test_a_bad_format_is_a_usage_error(db):
    assert main(["sql", "SELECT 1", "--db", str(db), "--format", "xml"]) == 2


def test_the_prompt_lists_tables_and_views_runs_statements_and_completes_names(db, capsys):
    results = []
    script = io.StringIO("SELECT count(*) AS n\n  FROM golden_set;\n.tables\nSELEC 1;\n.quit\n")
    shown = io.StringIO()
    prompt = Prompt(db, 0.0, lambda sql: results.append(run(db, sql, wait=0.0).rows), stdin=script, stdout=shown)
    prompt.cmdloop()
    text = shown.getvalue()
    tables = [n for (n,) in _plain(db, "SELECT table_name FROM duckdb_tables() ORDER BY 1")]
    views = [n for (n,) in _plain(db, "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1")]
    assert text.count(f"tables: {', '.join(tables)}\nviews: {', '.join(views)}\n") == 2  # at start, then .tables
    assert results == [_plain(db, "SELECT count(*) FROM golden_set")]  # the bad statement printed an error
    assert "the query failed" in capsys.readouterr().err
    assert prompt.completedefault("golden_s") == ["golden_set", "golden_set_by_build"]
    assert "valid_from_build" in prompt.completedefault("valid_f")
    assert prompt.completedefault("SEL") == ["SELECT"]


def test_a_build_starting_during_a_query_interrupts_it_and_the_file_is_free_for_the_build(db):
    marker = build_marker.marker_path(db)
    raised: list[BaseException] = []

    def query() -> None:
        try:
            run(db, "SELECT count(*) FROM range(1000000000000) a", wait=0.5, notify=lambda m: None)
        except BaseException as exc:  # noqa: BLE001 (what the thread raised is the test's to check)
            raised.append(exc)

    thread = threading.Thread(target=query, daemon=True)  # (a query never interrupted would run for hours)
    thread.start()
    time.sleep(0.3)  # the query is running (it would take hours)
    started = time.monotonic()
    marker.write_text(json.dumps({"pid": os.getpid(), "since": "2026-12-05T10:00:00"}))  # a build begins
    try:
        # The build's writer gets in while the statement waits for the build to end.
        deadline = time.monotonic() + 5
        while True:
            try:
                duckdb.connect(str(db)).close()  # (in this process: refused while the reader's connection is open)
                break
            except (duckdb.IOException, duckdb.ConnectionException):
                assert time.monotonic() < deadline, "the warehouse stayed open for reading"
                time.sleep(0.05)
        thread.join(timeout=10)
    finally:
        marker.unlink()
    assert time.monotonic() - started < 5
    assert len(raised) == 1 and isinstance(raised[0], DatabaseBusy)
    assert str(raised[0]).startswith(
        f"database busy: a build is running (PID {os.getpid()}, since 2026-12-05 10:00:00 UTC)"
    )
