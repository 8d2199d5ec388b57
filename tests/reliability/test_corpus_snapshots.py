"""The corpus side, held to the contract (section 2) by computations written here, not imported.

The fingerprint and drift are recomputed in this file from their definitions with
hashlib; `corpus_snapshots` holds one row per distinct fingerprint; the three file
formats read to the same snapshot; and the real reindex sensor, evaluated and its
runs executed, rebuilds once per change of fingerprint (A to B to A is two rebuilds).
"""

from __future__ import annotations

import gzip
import json
import os
import random
from datetime import datetime
from pathlib import Path

import dagster as dg
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from goldenset.corpus import active_signature, drift, read_corpus
from goldenset.errors import CorpusError
from goldenset.settings import Settings
from goldenset.snapshots import snapshot_corpus
from goldenset.warehouse import connect
from tests.helpers import doc, write_one_serve
from tests.reliability.contract import contract_drift, contract_fingerprint
from tests.reliability.harness import copy_world, make_world, ok, run_here, write_corpus, write_stage_a

# doc_ids whose code-point order differs from UTF-16's (U+FF5E before U+1F600) and from
# a case-insensitive one; an active document with empty text; retired ones with and
# without text.
DOCS = [
    doc("a"),
    doc("B"),
    doc("é"),
    doc("\uff5e-wave"),
    doc("😀-grin"),
    doc("z", "2024-01-01"),
    doc("empty", text=""),
    doc("old", status="retired", text=""),
    doc("older", status="retired"),
    doc("moved", superseded_by="a", title="Moved"),
]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _write_gz(path: Path, rows: list[dict]) -> Path:
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode("utf-8"), mtime=0))
    return path


def _write_parquet(path: Path, rows: list[dict]) -> Path:
    pq.write_table(
        pa.Table.from_pylist(
            rows,
            schema=pa.schema(
                [
                    ("doc_id", pa.string()),
                    ("version", pa.string()),
                    ("status", pa.string()),
                    ("title", pa.string()),
                    ("text", pa.string()),
                    ("superseded_by", pa.string()),
                ]
            ),
        ),
        path,
    )
    return path


WRITERS = {
    "jsonl": (".jsonl", _write_jsonl),
    "jsonl.gz": (".jsonl.gz", _write_gz),
    "parquet": (".parquet", _write_parquet),
}


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_the_fingerprint_is_the_contracts_formula_in_every_format(tmp_path, fmt):
    suffix, write = WRITERS[fmt]
    snapshot = read_corpus(write(tmp_path / f"corpus{suffix}", DOCS))
    assert snapshot.fingerprint == contract_fingerprint(DOCS)
    assert len(snapshot.fingerprint) == 64 and snapshot.fingerprint == snapshot.fingerprint.lower()


def _variants():
    """Corpora that must keep DOCS' fingerprint: line order, titles, retired documents, superseded_by."""
    shuffled = DOCS[:]
    random.Random(7).shuffle(shuffled)
    yield "line order", shuffled
    yield "titles", [dict(d, title=f"another title of {d['doc_id']}") for d in DOCS]
    yield "no titles", [{k: v for k, v in d.items() if k != "title"} for d in DOCS]
    yield (
        "retired text and version",
        [dict(d, text="changed", version="v9") if d["status"] == "retired" else d for d in DOCS],
    )
    yield "a retired document more", DOCS + [doc("gone", status="retired")]
    yield "a retired document less", [d for d in DOCS if d["doc_id"] != "older"]
    yield "superseded_by", [dict(d, superseded_by=None) for d in DOCS]


@pytest.mark.parametrize(("what", "rows"), list(_variants()), ids=[w for w, _ in _variants()])
def test_the_fingerprint_ignores_line_order_titles_and_retired_documents(tmp_path, what, rows):
    assert read_corpus(_write_jsonl(tmp_path / "c.jsonl", rows)).fingerprint == contract_fingerprint(DOCS)


