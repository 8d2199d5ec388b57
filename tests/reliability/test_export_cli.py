"""`goldenset export` through the CLI: the latest build or build N, every file, every manifest field.

The world is the session's stage B world (build 1 on corpus v1, build 2 on v2), so an
export of build 1 must come out of the warehouse alone: the corpus file on disk is v2.
"""

from __future__ import annotations

import json
from datetime import datetime

import duckdb
import pytest

from tests.reliability.contract import contract_fingerprint
from tests.reliability.harness import copy_world, corpus_v1, corpus_v2, killed, ok

# Every test here reads a world or a study run built once per module: seconds before the first.
pytestmark = pytest.mark.slow

# Contract section 5's manifest fields, and the ones goldenset/export.py adds.
MANIFEST_FIELDS = {
    "build_id",
    "built_at",
    "trigger",
    "computation",
    "corpus_fingerprint",
    "corpus_active_docs",
    "counts",
    "labels_by_source",
    "funnel",
    "labels_build_id",
    "exported",
}
CONTRACT_COUNTS = {
    "n_queries",
    "n_projects",
    "n_helped",
    "n_noise",
    "n_wrong",
    "unjudged_items",
    "orphan_verdicts",
    "unserved_item_verdicts",
}


def _query(db, sql: str, params=()) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute(sql, list(params))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()


def _export(world, out, *build: str):
    return ok(world.run("export", "--out", str(out), "--db", str(world.db), *build))


def _files(out) -> dict:
    lines = lambda name: (out / name).read_text(encoding="utf-8").split("\n")  # noqa: E731
    tsv, trec = lines("qrels/test.tsv"), lines("qrels.trec")
    assert tsv[0] == "query-id\tcorpus-id\tscore" and tsv[-1] == "" and trec[-1] == ""
    return {
        "manifest": json.loads((out / "manifest.json").read_text(encoding="utf-8")),
        "queries": [json.loads(x) for x in lines("queries.jsonl") if x],
        "corpus": [json.loads(x) for x in lines("corpus.jsonl") if x],
        "tsv": [tuple(x.split("\t")) for x in tsv[1:-1]],
        "trec": [tuple(x.split(" ")) for x in trec[:-1]],
    }


def _expected_labels(db, build_id: int):
    rows = _query(
        db, "SELECT query_id, project, task, doc_id, grade FROM golden_set_by_build WHERE build_id = ?", [build_id]
    )
    assert rows
    return rows


def _corpus_records(rows):
    """corpus.jsonl as contract section 5 describes it, from the corpus rows themselves."""
    return sorted(
        (
            {"_id": d["doc_id"], "title": d.get("title") or "", "text": d["text"]}
            for d in rows
            if d["status"] == "active"
        ),
        key=lambda r: r["_id"],
    )


