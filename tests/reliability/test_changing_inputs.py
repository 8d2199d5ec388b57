"""Inputs that change under the pipeline: a corpus that vanishes, is half-written or repeats a
doc_id; log files appended to, rewritten or deleted after they were ingested.

A bad corpus fails the build with one line (exit 1, no traceback) before anything is
ingested, and the last good snapshot and build stay current. A changed log file
replaces its rows, so the warehouse converges to what a build of the final content
from scratch holds (a deleted file's rows stay: the warehouse is the record).
"""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers import verdict, write_log
from tests.reliability.harness import (
    PUBLISHED,
    QUARANTINE,
    copy_world,
    corpus_v1,
    corpus_v2,
    log_day,
    make_world,
    ok,
    read_tables,
    run_here,
    write_corpus,
    write_gz_log,
    write_stage_b,
)

pytestmark = pytest.mark.slow

SNAPSHOTS = {
    "corpus_snapshots": "SELECT fingerprint, taken_at, active_docs, retired_docs, source FROM corpus_snapshots "
    "ORDER BY ALL",
    "corpus_loads": "SELECT * FROM corpus_loads ORDER BY load_id",
}
LOG_ROWS = {
    "log_serves": "SELECT * FROM log_serves ORDER BY ALL",
    "log_serve_items": "SELECT * FROM log_serve_items ORDER BY ALL",
    "log_verdicts": "SELECT * FROM log_verdicts ORDER BY ALL",
    "log_files": "SELECT source_file, content_sha256, lines_total, lines_read, lines_rejected FROM log_files "
    "ORDER BY ALL",
}


def _jsonl(docs) -> bytes:
    return "".join(json.dumps(d) + "\n" for d in docs).encode()


def _a_directory(path):
    path.unlink()
    path.mkdir()  # a sync tool that made a folder where the file was


def _half_written_jsonl(path):
    data = _jsonl(corpus_v2())
    path.write_bytes(data[: len(data) - 25])  # cut inside the last row