def _changes():
    """Corpora whose active content differs from DOCS."""
    yield "a version", [dict(d, version="v2") if d["doc_id"] == "z" else d for d in DOCS]
    yield "a text", [dict(d, text=d["text"] + " ") if d["doc_id"] == "a" else d for d in DOCS]
    yield "an active document more", DOCS + [doc("new")]
    yield "an active document retired", [dict(d, status="retired") if d["doc_id"] == "B" else d for d in DOCS]
    yield "a doc_id's case", [dict(d, doc_id="b") if d["doc_id"] == "B" else d for d in DOCS]


@pytest.mark.parametrize(("what", "rows"), list(_changes()), ids=[w for w, _ in _changes()])
def test_the_fingerprint_changes_with_active_content(tmp_path, what, rows):
    fp = read_corpus(_write_jsonl(tmp_path / "c.jsonl", rows)).fingerprint
    assert fp == contract_fingerprint(rows) != contract_fingerprint(DOCS)


def _signature(rows):
    """The library's view of a corpus's active documents, from rows that are never written to a file."""
    from goldenset.corpus import CorpusSnapshot, Document

    return active_signature(
        CorpusSnapshot(
            tuple(
                Document(
                    r["doc_id"],
                    r["version"],
                    r["status"],
                    r.get("text") or "",
                    r.get("title"),
                    None,
                    r.get("superseded_by"),
                )
                for r in rows
            ),
            "test",
        )
    )


A, B, C, D = doc("a"), doc("b"), doc("c"), doc("d")
DRIFTS = [
    ("added", [A, B], [A, B, C], 0.5),
    ("removed", [A, B], [A], 0.5),
    ("version changed", [A, B], [A, doc("b", "v2")], 0.5),
    ("text changed", [A, B], [A, doc("b", text="new text")], 0.5),
    ("added, removed and changed", [A, B, C, D], [A, doc("b", "v2"), doc("e")], 1.0),
    ("more added than the older held", [A], [B, C, D], 4.0),
    ("unchanged", [A, B], [B, A], 0.0),
    (
        "titles and retired documents only",
        [A, doc("r", status="retired")],
        [doc("a", title="other"), doc("r", "v9", status="retired", text="x"), doc("s", status="retired")],
        0.0,
    ),
    ("both empty", [], [], 0.0),
    ("only retired on both sides", [doc("r", status="retired")], [doc("s", status="retired")], 0.0),
    ("only the older is empty", [], [A, B], 1.0),
    ("the newer is empty", [A, B], [], 1.0),
    ("every active document retired", [A, B], [doc("a", status="retired"), doc("b", status="retired")], 1.0),
]


@pytest.mark.parametrize(("what", "older", "newer", "expected"), DRIFTS, ids=[d[0] for d in DRIFTS])
def test_drift_follows_the_contracts_formula_at_its_edges(what, older, newer, expected):
    assert contract_drift(older, newer) == expected
    assert drift(_signature(older), _signature(newer)) == pytest.approx(expected, abs=0)


@pytest.mark.slow
def test_status_reports_drift_from_the_builds_corpus_to_the_corpus_file_now(built_b, tmp_path):
    """Build 2 used corpus v2; the file now moves on in three ways."""
    from tests.reliability.harness import corpus_v2

    v2 = corpus_v2()
    now = [d for d in v2 if d["doc_id"] != "d1"] + [doc("d9")]
    now = [dict(d, version="v3") if d["doc_id"] == "d4" else d for d in now]
    moved = write_corpus(tmp_path / "moved.jsonl", now)
    st = json.loads(ok(run_here(built_b, "status", "--json", "--db", str(built_b.db), "--corpus", str(moved))).stdout)
    assert st["corpus"]["drift_since_build"] == pytest.approx(contract_drift(v2, now))
    assert st["corpus"]["fingerprint_at_build"] == contract_fingerprint(v2)
    assert st["corpus"]["fingerprint_now"] == contract_fingerprint(now)


