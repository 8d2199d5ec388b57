"""Mistakes that must not change the golden set silently, reproduced through the command line (contract 9).

A build against another LOGS folder, a `forget` of a wrong folder's files, and rubric
edits that rename a label or change nothing. Expected counts are derived by hand from the
conformance files (tests/data/conformance), line by line, in the comments.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from goldenset.cli.app import main as library_main  # forget: the library's, not its Dagster run
from goldenset.warehouse import connect
from goldenset_dagster.cli import main
from tests.helpers import copy_build, isolated_settings, ranked, serve, verdict, write_log

# Every test here starts from builds made once per module: seconds before the first.
pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data" / "conformance"
QUERY = "07c6b23f1023f387"  # the conformance log's query 'fix the REFUND window' of project billing


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working directory holding a copy of the conformance logs under `logs/`."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(DATA / "logs", tmp_path / "logs")
    return tmp_path


def _build(db: Path, logs: Path, *extra: str) -> int:
    return main(["build", "--logs", str(logs), "--corpus", str(DATA / "corpus.jsonl"), "--db", str(db), *extra])


def _one(db: Path, sql: str, params=None):
    con = connect(db, read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def _other_team(root: Path) -> Path:
    """Three serves of another team (project ops), each with a helped verdict on a document of the corpus."""
    records = []
    for n in range(3):
        sid = f"ops-{n}"
        records.append(serve(sid, f"2026-11-05T10:0{n}:00Z", f"restart worker {n}", [ranked("d1", 1)], project="ops"))
        records.append(verdict(sid, "d1", "helped", f"2026-11-05T10:0{n}:30Z"))
    write_log(root, "2026-11-05", "part-0001.jsonl", records)
    return root


def test_a_build_against_another_logs_folder_refuses_and_changes_nothing(
    workdir, capsys, conformance_build, isolated_home
):
    db, logs, other = workdir / "g.duckdb", DATA / "logs", _other_team(workdir / "other")
    copy_build(conformance_build, db, isolated_home)  # built from DATA / "logs"
    files_before = _one(db, "SELECT source_file, content_sha256, ingested_at FROM log_files ORDER BY 1")
    capsys.readouterr()

    assert _build(db, other) == 1

    n_files = len(list(logs.glob("dt=*/*")))  # the conformance log: two files
    assert capsys.readouterr().err == (
        f"Error: --logs {other.resolve()} is not the logs folder this warehouse was built from "
        f"({logs.resolve()}, {n_files} file(s) ingested from it); nothing was changed. If the move is meant, "
        "run the build again with --new-source (files with the same path and bytes are recognised, not ingested "
        f"twice); if {logs.resolve()} was the mistake, remove its rows with `goldenset forget --logs GLOB` first\n"
    )
    assert _one(db, "SELECT count(*) FROM golden_builds") == [(1,)]
    assert _one(db, "SELECT source_file, content_sha256, ingested_at FROM log_files ORDER BY 1") == files_before
    assert _one(db, "SELECT count(*) FROM log_serves WHERE project = 'ops'") == [(0,)]


def test_a_copy_of_the_same_logs_elsewhere_is_recognised_and_not_ingested_twice(
    workdir, capsys, conformance_build, isolated_home
):
    db, logs = workdir / "g.duckdb", DATA / "logs"
    copy_build(conformance_build, db, isolated_home)  # built from DATA / "logs"
    files_before = _one(db, "SELECT source_file, content_sha256, ingested_at FROM log_files ORDER BY 1")
    moved = workdir / "archive" / "logs"
    shutil.copytree(logs, moved)  # same relative paths and bytes (a deployment moved to another disk)
    capsys.readouterr()

    assert _build(db, moved) == 0

    err = capsys.readouterr().err
    first = sorted(p.relative_to(logs).as_posix() for p in logs.glob("dt=*/*"))[0]
    assert f"logs root moves from {logs.resolve()} to {moved.resolve()}: it holds the ingested {first} unchanged" in err
    # Not ingested again: same rows, same ingestion time; the build repeats the first one.
    assert _one(db, "SELECT source_file, content_sha256, ingested_at FROM log_files ORDER BY 1") == files_before
    assert _one(db, "SELECT build_id, computation FROM golden_builds ORDER BY 1") == [(1, "full"), (2, "repeat")]
    assert _one(db, "SELECT root, replaced_at IS NULL FROM source_roots WHERE kind = 'logs' ORDER BY recorded_at") == [
        (str(logs.resolve()), False),
        (str(moved.resolve()), True),
    ]


def test_a_folder_sharing_no_ingested_file_refuses_until_new_source(workdir, capsys, conformance_build, isolated_home):
    db, logs = workdir / "g.duckdb", DATA / "logs"
    copy_build(conformance_build, db, isolated_home)  # built from DATA / "logs"
    edited = workdir / "edited"
    shutil.copytree(logs, edited)
    day1 = edited / "dt=2026-11-01" / "part-0001.jsonl"
    day1.write_text(day1.read_text() + "\n")  # one more (blank) line: same path, other bytes
    (edited / "dt=2026-11-02" / "part-0001.jsonl.gz").unlink()  # rotated away
    assert _build(db, edited) == 1
    assert "is not the logs folder this warehouse was built from" in capsys.readouterr().err
    assert _one(db, "SELECT count(*) FROM golden_builds") == [(1,)]

    assert _build(db, edited, "--new-source") == 0

    err = capsys.readouterr().err
    assert f"logs root moves from {logs.resolve()} to {edited.resolve()} (--new-source)" in err
    # The changed file replaced its rows, as any changed file does; the rotated one keeps its rows.
    assert _one(db, "SELECT count(*) FROM log_files WHERE ingested_at > (SELECT min(ingested_at) FROM log_files)") == [
        (1,)
    ]
    assert _one(db, "SELECT count(*) FROM log_files") == [(2,)]


def test_forget_removes_a_wrong_first_folder_and_the_next_build_drops_its_labels(workdir, capsys):
    db, logs, other = workdir / "g.duckdb", workdir / "logs", _other_team(workdir / "other")
    assert _build(db, other) == 0  # the mistake: another team's logs first
    ops = _one(db, "SELECT DISTINCT query_id FROM golden_set WHERE project = 'ops' ORDER BY 1")
    assert len(ops) == 3
    assert _build(db, logs) == 1
    capsys.readouterr()

    assert library_main(["forget", "--logs", "dt=2026-11-05/*", "--db", str(db), "--yes"]) == 0

    # One file of 6 lines (3 serves, 3 verdicts, nothing rejected), as _other_team wrote it.
    assert capsys.readouterr().out == (
        "removed 1 logs file(s), 6 line(s): 3 serve(s), 3 verdict(s), 0 rejected line(s); every build leaves "
        "these files out while they hold the same bytes (`goldenset forget --undo 'dt=2026-11-05/*'` takes it back)\n"
    )
    assert (other / "dt=2026-11-05" / "part-0001.jsonl").exists()  # the file itself is untouched
    # No ingested log file is left, so the recorded root is closed and the real logs go through.
    assert _build(db, logs) == 0
    assert _one(db, "SELECT count(*) FROM golden_set WHERE project = 'ops'") == [(0,)]
    # label_history shows the other team's labels closed by build 2, like any other change.
    closed = _one(
        db,
        "SELECT DISTINCT query_id FROM label_history WHERE valid_to_build = 2 AND list_contains(?, query_id) "
        "ORDER BY 1",
        [[q for (q,) in ops]],
    )
    assert closed == ops
    assert _one(db, "SELECT count(*) FROM golden_set WHERE query_id = ?", [QUERY])[0][0] > 0


def test_forget_without_yes_off_a_terminal_says_what_it_would_remove_and_removes_nothing(
    workdir, capsys, conformance_build, isolated_home
):
    db = workdir / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)  # built from DATA / "logs"
    capsys.readouterr()
    assert library_main(["forget", "--logs", "*", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: would remove 2 logs file(s)") and err.rstrip().endswith(
        "add --yes to do it (stdin is not a terminal to ask)"
    )
    assert _one(db, "SELECT count(*) FROM log_files") == [(2,)]
    assert library_main(["forget", "--labels", "nothing/*", "--db", str(db), "--yes"]) == 0
    assert capsys.readouterr().out == "no ingested labels file matches 'nothing/*'; nothing removed\n"
    assert library_main(["forget", "--db", str(db)]) == 2


def test_forget_removes_exactly_the_files_the_glob_matches(workdir, capsys):
    # One day, two files of two serves each (a serve and its verdict: 2 lines); nothing built.
    from goldenset.ingest import ingest_all

    db, logs = workdir / "g.duckdb", workdir / "two-files"
    for part, sids in (("part-0001.jsonl", ("p1a", "p1b")), ("part-0002.jsonl", ("p2a", "p2b"))):
        records = []
        for i, sid in enumerate(sids):
            records += [
                serve(sid, f"2026-11-05T10:0{i}:00Z", f"task {sid}", [ranked("d1", 1)]),
                verdict(sid, "d1", "helped", f"2026-11-05T10:0{i}:30Z"),
            ]
        write_log(logs, "2026-11-05", part, records)
    con = connect(db)
    try:
        ingest_all(con, logs)
    finally:
        con.close()
    capsys.readouterr()

    assert main(["forget", "--logs", "*/part-0002.jsonl", "--db", str(db), "--yes"]) == 0

    assert capsys.readouterr().out == (
        "removed 1 logs file(s), 4 line(s): 2 serve(s), 2 verdict(s), 0 rejected line(s); every build leaves "
        "these files out while they hold the same bytes (`goldenset forget --undo '*/part-0002.jsonl'` takes it back)\n"
    )
    assert _one(db, "SELECT source_file FROM log_files") == [("dt=2026-11-05/part-0001.jsonl",)]
    assert _one(db, "SELECT serve_id FROM log_serves ORDER BY 1") == [("p1a",), ("p1b",)]


@pytest.fixture(scope="module")
def labelled_build(tmp_path_factory) -> Path:
    """Like conftest's conformance_build, built with the conformance labels and rubric as well
    (--labels tests/data/conformance/labels); tests start from a copy (copy_build). The warehouse
    keeps the rubric's bytes and sha256, not its path: a test's copy of the same file builds on."""
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    root = tmp_path_factory.mktemp("labelled-build")
    with isolated_settings(root / "goldenset-home"), pytest.MonkeyPatch.context() as mp, set_defs_state_storage(None):
        mp.chdir(root)
        assert (
            _build(
                root / "g.duckdb",
                DATA / "logs",
                "--labels",
                str(DATA / "labels"),
                "--rubric",
                str(DATA / "rubric.yaml"),
            )
            == 0
        )
    return root


def _labelled(workdir: Path) -> tuple[Path, Path, Path]:
    db, rubric = workdir / "g.duckdb", workdir / "rubric.yaml"
    shutil.copy(DATA / "rubric.yaml", rubric)
    shutil.copytree(DATA / "labels", workdir / "labels")
    return db, rubric, workdir / "labels"


def _labelled_copy(workdir: Path, template: Path, home: Path) -> tuple[Path, Path, Path]:
    """A copy of labelled_build, with the rubric copied to workdir (the file a test edits); the
    logs and labels folders it was built from are the conformance ones (never edited)."""
    db, rubric = workdir / "g.duckdb", workdir / "rubric.yaml"
    shutil.copy(DATA / "rubric.yaml", rubric)
    copy_build(template, db, home)
    return db, rubric, DATA / "labels"


def test_renaming_a_label_in_the_rubric_refuses_with_the_lines_it_would_invalidate(
    workdir, capsys, labelled_build, isolated_home
):
    db, rubric, labels = _labelled_copy(workdir, labelled_build, isolated_home)
    old_sha = _one(db, "SELECT rubric_sha256 FROM golden_builds")[0][0]
    rejected_before = _one(db, "SELECT count(*) FROM label_rejects")
    rubric.write_text(rubric.read_text().replace("partial:", "partly:  "))
    capsys.readouterr()

    assert _build(db, DATA / "logs", "--labels", str(labels), "--rubric", str(rubric)) == 1

    import hashlib

    new_sha = hashlib.sha256(rubric.read_bytes()).hexdigest()
    err = capsys.readouterr().err.splitlines()
    # Lines 2 and 8 are the accepted `partial` lines (ben on d1 and d6); line 17 says partial too but was
    # already rejected. Stored lines: 14 accepted (1-13, 15) + 4 rejected for a rubric reason (16-19).
    assert err[0] == (
        f"Error: the rubric {rubric} changed ({old_sha[:12]} -> {new_sha[:12]}): 2 label line(s) become invalid, "
        "0 label(s) change grade, 0 rejected line(s) become valid (of 18 stored lines); nothing was changed. "
        "Restore the rubric, or run the build again with --accept-rubric-change to go on. They are:"
    )
    bad = "rejected: label 'partial' is not one of relevant, partly, irrelevant"
    assert err[1:] == [
        f"  dt=2026-11-03/part-0001.jsonl:2 query {QUERY} doc d1 by ben: partial (grade 1) -> {bad}",
        f"  dt=2026-11-03/part-0001.jsonl:8 query {QUERY} doc d6 by ben: partial (grade 1) -> {bad}",
    ]
    assert _one(db, "SELECT count(*) FROM golden_builds") == [(1,)]
    assert _one(db, "SELECT DISTINCT rubric_sha256 FROM label_files") == [(old_sha,)]

    assert _build(db, DATA / "logs", "--labels", str(labels), "--rubric", str(rubric), "--accept-rubric-change") == 0
    assert _one(db, "SELECT count(*) FROM label_rejects")[0][0] == rejected_before[0][0] + 2
    assert _one(db, "SELECT rubric_sha256, name FROM rubrics ORDER BY first_used_at") == [
        (old_sha, "support-policies"),
        (new_sha, "support-policies"),
    ]


def test_a_rubric_edit_that_changes_no_label_goes_through_with_one_line(workdir, capsys, labelled_build, isolated_home):
    db, rubric, labels = _labelled_copy(workdir, labelled_build, isolated_home)
    rubric.write_text(rubric.read_text().replace("using only the published", "using only the current published"))
    capsys.readouterr()
    assert _build(db, DATA / "logs", "--labels", str(labels), "--rubric", str(rubric)) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("the rubric")]
    assert len(lines) == 1 and lines[0].endswith(": no label changes (18 stored label lines checked again)")


def test_rejected_label_lines_are_a_warning_of_the_build_and_status_shows_the_rubric(workdir, capsys):
    db, rubric, labels = _labelled(workdir)
    assert _build(db, workdir / "logs", "--labels", str(labels), "--rubric", str(rubric)) == 0
    # labels-expected.json: lines 15 (unknown_document_version), 16-17 (label_contradicts_rubric),
    # 18-19 (invalid_field), 20 (missing_field), 21 (unknown_event), 22 (invalid_json).
    assert (
        "WARNING: 8 label line(s) rejected (invalid_field 2, label_contradicts_rubric 2, invalid_json 1, "
        "missing_field 1, unknown_document_version 1, unknown_event 1); `goldenset rejects` lists them"
    ) in capsys.readouterr().err.splitlines()
    assert main(["status", "--db", str(db), "--json"]) == 0
    import json

    st = json.loads(capsys.readouterr().out)
    import hashlib

    assert st["rubric"] == {"name": "support-policies", "sha256": hashlib.sha256(rubric.read_bytes()).hexdigest()}
    assert st["roots"] == {"labels": str(labels.resolve()), "logs": str((workdir / "logs").resolve())}


def test_forget_sticks_while_the_files_stay_and_a_changed_one_is_refused_until_ingest_forgotten(
    workdir, capsys, conformance_build, isolated_home
):
    db, logs = workdir / "g.duckdb", workdir / "logs"
    copy_build(conformance_build, db, isolated_home)  # built from DATA / "logs"; workdir/logs holds the same files
    day1 = "dt=2026-11-01/part-0001.jsonl"
    lines = len((logs / day1).read_text().splitlines())
    serves, verdicts = _one(db, "SELECT serves, verdicts FROM log_files WHERE source_file = ?", [day1])[0]
    capsys.readouterr()
    assert main(["forget", "--logs", "dt=2026-11-01/*", "--db", str(db), "--yes"]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"removed 1 logs file(s), {lines} line(s): {serves} serve(s), {verdicts} verdict(s), ")
    assert said.endswith(
        "; every build leaves these files out while they hold the same bytes "
        "(`goldenset forget --undo 'dt=2026-11-01/*'` takes it back)\n"
    )
    # The file stays in LOGS, and the next build leaves it out.
    assert _build(db, logs) == 0
    assert _one(db, "SELECT source_file FROM log_files") == [("dt=2026-11-02/part-0001.jsonl.gz",)]
    assert _one(db, "SELECT kind, source_file FROM forgotten_files") == [("logs", day1)]
    builds = _one(db, "SELECT count(*) FROM golden_builds")

    # Its bytes change: the build refuses before it writes anything, naming it.
    (logs / day1).write_text((logs / day1).read_text() + "\n")
    capsys.readouterr()
    assert _build(db, logs) == 1
    assert capsys.readouterr().err == (
        f"Error: 1 logs file(s) forgotten by `goldenset forget` changed since: {day1}; nothing was changed. "
        "Run the build again with --ingest-forgotten to ingest their new content (`goldenset forget --logs GLOB` "
        "forgets it again), or move them out of the logs folder\n"
    )
    assert _one(db, "SELECT count(*) FROM golden_builds") == builds
    assert _build(db, logs, "--ingest-forgotten") == 0
    assert (
        f"1 logs file(s) forgotten by `goldenset forget` changed since: {day1}; ingesting their new content "
        "(--ingest-forgotten)"
    ) in capsys.readouterr().err
    assert _one(db, "SELECT count(*) FROM log_files") == [(2,)]
    assert _one(db, "SELECT count(*) FROM forgotten_files") == [(0,)]


def test_forget_undo_takes_the_forget_back_and_says_what(workdir, capsys, conformance_build, isolated_home):
    db = workdir / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)
    assert main(["forget", "--logs", "*", "--db", str(db), "--yes"]) == 0
    assert _one(db, "SELECT count(*) FROM forgotten_files WHERE kind = 'logs'") == [(2,)]
    capsys.readouterr()
    assert main(["forget", "--undo", "dt=2026-11-01/*", "--db", str(db)]) == 0
    assert capsys.readouterr().out == (
        "took back the forget of 1 file(s) (logs 1); the next build ingests them again where they are\n"
    )
    assert _one(db, "SELECT source_file FROM forgotten_files") == [("dt=2026-11-02/part-0001.jsonl.gz",)]
    assert main(["forget", "--undo", "nothing/*", "--db", str(db)]) == 0
    assert capsys.readouterr().out == "no forgotten file matches 'nothing/*'; nothing taken back\n"
    assert main(["forget", "--undo", "*", "--logs", "*", "--db", str(db)]) == 2


def test_another_labels_folder_sharing_no_ingested_file_refuses(workdir, capsys, labelled_build, isolated_home):
    db, rubric, labels = _labelled_copy(workdir, labelled_build, isolated_home)
    other = workdir / "other-labels"
    shutil.copytree(labels, other)
    part = other / "dt=2026-11-03" / "part-0001.jsonl"
    # The same path and size, other bytes (a note edited): no file the warehouse ingested is there unchanged.
    part.write_text(part.read_text().replace("states 14 days", "states 15 days"))
    roots = _one(db, "SELECT kind, root, recorded_at, replaced_at FROM source_roots ORDER BY ALL")
    capsys.readouterr()

    assert _build(db, DATA / "logs", "--labels", str(other), "--rubric", str(rubric)) == 1

    assert capsys.readouterr().err == (
        f"Error: --labels {other.resolve()} is not the labels folder this warehouse was built from "
        f"({labels.resolve()}, 1 file(s) ingested from it); nothing was changed. If the move is meant, run the "
        "build again with --new-source (files with the same path and bytes are recognised, not ingested twice); "
        f"if {labels.resolve()} was the mistake, remove its rows with `goldenset forget --labels GLOB` first\n"
    )
    assert _one(db, "SELECT count(*) FROM golden_builds") == [(1,)]
    assert _one(db, "SELECT kind, root, recorded_at, replaced_at FROM source_roots ORDER BY ALL") == roots


def test_a_rubric_edit_that_changes_a_grade_refuses_with_the_count_and_the_line(
    workdir, capsys, labelled_build, isolated_home
):
    db, rubric, labels = _labelled_copy(workdir, labelled_build, isolated_home)
    old_sha = _one(db, "SELECT rubric_sha256 FROM golden_builds")[0][0]
    rubric.write_text(rubric.read_text().replace("partial:    {grade: 1,", "partial:    {grade: 2,"))
    capsys.readouterr()

    assert _build(db, DATA / "logs", "--labels", str(labels), "--rubric", str(rubric)) == 1

    import hashlib

    new_sha = hashlib.sha256(rubric.read_bytes()).hexdigest()
    # The two accepted `partial` lines (2 and 8, ben on d1 and d6) keep their label and change grade;
    # line 17 (partial, rejected as contradicting the rubric) stays rejected.
    assert capsys.readouterr().err.splitlines() == [
        f"Error: the rubric {rubric} changed ({old_sha[:12]} -> {new_sha[:12]}): 0 label line(s) become invalid, "
        "2 label(s) change grade, 0 rejected line(s) become valid (of 18 stored lines); nothing was changed. "
        "Restore the rubric, or run the build again with --accept-rubric-change to go on. They are:",
        f"  dt=2026-11-03/part-0001.jsonl:2 query {QUERY} doc d1 by ben: partial (grade 1) -> partial (grade 2)",
        f"  dt=2026-11-03/part-0001.jsonl:8 query {QUERY} doc d6 by ben: partial (grade 1) -> partial (grade 2)",
    ]
    assert _one(db, "SELECT count(*) FROM golden_builds") == [(1,)]


def test_a_rubric_edit_counts_lines_that_become_valid_and_lists_the_changes_in_file_and_line_order(
    workdir, labelled_build, isolated_home
):
    from goldenset.labelling.ingest import ingest_labels
    from goldenset.labelling.rubric import load_rubric
    from goldenset.labelling.rubric_change import rubric_change

    db, rubric, labels = _labelled_copy(workdir, labelled_build, isolated_home)
    # A second label file, a day later: ben's partial on d3, accepted under the rubric in use.
    more = workdir / "labels"
    shutil.copytree(labels, more)
    (more / "dt=2026-11-04").mkdir()
    line = (
        f'{{"event": "label", "query_id": "{QUERY}", "doc_id": "d3", "doc_version": "v1", "label": "partial", '
        '"decided_by": "coverage", "annotator": "ben", "rubric": "support-policies", "ts": "2026-11-04T10:00:00Z"}\n'
    )
    (more / "dt=2026-11-04" / "part-0001.jsonl").write_text(line)
    # The edit: `partial` goes and `irrelevant` takes any failing dimension, coverage included (still
    # closed: all pass is relevant, any fail irrelevant).
    edited = rubric.read_text().replace(
        "  partial:    {grade: 1, pass: [answerability, authority, recency, entity], fail: [coverage]}\n", ""
    )
    edited = edited.replace(
        "any_fail: [answerability, authority, recency, entity]",
        "any_fail: [answerability, authority, recency, coverage, entity]",
    )
    con = connect(db)
    try:
        ingest_labels(con, more, load_rubric(rubric))
        rubric.write_text(edited)
        change = rubric_change(con, load_rubric(rubric))
        (line16,) = con.execute("SELECT detail FROM label_rejects WHERE line = 16").fetchone()
    finally:
        con.close()

    assert change is not None
    # Stored: 15 accepted (lines 1-13 and 15, and the new file's line 1) and 4 rejected for a rubric
    # reason (16-19). The three partial lines become invalid; line 16 (irrelevant decided by coverage,
    # which contradicted the old rule) becomes valid; lines 17-19 stay rejected.
    assert (change.become_invalid, change.grade_changes, change.become_valid, change.lines_checked) == (3, 0, 1, 19)
    gone = "rejected: label 'partial' is not one of relevant, irrelevant"
    assert [c.text() for c in change.sample] == [
        f"dt=2026-11-03/part-0001.jsonl:2 query {QUERY} doc d1 by ben: partial (grade 1) -> {gone}",
        f"dt=2026-11-03/part-0001.jsonl:8 query {QUERY} doc d6 by ben: partial (grade 1) -> {gone}",
        f"dt=2026-11-03/part-0001.jsonl:16 query {QUERY} doc d1 by ana: rejected: {line16} -> irrelevant (grade 0)",
        f"dt=2026-11-04/part-0001.jsonl:1 query {QUERY} doc d3 by ben: partial (grade 1) -> {gone}",
    ]


def test_a_root_is_recorded_only_for_a_kind_with_an_ingested_file(workdir, conformance_build, isolated_home):
    from goldenset.sources import check_roots, record_roots

    db = workdir / "g.duckdb"
    copy_build(conformance_build, db, isolated_home)  # logs ingested, no label file
    empty, other = workdir / "labels", workdir / "other-labels"
    empty.mkdir()
    other.mkdir()
    con = connect(db)
    try:
        record_roots(con, {"logs": DATA / "logs", "labels": empty})
        roots = con.execute("SELECT kind, root FROM source_roots WHERE replaced_at IS NULL ORDER BY kind").fetchall()
        # No label file was ingested from the empty LABELS, so it is not this warehouse's: another passes.
        moves = check_roots(con, {"logs": DATA / "logs", "labels": other})
    finally:
        con.close()
    assert roots == [("logs", str((DATA / "logs").resolve()))]
    assert moves == []