def _assert_export_is_build(world, out, build_id: int, labels_of: int, corpus_rows) -> dict:
    files = _files(out)
    labels = _expected_labels(world.db, labels_of)
    assert sorted(files["tsv"]) == sorted((r["query_id"], r["doc_id"], str(r["grade"])) for r in labels)
    assert sorted(files["trec"]) == sorted((r["query_id"], "0", r["doc_id"], str(r["grade"])) for r in labels)
    queries = {(r["query_id"], r["task"], r["project"]) for r in labels}
    assert sorted((q["_id"], q["text"], q["metadata"]["project"]) for q in files["queries"]) == sorted(queries)
    assert sorted(files["corpus"], key=lambda r: r["_id"]) == _corpus_records(corpus_rows)

    m = files["manifest"]
    [build] = _query(world.db, "SELECT * FROM golden_builds WHERE build_id = ?", [build_id])
    assert set(m) == MANIFEST_FIELDS
    assert m["build_id"] == build_id
    assert datetime.fromisoformat(m["built_at"].removesuffix("Z")) == build["built_at"] and m["built_at"].endswith("Z")
    assert m["trigger"] == build["trigger"] == "manual"
    assert m["computation"] == build["computation"]
    assert m["corpus_fingerprint"] == build["corpus_fingerprint"] == contract_fingerprint(corpus_rows)
    assert m["corpus_active_docs"] == sum(d["status"] == "active" for d in corpus_rows)
    assert set(m["counts"]) >= CONTRACT_COUNTS
    assert m["counts"] == {name: build[name] for name in m["counts"]}
    assert m["counts"]["n_queries"] == len(queries)
    assert m["counts"]["n_helped"] + m["counts"]["n_noise"] + m["counts"]["n_wrong"] == len(labels)
    assert m["labels_by_source"] == {"log": len(labels), "human": 0, "judge": 0}
    assert m["labels_build_id"] == build["labels_build_id"]
    assert m["exported"] == {"queries": len(queries), "labels": len(labels), "documents": len(files["corpus"])}
    funnel = _query(
        world.db,
        "SELECT step, judgments_dropped, judgments_left, units_left, judgments_kept_by_human, "
        "units_kept_by_human FROM filter_funnel WHERE build_id = ? ORDER BY step_order",
        [build_id],
    )
    assert m["funnel"] == funnel
    assert [s["step"] for s in m["funnel"]] == ["judged", "always_served", "retired", "repeats", "no_positive"]
    assert m["funnel"][-1]["judgments_left"] == len(labels)
    return m


def test_export_build_n_writes_that_builds_set_and_corpus_from_the_warehouse(built_b, tmp_path):
    out = tmp_path / "build-1"
    done = _export(built_b, out, "--build", "1")
    m = _assert_export_is_build(built_b, out, 1, 1, corpus_v1())
    assert done.stdout.startswith(f"exported build 1 to {out}: {m['counts']['n_queries']} queries, ")


def test_export_without_build_writes_the_latest_build(built_b, tmp_path):
    out = tmp_path / "latest"
    _export(built_b, out)
    _assert_export_is_build(built_b, out, 2, 2, corpus_v2())
    # Writing again over the same folder gives the same files.
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    _export(built_b, out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_export_of_a_repeat_build_writes_the_labels_it_repeats_under_its_own_id(built_b, tmp_path):
    world = copy_world(built_b, tmp_path / "world")
    ok(world.build())
    out = tmp_path / "repeat"
    _export(world, out)
    m = _assert_export_is_build(world, out, 3, 2, corpus_v2())
    assert m["computation"] == "repeat"


@pytest.mark.parametrize("build", ["9", "0", "-1"])
def test_export_of_a_build_that_does_not_exist_says_which_is_the_latest_in_one_line(built_b, tmp_path, build):
    out = tmp_path / "none"
    proc = built_b.run("export", "--out", str(out), "--db", str(built_b.db), "--build", build)
    assert proc.returncode == 1
    assert proc.stderr == f"Error: build {build} does not exist; the latest is 2\n"
    assert not out.exists()


def _visible(out) -> dict:
    return {
        str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")
    }


def test_an_export_killed_before_it_publishes_leaves_the_previous_export_whole_and_the_next_one_tidies_up(
    built_b, tmp_path
):
    out = tmp_path / "export"
    _export(built_b, out, "--build", "1")
    before = _visible(out)
    assert set(before) == {"manifest.json", "queries.jsonl", "corpus.jsonl", "qrels/test.tsv", "qrels.trec"}

    proc = built_b.run(
        "export", "--out", str(out), "--db", str(built_b.db), GOLDENSET_FAILPOINT="export.before_publish"
    )
    assert killed(proc), proc.stderr
    assert _visible(out) == before  # every file of build 1's export, byte for byte
    assert any(p.name.startswith(".") for p in out.rglob("*.tmp"))  # what the killed export had written

    _export(built_b, out)
    _assert_export_is_build(built_b, out, 2, 2, corpus_v2())
    assert not list(out.rglob("*.tmp"))