def _snapshot_rows(con):
    return con.execute(
        "SELECT fingerprint, taken_at, active_docs, retired_docs, source FROM corpus_snapshots ORDER BY taken_at"
    ).fetchall()


def test_corpus_snapshots_hold_one_row_per_distinct_fingerprint_first_seen_with_counts_and_source(tmp_path):
    rows_a = DOCS
    rows_b = [dict(d, version="v2") if d["doc_id"] == "a" else d for d in DOCS]
    a1 = _write_jsonl(tmp_path / "a.jsonl", rows_a)
    b1 = _write_parquet(tmp_path / "b.parquet", rows_b)
    a2 = _write_gz(tmp_path / "a-again.jsonl.gz", [dict(d, title="retitled") for d in rows_a])
    bad = _write_jsonl(tmp_path / "bad.jsonl", rows_a + [rows_a[0]])
    t = [datetime(2026, 11, day, 12, 0) for day in range(1, 6)]
    fp_a, fp_b = contract_fingerprint(rows_a), contract_fingerprint(rows_b)
    counts = (8, 2)  # DOCS: eight active, two retired

    con = connect(tmp_path / "g.duckdb")
    try:
        first = snapshot_corpus(con, a1, now=t[0])
        assert (first.fingerprint, first.new_fingerprint, first.drift_from_previous) == (fp_a, True, None)
        assert _snapshot_rows(con) == [(fp_a, t[0], *counts, str(a1))]

        second = snapshot_corpus(con, b1, now=t[1])
        assert (second.fingerprint, second.new_fingerprint) == (fp_b, True)
        assert second.drift_from_previous == pytest.approx(contract_drift(rows_a, rows_b))
        # A again, from another file and format with other titles: no new row; A keeps when and
        # where it was first seen.
        third = snapshot_corpus(con, a2, now=t[2])
        assert (third.fingerprint, third.new_fingerprint) == (fp_a, False)
        with pytest.raises(CorpusError):
            snapshot_corpus(con, bad, now=t[3])
        snapshot_corpus(con, b1, now=t[4])
        assert _snapshot_rows(con) == [(fp_a, t[0], *counts, str(a1)), (fp_b, t[1], *counts, str(b1))]
        # Every good read is a load; the current one is the latest good read, not the bad one.
        loads = con.execute("SELECT fingerprint, loaded_at FROM corpus_loads ORDER BY load_id").fetchall()
        assert loads == [(fp_a, t[0]), (fp_b, t[1]), (fp_a, t[2]), (fp_b, t[4])]
    finally:
        con.close()


@pytest.mark.slow
def test_jsonl_gz_and_parquet_corpora_build_exactly_what_the_same_jsonl_builds(built_a, tmp_path):
    """Through real builds: the same documents in another format are the same snapshot content
    (the next build is a `repeat`: nothing it reads differs); another content is a new snapshot.
    Build 1 is stage A's, of corpus v1 as JSON Lines."""
    from tests.reliability.harness import corpus_v1, corpus_v2

    world = copy_world(built_a, tmp_path / "world")
    v1, v2 = corpus_v1(), corpus_v2()
    corpora = [
        built_a.corpus,
        _write_parquet(world.root / "v1.parquet", v1),
        _write_gz(world.root / "v2.jsonl.gz", v2),
        _write_parquet(world.root / "v2.parquet", v2),
    ]
    assert [json.loads(line) for line in built_a.corpus.read_text(encoding="utf-8").splitlines()] == v1
    for corpus in corpora[1:]:
        ok(world.build(corpus=corpus))
    con = duckdb.connect(str(world.db), read_only=True)
    try:
        builds = con.execute(
            "SELECT build_id, corpus_fingerprint, corpus_active_docs, computation, labels_build_id "
            "FROM golden_builds ORDER BY build_id"
        ).fetchall()
        snapshots = con.execute("SELECT fingerprint, source FROM corpus_snapshots ORDER BY taken_at").fetchall()
        stale = con.execute("SELECT count(*) FROM golden_set WHERE stale_reason IS NOT NULL").fetchone()[0]
    finally:
        con.close()
    fp1, fp2 = contract_fingerprint(v1), contract_fingerprint(v2)
    active1, active2 = (sum(d["status"] == "active" for d in rows) for rows in (v1, v2))
    assert builds == [
        (1, fp1, active1, "full", 1),
        (2, fp1, active1, "repeat", 1),
        (3, fp2, active2, "full", 3),
        (4, fp2, active2, "repeat", 3),
    ]
    assert snapshots == [(fp1, str(corpora[0].resolve())), (fp2, str(corpora[2].resolve()))]
    assert stale > 0  # corpus v2 moved documents on under labels of v1's build