def _half_written_gz(path):
    data = gzip.compress(_jsonl(corpus_v2()), mtime=0)
    path.write_bytes(data[: len(data) // 2])


def _half_written_parquet(path):
    pq.write_table(pa.Table.from_pylist(corpus_v2()), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _duplicate_doc_ids(path):
    docs = corpus_v2()
    path.write_bytes(_jsonl(docs[:3] + [dict(docs[1], text="another text")] + docs[3:]))


# Each bad corpus: the file name, how to make it, and the start of the reason ({corpus}: its path).
BAD_CORPORA = [
    pytest.param(
        "corpus.jsonl",
        lambda p: p.unlink(),
        "the corpus file --corpus {corpus} does not exist; point --corpus at the corpus file",
        id="vanished",
    ),
    pytest.param(
        "corpus.jsonl",
        _half_written_jsonl,
        "corpus {corpus} rejected, nothing changed: row 9: invalid JSON",
        id="half-written-jsonl",
    ),
    pytest.param(
        "corpus.jsonl",
        _a_directory,
        "the corpus file --corpus {corpus} is a directory, not a file; point --corpus at the corpus file",
        id="a-directory",
    ),
    pytest.param("corpus.jsonl.gz", _half_written_gz, "corpus {corpus} is unreadable:", id="half-written-jsonl-gz"),
    pytest.param("corpus.parquet", _half_written_parquet, "corpus {corpus} is unreadable:", id="half-written-parquet"),
    pytest.param(
        "corpus.jsonl",
        _duplicate_doc_ids,
        "corpus {corpus} rejected, nothing changed: row 4: doc_id 'd2' appears twice",
        id="duplicate-doc-ids",
    ),
]


@pytest.mark.parametrize(("name", "spoil", "reason"), BAD_CORPORA)
def test_a_bad_corpus_fails_in_one_line_and_changes_nothing(built_a, tmp_path, name, spoil, reason):
    world = copy_world(built_a, tmp_path / "world")
    before = read_tables(world.db, {**PUBLISHED, **QUARANTINE, **SNAPSHOTS, **LOG_ROWS})
    write_stage_b(world)  # new and grown log files: none may be ingested
    corpus = world.root / name
    if name != "corpus.jsonl":
        corpus.write_bytes(b"placeholder")
    spoil(corpus)

    proc = world.build(corpus=corpus)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("Error: " + reason.format(corpus=corpus)), proc.stderr
    assert read_tables(world.db, {**PUBLISHED, **QUARANTINE, **SNAPSHOTS, **LOG_ROWS}) == before

    # status still reads the last good build, and says why the corpus cannot be compared.
    st = json.loads(ok(run_here(world, "status", "--json", "--db", str(world.db), "--corpus", str(corpus))).stdout)
    assert st["build_id"] == 1
    assert st["corpus"]["fingerprint_at_build"] == before["golden_builds"][0][2]
    assert st["corpus"]["drift_since_build"] is None and st["corpus"]["error"].startswith(reason.format(corpus=corpus))


def test_after_a_bad_corpus_a_good_one_builds_as_if_the_bad_one_never_was(built_a, tmp_path, tables_b):
    world = copy_world(built_a, tmp_path / "world")
    write_stage_b(world)
    _duplicate_doc_ids(world.corpus)
    assert world.build().returncode == 1
    write_corpus(world.corpus, corpus_v2())
    ok(world.build())
    assert read_tables(world.db) == tables_b


def _content(db) -> dict:
    """What a warehouse holds of the log and what its latest build published, free of build ids and times."""
    return read_tables(
        db,
        {
            **LOG_ROWS,
            **QUARANTINE,
            "golden_set": PUBLISHED["golden_set"],
            "relabel_queue": "SELECT * EXCLUDE (first_flagged_build) FROM relabel_queue ORDER BY ALL",
            "funnel": "SELECT step_order, step, judgments_dropped, judgments_left, units_left FROM filter_funnel "
            "WHERE build_id = (SELECT max(build_id) FROM golden_builds) ORDER BY step_order",
            "counts": "SELECT * EXCLUDE (build_id, built_at, labels_build_id, computation) "
            "FROM golden_builds WHERE build_id = (SELECT max(build_id) FROM golden_builds)",
        },
    )


def test_log_files_appended_to_rewritten_or_deleted_after_ingestion_converge_to_their_new_content(tmp_path):
    """Day 1's file was read while its writer was mid-line (that half line is quarantined until
    the line is finished), then grows; day 2's is rewritten shorter; day 3's is deleted."""
    world = make_world(tmp_path / "world")
    day1 = log_day(1)
    text = "".join(json.dumps(r) + "\n" for r in day1)
    cut = text.rindex("\n", 0, len(text) - 1) + 1 + 20  # 20 characters into the last line
    grows = world.logs / "dt=2026-11-01" / "part-0001.jsonl"
    grows.parent.mkdir(parents=True)
    grows.write_text(text[:cut], encoding="utf-8")
    shrinks = write_gz_log(world.logs, "2026-11-02", "part-0001.jsonl.gz", log_day(2) + ["{broken"])
    deleted = write_log(world.logs, "2026-11-03", "part-0001.jsonl", log_day(3))
    write_corpus(world.corpus, corpus_v1())
    ok(world.build())
    assert read_tables(world.db, {"r": "SELECT source_file, line, reason FROM rejected_records ORDER BY ALL"})["r"] == [
        ("dt=2026-11-01/part-0001.jsonl", len(day1), "invalid_json"),
        ("dt=2026-11-02/part-0001.jsonl.gz", len(log_day(2)) + 1, "invalid_json"),
    ]

    # Appended: the rest of the half line, more serves and a verdict that overrules an earlier
    # one. Rewritten: fewer serves, other verdicts, the malformed line gone. Deleted: its rows stay.
    appended = log_day(1, n_serves=3, first=12) + [verdict("s1-0", "d4", "wrong", "2026-11-01T23:59:00Z")]
    with grows.open("a", encoding="utf-8") as fh:
        fh.write(text[cut:] + "".join(json.dumps(r) + "\n" for r in appended))
    rewritten = [r for r in log_day(2, n_serves=6) if r.get("verdict") != "noise"]
    write_gz_log(world.logs, "2026-11-02", shrinks.name, rewritten)
    deleted.unlink()
    ok(world.build())

    fresh = make_world(tmp_path / "fresh")
    write_log(fresh.logs, "2026-11-01", "part-0001.jsonl", day1 + appended)
    write_gz_log(fresh.logs, "2026-11-02", "part-0001.jsonl.gz", rewritten)
    write_log(fresh.logs, "2026-11-03", "part-0001.jsonl", log_day(3))
    write_corpus(fresh.corpus, corpus_v1())
    ok(fresh.build())

    assert _content(world.db) == _content(fresh.db)
    assert read_tables(world.db, {"r": "SELECT count(*) FROM rejected_records"})["r"] == [(0,)]
