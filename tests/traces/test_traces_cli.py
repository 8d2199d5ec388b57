"""`goldenset traces import` as the how-to runs it (docs/guides/traces.md, files in docs/examples/traces)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from goldenset.cli.app import main as library_main  # traces import itself (its run: tests/test_command_runs.py)
from goldenset.records import normalise_task, query_id
from goldenset.warehouse import connect
from goldenset_dagster.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "traces"


@pytest.fixture
def project_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_the_how_to_goes_from_spans_to_a_golden_set(project_dir, capsys):
    logs, db = project_dir / "logs", project_dir / "g.duckdb"
    args = ["traces", "import", str(EXAMPLE / "export"), "--format", "otlp-json"]
    args += ["--mapping", str(EXAMPLE / "mapping.yaml"), "--logs", str(logs), "--db", str(db)]
    assert library_main(args) == 0
    assert capsys.readouterr().out.splitlines() == [
        "files read: 2",
        "spans read: 4 (2 not retriever spans)",
        "serves: 2",
        "verdicts: 4",
        "annotations skipped (annotator_kind_LLM): 1",
        "rejected (unknown_document_version): 1",
        "files written: dt=2026-11-28/traces.jsonl, dt=2026-11-29/traces.jsonl",
    ]
    assert library_main(args) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "files written: none (unchanged)"
    assert main(["build", "--logs", str(logs), "--corpus", str(EXAMPLE / "corpus.jsonl"), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["rejects", "--db", str(db), "--file", "traces/*", "--json"]) == 0
    [reject] = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert (reject["source_file"], reject["line"], reject["reason"]) == (
        "traces/traces.jsonl",
        1,
        "unknown_document_version",
    )
    con = connect(db, read_only=True)
    got = con.execute("SELECT query_id, doc_id, doc_version, verdict FROM golden_set ORDER BY ALL").fetchall()
    con.close()
    q1 = query_id("billing-api", normalise_task("Add retries to the webhook sender"))
    q2 = query_id("billing-api", normalise_task("How are refunds issued?"))
    # By hand from the example's annotations: the LLM's "relevant" on pol-2 is not a verdict;
    # pol-3 has no version (no metadata, no snapshot loaded before the span) and is rejected.
    assert got == sorted(
        [
            (q1, "dec-204", "2", "helped"),
            (q1, "dec-9", "1", "noise"),
            (q2, "pol-1", "1", "helped"),
            (q2, "pol-2", "1", "wrong"),
        ]
    )


def test_a_bad_mapping_is_one_line_and_exit_1(project_dir, capsys):
    bad = project_dir / "mapping.yaml"
    bad.write_text("verdicts:\n  kinds: [HUMAN, LLM]\n")
    code = library_main(["traces", "import", str(EXAMPLE / "export"), "--format", "otlp-json", "--mapping", str(bad)])
    err = capsys.readouterr().err.strip()
    assert code == 1 and "\n" not in err
    assert err == (
        f"Error: mapping file {bad}: verdicts.kinds: LLM annotations are never verdicts; "
        "import them as judge label lines with `judge:`"
    )


def test_an_unknown_format_is_a_usage_error(project_dir, capsys):
    assert library_main(["traces", "import", str(EXAMPLE / "export"), "--format", "zipkin"]) == 2
    assert "--format must be one of otlp-json, openinference, got 'zipkin'" in capsys.readouterr().err


def test_every_record_rejected_exits_1_and_says_where_to_look(project_dir, capsys):
    export = project_dir / "export"
    export.mkdir()
    (export / "broken.jsonl").write_text("{not json\n")
    shutil.copy(EXAMPLE / "mapping.yaml", project_dir / "mapping.yaml")
    assert (
        library_main(["traces", "import", str(export), "--format", "otlp-json", "--db", str(project_dir / "g.duckdb")])
        == 1
    )
    assert (
        "nothing imported: all 1 records rejected; see `goldenset rejects --file 'traces/*'`" in capsys.readouterr().err
    )