# --- the real reindex sensor ---------------------------------------------------------------


def _evaluate(instance, resources, defs, cursor):
    from goldenset_dagster.sensors import corpus_reindex_sensor

    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources, definitions=defs) as ctx:
        result = corpus_reindex_sensor(ctx)
        if isinstance(result, dg.SkipReason):
            return ctx.cursor, [], result.skip_message
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result.cursor, result.run_requests, None


def _rewrite(path: Path, rows: list[dict]) -> None:
    before = path.stat().st_mtime_ns if path.exists() else 0
    write_corpus(path, rows)
    # A new mtime, even on a file system with a coarse clock: the sensor's first test is (size, mtime).
    os.utime(path, ns=(before + 10**9, before + 10**9))


@pytest.mark.slow
def test_the_real_sensor_rebuilds_once_per_fingerprint_change_a_to_b_to_a_is_two_rebuilds(tmp_path, monkeypatch):
    from goldenset_dagster.definitions import build_definitions
    from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource
    from tests.reliability.harness import corpus_v1, corpus_v2

    world = make_world(tmp_path / "world")
    write_stage_a(world)
    a, b = corpus_v1(), corpus_v2()
    retitled_a = [dict(d, title="retitled") for d in a]
    for name, value in (
        ("GOLDENSET_LOGS", world.logs),
        ("GOLDENSET_CORPUS", world.corpus),
        ("GOLDENSET_DB", world.db),
        ("GOLDENSET_LABELS", world.root / "no-labels"),
    ):
        monkeypatch.setenv(name, str(value))
    defs = build_definitions(Settings.resolve())
    job = defs.resolve_job_def("refresh_golden_set")
    resources = {
        "corpus_source": CorpusSource(path=str(world.corpus)),
        "logs": LogSource(path=str(world.logs)),
        "labels": LabelSource(path=str(world.root / "no-labels")),
    }

    steps = [
        # Turned on before the corpus exists: the first evaluation records that and starts nothing
        # (it would start nothing on a corpus either, contract section 18), so A is the first change.
        ("no corpus yet", "gone", False),
        ("A", a, True),
        ("A unchanged", None, False),  # size and mtime as before: not even read
        ("B", b, True),
        ("B touched", b, False),  # new mtime, same content
        ("A again", retitled_a, True),  # A's fingerprint (titles do not count): a change all the same
        ("A half-written", "broken", False),
        ("A vanished", "gone", False),
        ("A restored", a, False),  # the fingerprint the cursor holds: nothing to do
    ]
    cursor, keys, executed = None, [], 0
    with dg.instance_for_test() as instance:
        for what, rows, rebuild in steps:
            if rows == "gone":
                world.corpus.unlink(missing_ok=True)
            elif rows == "broken":
                world.corpus.write_text(world.corpus.read_text()[:-30], encoding="utf-8")
                os.utime(world.corpus, ns=(world.corpus.stat().st_mtime_ns + 10**9,) * 2)
            elif rows is not None:
                _rewrite(world.corpus, rows)
            cursor, requests, skipped = _evaluate(instance, resources, defs, cursor)
            assert len(requests) == (1 if rebuild else 0), (what, skipped)
            for request in requests:
                keys.append(request.run_key)
                # The run says which sensor started it (section 18); the build records the reindex.
                assert request.tags["goldenset/trigger"] == "sensor:corpus_reindex_sensor"
                result = job.execute_in_process(
                    instance=instance, run_config=request.run_config, tags=request.tags, raise_on_error=False
                )
                assert result.success, what
                executed += 1
    assert executed == 3 and len(set(keys)) == 3

    con = duckdb.connect(str(world.db), read_only=True)
    try:
        builds = con.execute("SELECT trigger, corpus_fingerprint FROM golden_builds ORDER BY build_id").fetchall()
        snapshots = con.execute("SELECT fingerprint FROM corpus_snapshots ORDER BY taken_at").fetchall()
        same = con.execute(
            "SELECT count(*) FROM (SELECT * EXCLUDE (build_id) FROM golden_set_by_build "
            "WHERE build_id = 1 EXCEPT ALL SELECT * EXCLUDE (build_id) FROM golden_set_by_build "
            "WHERE build_id = 3)"
        ).fetchone()[0]
    finally:
        con.close()
    fp_a, fp_b = contract_fingerprint(a), contract_fingerprint(b)
    assert builds == [("reindex", fp_a), ("reindex", fp_b), ("reindex", fp_a)]
    assert snapshots == [(fp_a,), (fp_b,)]
    assert same == 0  # back on A, the golden set is A's again


