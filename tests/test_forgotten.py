"""Forgotten files stay out of every ingestion while their bytes stay the same (contract 9.6).

Direct log ingestion, staged days and label files each leave a forgotten file out, count it,
and refuse one whose bytes changed since it was forgotten; `take_back` lets it in again. The
command line's side (what `forget` and `build` say) is in tests/test_refusals.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from goldenset import forgotten
from goldenset.errors import InputMoved
from goldenset.ingest import ingest_all
from goldenset.labelling.ingest import ingest_labels
from goldenset.sources import forget_files
from goldenset.warehouse import connect
from tests.helpers import ingest_staged, write_day
from tests.labelling.label_lines import RUBRIC, label_line

DAY1, DAY2 = "2026-11-01", "2026-11-02"


def _count(con, sql: str) -> int:
    return con.execute(sql).fetchall()[0][0]


@pytest.fixture
def logs(tmp_path) -> Path:
    root = tmp_path / "logs"
    write_day(root, DAY1, "part-0001.jsonl", 3, "a")
    write_day(root, DAY2, "part-0001.jsonl", 2, "b")
    return root


def test_a_forgotten_log_file_left_in_place_is_not_ingested_again_until_taken_back(tmp_path, logs):
    con = connect(tmp_path / "g.duckdb")
    try:
        ingest_all(con, logs)
        forget_files(con, "logs", f"dt={DAY1}/*")
        reports = {r.dt: r for r in ingest_all(con, logs)}
        assert (reports[DAY1].files_forgotten, reports[DAY1].files_ingested) == (1, 0)
        assert _count(con, "SELECT count(*) FROM log_serves") == 2  # day 2's two serves only
        with con.cursor() as cur:
            assert forgotten.take_back(cur, "dt=*/part-0001.jsonl") == {"logs": [f"dt={DAY1}/part-0001.jsonl"]}
        reports = {r.dt: r for r in ingest_all(con, logs)}
        assert (reports[DAY1].files_forgotten, reports[DAY1].files_ingested) == (0, 1)
        assert _count(con, "SELECT count(*) FROM log_serves") == 5
    finally:
        con.close()


def test_a_forgotten_log_file_whose_bytes_changed_refuses_before_anything_is_read(tmp_path, logs):
    con = connect(tmp_path / "g.duckdb")
    try:
        ingest_all(con, logs)
        forget_files(con, "logs", f"dt={DAY1}/*")
        write_day(logs, DAY2, "part-0002.jsonl", 1, "c")  # a new file, which must not be read either
        path = logs / f"dt={DAY1}" / "part-0001.jsonl"
        path.write_text(path.read_text().replace('"noise"', '"wrong"'))  # same size, other bytes
        with pytest.raises(InputMoved) as refused:
            ingest_all(con, logs)
        assert str(refused.value).startswith(
            f"1 logs file(s) forgotten by `goldenset forget` changed since: dt={DAY1}/part-0001.jsonl; nothing was "
            "changed."
        )
        assert _count(con, "SELECT count(*) FROM log_files") == 1
    finally:
        con.close()


def test_a_staged_day_leaves_a_forgotten_file_out_and_refuses_a_changed_one(tmp_path, logs):
    db, staging = tmp_path / "s.duckdb", tmp_path / "staging"
    ingest_staged(db, logs, staging)
    con = connect(db)
    try:
        forget_files(con, "logs", f"dt={DAY1}/*")
    finally:
        con.close()
    write_day(logs, DAY2, "part-0002.jsonl", 1, "c")
    _, reports = ingest_staged(db, logs, staging)
    assert [(r.dt, r.files_forgotten, r.files_ingested) for r in reports] == [(DAY1, 1, 0), (DAY2, 0, 1)]
    con = connect(db)
    try:
        assert _count(con, "SELECT count(*) FROM log_files") == 2
    finally:
        con.close()
    write_day(logs, DAY1, "part-0001.jsonl", 4, "a")  # grown
    with pytest.raises(InputMoved, match=f"changed since: dt={DAY1}/part-0001.jsonl;"):
        ingest_staged(db, logs, staging)


def test_a_forgotten_label_file_is_left_out_and_a_changed_one_refuses(tmp_path):
    import json

    labels = tmp_path / "labels"
    folder = labels / f"dt={DAY1}"
    folder.mkdir(parents=True)
    line = label_line("q1", "d1", "v1", 2, "ana", f"{DAY1}T10:00:00Z")
    (folder / "ana.jsonl").write_text(json.dumps(line) + "\n")
    con = connect(tmp_path / "g.duckdb")
    try:
        ingest_labels(con, labels, RUBRIC)
        forget_files(con, "labels", "*")
        [report] = ingest_labels(con, labels, RUBRIC)
        assert (report.files_forgotten, report.files_ingested) == (1, 0)
        assert _count(con, "SELECT count(*) FROM label_files") == 0
        (folder / "ana.jsonl").write_text(json.dumps(line) + "\n\n")
        with pytest.raises(InputMoved, match=f"1 labels file\\(s\\) forgotten .* changed since: dt={DAY1}/ana.jsonl;"):
            ingest_labels(con, labels, RUBRIC)
    finally:
        con.close()