def _aged(path: Path, seconds: float = 60.0) -> Path:
    """Set the file's mtime out of the racy tick."""
    t = path.stat().st_mtime - seconds
    os.utime(path, (t, t))
    return path


def _counting_reads(monkeypatch) -> list[str]:
    import goldenset.corpus as corpus_module

    reads: list[str] = []
    real = corpus_module._read_corpus

    def read(path):
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(corpus_module, "_read_corpus", read)
    return reads


def test_within_one_command_an_unchanged_corpus_file_is_read_once_and_a_changed_one_again(tmp_path, monkeypatch):
    from goldenset.corpus import remembering_reads

    reads = _counting_reads(monkeypatch)
    path = _aged(_write_jsonl(tmp_path / "corpus.jsonl", DOCS))
    with remembering_reads():
        first = read_corpus(path)
        assert read_corpus(path) is first and len(reads) == 1
        # Another size: read again, and what it says now is what is returned.
        _aged(_write_jsonl(path, DOCS[:-1]))
        assert len(read_corpus(path).documents) == len(first.documents) - 1 and len(reads) == 2
        # Same size, another mtime: read again.
        os.utime(path, (path.stat().st_mtime - 5, path.stat().st_mtime - 5))
        read_corpus(path)
        assert len(reads) == 3
        # Written in the racy tick: never taken as unchanged.
        _write_jsonl(path, DOCS)
        read_corpus(path)
        read_corpus(path)
        assert len(reads) == 5
    # Outside the block nothing is kept.
    _aged(path)
    read_corpus(path)
    read_corpus(path)
    assert len(reads) == 7


def test_a_bad_corpus_is_never_remembered(tmp_path, monkeypatch):
    from goldenset.corpus import remembering_reads

    reads = _counting_reads(monkeypatch)
    path = _aged(_write_jsonl(tmp_path / "corpus.jsonl", [{"doc_id": "a"}]))
    with remembering_reads():
        for _ in range(2):
            with pytest.raises(CorpusError):
                read_corpus(path)
    assert len(reads) == 2


@pytest.mark.slow
def test_a_full_build_reads_the_corpus_once(tmp_path, monkeypatch):
    from goldenset_dagster.cli import main

    reads = _counting_reads(monkeypatch)
    monkeypatch.setenv("GOLDENSET_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    corpus = _aged(_write_jsonl(tmp_path / "corpus.jsonl", DOCS))
    logs = tmp_path / "logs"
    write_one_serve(logs, "a", "fix it", "2026-11-01T09:05:00Z")
    assert main(["build", "--logs", str(logs), "--corpus", str(corpus), "--db", str(tmp_path / "g.duckdb")]) == 0
    # The check before ingestion and the snapshot step share one read (each used to read it).
    assert reads == [str(corpus)]
