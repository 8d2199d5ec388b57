"""The pool and the labelling queue (contract 7.4) on hand-made builds, and `goldenset pool`.

The world and its fixed rankers are described in pool_rankers.py; every expected row below
is worked out by hand from that table. One test runs the real reference retriever (lexical,
dense, core) on the benchmark's tiny corpus.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "bench"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from pool_rankers import FAILING, FIRST, Q1, Q2, Q3, SECOND, World  # noqa: E402

from goldenset import warehouse  # noqa: E402
from goldenset.cli.app import main  # noqa: E402
from goldenset.cli.pool import app as pool_app  # noqa: E402
from goldenset.errors import GoldensetError, NoBuild, UsageError  # noqa: E402
from goldenset.labelling.pool import queue_summary, run_pool  # noqa: E402

POOLED_AT = datetime(2026, 11, 30, 8, 0, 0)
QUEUE_COLUMNS = "pool_id, query_id, doc_id, doc_version, reason, rankers, best_rank, priority, pooled_at"


@pytest.fixture
def world(tmp_path, pool_worlds) -> World:
    """The hand-made build of pool_rankers.py, with ana's current labels on e."""
    return pool_worlds(tmp_path / "w")


def pool(world: World, rankers=(FIRST, SECOND), depth=5, now=POOLED_AT):
    con = warehouse.connect(world.db)
    try:
        return run_pool(con, rankers=rankers, depth=depth, index_dir=world.index_dir, now=now)
    finally:
        con.close()


def queue(world: World) -> list[tuple]:
    con = warehouse.connect(world.db, read_only=True)
    try:
        rows = con.execute(f"SELECT {QUEUE_COLUMNS} FROM labelling_queue ORDER BY priority").fetchall()
    finally:
        con.close()
    return [(*r[:5], tuple(r[5]), *r[6:]) for r in rows]


def _ties_by_query(*rows):
    # Equal best rank and ranker count: query_id, then doc_id, decides.
    return sorted(rows, key=lambda r: (r[0], r[1]))


def expected_queue() -> list[tuple]:
    """The queue of the world under FIRST, SECOND at depth 5, by hand (see pool_rankers.py)."""
    both = (FIRST, SECOND)
    best_one = _ties_by_query((Q1, "h", "v1", "pooled", both, 1), (Q2, "f2", "v1", "pooled", both, 1))
    # Successors of a document judged relevant for the query keep their place: e2 (ana's relevant
    # label on e), d2 (the helped verdict on d, retired, so no golden row) and f2 (a judge's relevant
    # label on f). Those of a document judged not relevant go after every pooled pair: c2 (c's
    # golden row says noise) and m2 (m's says wrong).
    rows = [
        (Q1, "b", "v2", "stale", (FIRST,), 5),
        (Q2, "e2", "v1", "successor", (SECOND,), 3),
        (Q1, "d2", "v3", "successor", (SECOND,), 5),
        (Q1, "f2", "v1", "successor", (), None),
        *best_one,
        (Q2, "i", "v1", "pooled", both, 2),
        (Q1, "g", "v1", "pooled", (FIRST,), 2),
        (Q1, "m", "v2", "pooled", (SECOND,), 2),
        (Q1, "j", "v1", "pooled", (SECOND,), 4),
        (Q1, "c2", "v1", "successor", (FIRST,), 4),
        (Q1, "m2", "v1", "successor", (), None),
    ]
    return [(1, q, d, v, reason, rk, best, i, POOLED_AT) for i, (q, d, v, reason, rk, best) in enumerate(rows, 1)]


# --------------------------------------------------------------------------- the queue


def test_queue_holds_stale_then_successors_then_pooled_pairs_in_priority_order(world):
    pool(world)
    assert queue(world) == expected_queue()


def test_a_successor_of_a_document_judged_not_relevant_goes_after_every_pooled_pair(world):
    con = warehouse.connect(world.db)
    try:
        # ana now labels e irrelevant on Q2 (a later line): e2 follows a label that says "not this one".
        from pool_rankers import add_current_label

        add_current_label(con, Q2, "e", "v1", label="irrelevant", grade=0, line=9)
        # ana calls c relevant on Q1, but the golden set's row of (Q1, c) says noise, and decides.
        add_current_label(con, Q1, "c", "v1", label="relevant", grade=2, line=10)
    finally:
        con.close()
    pool(world)
    rows = [(r[1], r[2], r[4]) for r in queue(world)]
    reasons = [reason for _, _, reason in rows]
    last_pooled = max(i for i, reason in enumerate(reasons) if reason == "pooled")
    assert rows[last_pooled + 1 :] == [(Q2, "e2", "successor"), (Q1, "c2", "successor"), (Q1, "m2", "successor")]
    assert rows[1:3] == [(Q1, "d2", "successor"), (Q1, "f2", "successor")]


def test_stale_pairs_are_the_version_changed_labels_at_their_current_version(world):
    pool(world)
    stale = [r for r in queue(world) if r[4] == "stale"]
    assert [(r[1], r[2], r[3]) for r in stale] == [(Q1, "b", "v2")]


def test_a_label_stale_only_as_superseded_is_never_queued_as_stale(world):
    # c and m are superseded (relabel_queue says so); relabelling them cannot clear that.
    con = warehouse.connect(world.db, read_only=True)
    reasons = dict(con.execute("SELECT doc_id, reason FROM relabel_queue").fetchall())
    con.close()
    assert reasons == {"b": "version_changed", "c": "superseded", "m": "superseded"}
    pool(world)
    rows = {(r[1], r[2]): r[4] for r in queue(world)}
    assert (Q1, "c") not in rows  # not returned, and labelled at its current version anyway
    assert rows[(Q1, "m")] == "pooled"  # returned; its label is at v1, the document is at v2


def test_a_stale_pair_not_returned_by_any_ranker_is_queued_with_no_rank(world):
    pool(world, rankers=("pool_rankers:second",))
    stale = [r for r in queue(world) if r[4] == "stale"]
    assert [(r[2], r[5], r[6]) for r in stale] == [("b", (), None)]


def test_successor_comes_from_a_ranked_judgment_even_of_a_retired_document(world):
    # d was judged on the ranked channel, then retired (dropped by the retired filter): d2 replaces it.
    pool(world)
    rows = {(r[1], r[2]): r for r in queue(world)}
    assert rows[(Q1, "d2")][3:5] == ("v3", "successor")
    assert rows[(Q1, "c2")][4] == "successor"  # c is still active but superseded


def test_successor_comes_from_an_annotators_current_label(world):
    pool(world)
    rows = {(r[1], r[2]): r[4] for r in queue(world)}
    assert rows[(Q2, "e2")] == "successor"
    assert (Q3, "e2") not in rows  # Q3 is not a golden query


def test_without_the_current_label_the_successor_is_an_ordinary_pooled_pair(tmp_path, pool_worlds):
    world = pool_worlds(tmp_path / "w", labels=False)
    pool(world)
    rows = {(r[1], r[2]): r[4] for r in queue(world)}
    assert rows[(Q2, "e2")] == "pooled"


def test_an_always_served_judgment_names_no_successor(world):
    # f was judged on Q2 only through the always channel; f2 is pooled, not a successor.
    pool(world)
    rows = {(r[1], r[2]): r[4] for r in queue(world)}
    assert rows[(Q2, "f2")] == "pooled"


def test_a_successor_of_any_label_kind_is_queued_even_when_no_ranker_returned_it(world):
    pool(world)
    rows = {(r[1], r[2]): r for r in queue(world)}
    assert rows[(Q1, "f2")][4:7] == ("successor", (), None)  # from a judge's current label on f


def test_a_successor_already_in_the_golden_set_is_not_queued(world):
    # ana labelled p on Q1; p is superseded by a, and (Q1, a) is golden, so nothing is owed.
    pool(world)
    assert (Q1, "a") not in {(r[1], r[2]) for r in queue(world)}


def test_pooled_leaves_out_pairs_labelled_at_the_current_version(world):
    pool(world)
    rows = {(r[1], r[2]) for r in queue(world)}
    # a, k and n were returned and hold a golden row at their current version.
    assert {(Q1, "a"), (Q2, "k"), (Q2, "n")} & rows == set()


def test_depth_cuts_each_rankers_list_after_dropping_its_repeats(world):
    pool(world, depth=2)
    rows = {(r[1], r[2]): (r[5], r[6]) for r in queue(world) if r[4] == "pooled"}
    # first: Q1 a g | Q2 k i; second: Q1 h (twice) m | Q2 f2 i.
    assert rows == {
        (Q1, "g"): ((FIRST,), 2),
        (Q1, "h"): ((SECOND,), 1),
        (Q1, "m"): ((SECOND,), 2),
        (Q2, "i"): ((FIRST, SECOND), 2),
        (Q2, "f2"): ((SECOND,), 1),
    }


def test_rankers_column_follows_the_rankers_order_given(world):
    pool(world, rankers=(SECOND, FIRST))
    rows = {(r[1], r[2]): r[5] for r in queue(world)}
    assert rows[(Q1, "h")] == (SECOND, FIRST)
    assert rows[(Q1, "b")] == (FIRST,)


def test_a_new_pool_replaces_the_queue_and_adds_a_pool_run(world):
    pool(world, depth=1, now=datetime(2026, 11, 30, 7, 0))
    pool(world)
    assert queue(world) == [(2, *r[1:]) for r in expected_queue()]
    con = warehouse.connect(world.db, read_only=True)
    runs = con.execute("SELECT pool_id, pooled_at, build_id, rankers, depth FROM pool_runs ORDER BY pool_id").fetchall()
    con.close()
    assert runs == [(1, datetime(2026, 11, 30, 7, 0), 1, [FIRST, SECOND], 1), (2, POOLED_AT, 1, [FIRST, SECOND], 5)]


def test_queue_rows_carry_the_querys_project_and_task(world):
    pool(world)
    con = warehouse.connect(world.db, read_only=True)
    rows = con.execute("SELECT DISTINCT query_id, project, task FROM labelling_queue ORDER BY query_id").fetchall()
    con.close()
    assert rows == sorted(
        [(Q1, "billing", "How long is the refund window?"), (Q2, "billing", "When are invoices sent")]
    )


# --------------------------------------------------------------------------- the report


def test_report_counts_the_pools_arithmetic(world):
    result = pool(world)
    report = result.report.to_json()
    assert report == {
        "build_id": 1,
        "rankers": [FIRST, SECOND],
        "depth": 5,
        "queries": 2,
        "returned": {FIRST: 9, SECOND: 9},
        "outside_snapshot": {FIRST: 1, SECOND: 0},
        "returned_total": 18,
        "returned_distinct": 13,
        "shared": [{"a": FIRST, "b": SECOND, "pairs": 5}],
        "returned_stale": 1,
        "returned_successor": 3,
        "already_labelled": 3,
        "pooled": 6,
        "pooled_never_judged": 4,
        "queue": {"stale": 1, "successor": 5, "pooled": 6, "total": 12},
        # The queued pairs a ranker returned: the one stale pair, three of the five successors.
        "queue_returned": {"stale": 1, "successor": 3, "pooled": 6},
    }


def test_report_is_stored_with_the_pool_run(world):
    result = pool(world)
    con = warehouse.connect(world.db, read_only=True)
    stored = con.execute("SELECT report FROM pool_runs WHERE pool_id = 1").fetchone()[0]
    con.close()
    assert json.loads(stored) == result.report.to_json()


def test_report_lines_spell_out_the_arithmetic(world):
    lines = pool(world).report.lines()
    assert lines == [
        "2 golden queries x 2 rankers, top 5 each (golden build 1)",
        f"returned: {FIRST} 9 + {SECOND} 9 = 18 pairs",
        f"left out as not active in the build's snapshot: 1 ({FIRST} 1)",
        "distinct: 18 - 5 duplicates = 13 pairs",
        "of these: 3 already labelled (golden set row at the current version) + 1 queued as stale "
        "+ 3 queued as successor + 6 pooled = 13",
        "pooled pairs the log never judged: 4 of 6",
        # Two successors no ranker returned: queued all the same, and the line says which are which.
        "queue: 1 stale (1 a ranker returned) + 5 successor (3 a ranker returned) + 6 pooled = 12 pairs",
    ]


def test_three_rankers_report_every_two_that_share_pairs(world):
    report = pool(world, rankers=(FIRST, SECOND, "pool_rankers:third")).report.to_json()
    # third returns what first does: it shares all 9 of first's pairs, and first's 5 with second.
    assert report["shared"] == [
        {"a": FIRST, "b": SECOND, "pairs": 5},
        {"a": FIRST, "b": "pool_rankers:third", "pairs": 9},
        {"a": SECOND, "b": "pool_rankers:third", "pairs": 5},
    ]
    assert report["returned_total"] == 27 and report["returned_distinct"] == 13


def test_queue_summary_gives_the_queue_by_reason_and_the_latest_report(world):
    con = warehouse.connect(world.db, read_only=True)
    before = queue_summary(con)
    con.close()
    assert before == {
        "labelling_queue": 0,
        "labelling_queue_by_reason": {"stale": 0, "successor": 0, "pooled": 0},
        "pool_id": None,
        "pooled_at": None,
        "build_id": None,
        "latest_build_id": 1,
        "rankers": None,
        "depth": None,
        "report": None,
    }
    result = pool(world)
    con = warehouse.connect(world.db, read_only=True)
    after = queue_summary(con)
    con.close()
    assert after == {
        "labelling_queue": 12,
        "labelling_queue_by_reason": {"stale": 1, "successor": 5, "pooled": 6},
        "pool_id": 1,
        "pooled_at": "2026-11-30T08:00:00Z",
        "build_id": 1,
        "latest_build_id": 1,
        "rankers": [FIRST, SECOND],
        "depth": 5,
        "report": result.report.to_json(),
    }


def test_a_build_with_no_golden_query_pools_nothing_and_says_so(tmp_path):
    from helpers import doc, ranked, serve, verdict, write_corpus, write_log

    from goldenset.build import build_golden_set
    from goldenset.corpus import read_corpus
    from goldenset.ingest import ingest_all
    from goldenset.snapshots import store_snapshot

    write_log(
        tmp_path / "logs",
        "2026-11-28",
        "p.jsonl",
        [
            serve("s1", "2026-11-28T10:00:00Z", "Reset my password", [ranked("h", 1)]),
            verdict("s1", "h", "noise", "2026-11-28T10:01:00Z"),
        ],
    )
    con = warehouse.connect(tmp_path / "g.duckdb")
    ingest_all(con, tmp_path / "logs")
    store_snapshot(con, read_corpus(write_corpus(tmp_path / "c.jsonl", [doc("h")])), now=POOLED_AT)
    build_golden_set(con, now=POOLED_AT)
    result = run_pool(con, rankers=(FIRST,), index_dir=tmp_path, now=POOLED_AT)
    assert con.execute("SELECT count(*) FROM labelling_queue").fetchone() == (0,)
    con.close()
    assert result.report.lines()[0] == "0 golden queries x 1 ranker, top 5 each (golden build 1)"
    assert result.report.to_json()["queue"] == {"stale": 0, "successor": 0, "pooled": 0, "total": 0}


# --------------------------------------------------------------------------- errors


def test_pool_before_any_build_raises_no_build(tmp_path):
    con = warehouse.connect(tmp_path / "empty.duckdb")
    with pytest.raises(NoBuild, match="run `goldenset build` first"):
        run_pool(con, rankers=(FIRST,), index_dir=tmp_path)
    con.close()


@pytest.mark.parametrize(
    ("rankers", "message"),
    [
        (("lexical", "bm42"), "unknown ranker 'bm42'; use lexical, dense, core or a retriever as module:factory"),
        ((FIRST, FIRST), f"ranker '{FIRST}' is listed twice; name each ranker once"),
        ((), "no ranker given; use lexical, dense, core or module:factory"),
        (("no_such_module:factory",), "cannot import 'no_such_module'"),
    ],
)
def test_a_ranker_that_is_not_one_is_a_usage_error(world, rankers, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pool(world, rankers=rankers)


def test_depth_below_one_is_a_usage_error(world):
    with pytest.raises(UsageError, match="--depth must be an integer >= 1, got 0"):
        pool(world, depth=0)


def test_a_failing_ranker_is_named_and_the_previous_queue_stays(world):
    pool(world)
    with pytest.raises(GoldensetError, match=f"ranker '{FAILING}' failed on query .* index offline"):
        pool(world, rankers=(FIRST, FAILING))
    assert queue(world) == expected_queue()


def test_a_corpus_other_than_the_builds_snapshot_is_refused(world):
    from goldenset.corpus import read_corpus

    path = world.corpus.with_name("other.jsonl")
    path.write_text(world.corpus.read_text().replace('"v1"', '"v9"', 1), encoding="utf-8")
    con = warehouse.connect(world.db)
    with pytest.raises(GoldensetError, match="is not the snapshot golden build 1 used"):
        run_pool(con, read_corpus(path), rankers=(FIRST,), index_dir=world.index_dir)
    con.close()


def test_the_builds_snapshot_passed_in_is_accepted(world):
    from goldenset.corpus import read_corpus

    con = warehouse.connect(world.db)
    result = run_pool(con, read_corpus(world.corpus), rankers=(FIRST, SECOND), index_dir=world.index_dir, now=POOLED_AT)
    con.close()
    assert result.report.queue == {"stale": 1, "successor": 5, "pooled": 6}


# --------------------------------------------------------------------------- the reference retriever


@pytest.mark.slow
def test_reference_rankers_pool_their_own_top_documents(tmp_path, embedder):
    from bench_world import build_golden

    from goldenset.corpus import read_corpus
    from goldenset.retrieval.reference import HybridRetriever
    from goldenset.retrieval.retriever import RetrieverContext

    g = build_golden(tmp_path / "g")
    con = warehouse.connect(g.db)
    try:
        result = run_pool(con, None, embedder, index_dir=g.index_dir, now=POOLED_AT)
        rows = con.execute(
            "SELECT query_id, doc_id, doc_version, reason, rankers, best_rank FROM labelling_queue ORDER BY priority"
        ).fetchall()
        golden = {(q, d) for q, d in con.execute("SELECT query_id, doc_id FROM golden_set").fetchall()}
        tasks = dict(con.execute("SELECT DISTINCT query_id, task FROM golden_set").fetchall())
        # The same retriever, asked directly, is what the pool must have seen.
        ref = HybridRetriever(RetrieverContext(read_corpus(g.corpus), con, embedder, g.index_dir))
        seen = {}
        for q, task in tasks.items():
            seen[("lexical", q)] = [d for d, _ in ref.search_component("lexical", task, 5)]
            seen[("dense", q)] = [d for d, _ in ref.search_component("dense", task, 5)]
            seen[("core", q)] = [d for d, _ in ref.search(task, 5)]
    finally:
        con.close()
    returned: dict[tuple[str, str], dict[str, int]] = {}
    for (ranker, q), docs in seen.items():
        for rank, d in enumerate(docs, start=1):
            returned.setdefault((q, d), {})[ranker] = rank
    expected = {
        (q, d): (tuple(r for r in ("lexical", "dense", "core") if r in by), min(by.values()))
        for (q, d), by in returned.items()
        if (q, d) not in golden
    }
    assert {(q, d): (tuple(rk), best) for q, d, _, _, rk, best in rows} == expected
    assert {(reason, version) for _, _, version, reason, _, _ in rows} == {("pooled", "1")}
    report = result.report.to_json()
    assert report["queries"] == 6
    assert report["returned"] == {r: sum(len(seen[(r, q)]) for q in tasks) for r in ("lexical", "dense", "core")}
    assert report["returned"]["dense"] == 30  # dense ranks every document, so it always fills its top 5
    assert report["returned_distinct"] == len(returned)
    assert report["already_labelled"] == len(set(returned) & golden)
    assert report["pooled"] == len(rows)
    # bench_world's log served only the judged documents, so no pooled pair was ever judged.
    assert report["pooled_never_judged"] == len(rows)
    assert report["shared"][0] == {
        "a": "lexical",
        "b": "dense",
        "pairs": sum(len(set(seen[("lexical", q)]) & set(seen[("dense", q)])) for q in tasks),
    }


# --------------------------------------------------------------------------- the command line


def run_cli(argv, capsys) -> tuple[int, str, str]:
    code = main(argv, application=pool_app)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_pool_command_alone_runs_the_pool_and_prints_the_arithmetic(world, capsys):
    code, out, err = run_cli(
        ["--db", str(world.db), "--rankers", f"{FIRST},{SECOND}", "--index-dir", str(world.index_dir)], capsys
    )
    assert (code, err) == (0, "")
    assert "pool 1 over golden build 1" in out
    assert "distinct: 18 - 5 duplicates = 13 pairs" in out
    assert out.rstrip().endswith(
        "queue: 1 stale (1 a ranker returned) + 5 successor (3 a ranker returned) + 6 pooled = 12 pairs"
    )
    assert len(queue(world)) == 12


def test_pool_command_json_prints_the_stored_report(world, capsys):
    code, out, _ = run_cli(["--db", str(world.db), "--rankers", f"{FIRST}, {SECOND}", "--depth", "5", "--json"], capsys)
    assert code == 0
    printed = json.loads(out)
    con = warehouse.connect(world.db, read_only=True)
    stored = json.loads(con.execute("SELECT report FROM pool_runs").fetchone()[0])
    con.close()
    assert printed.pop("pool_id") == 1
    assert printed.pop("pooled_at").endswith("Z")
    assert printed == stored


def test_pool_command_without_a_build_exits_1(tmp_path, capsys):
    code, _, err = run_cli(["--db", str(tmp_path / "none.duckdb"), "--rankers", "bogus"], capsys)
    assert code == 1
    assert err == f"Error: no warehouse at --db {tmp_path / 'none.duckdb'}: run `goldenset build` first\n"


def test_pool_command_on_a_warehouse_without_a_build_exits_1(tmp_path, capsys):
    warehouse.connect(tmp_path / "empty.duckdb").close()
    code, _, err = run_cli(["--db", str(tmp_path / "empty.duckdb")], capsys)
    assert code == 1
    assert err == "Error: no golden set has been built yet: run `goldenset build` first\n"


def test_pool_command_with_an_unknown_ranker_exits_2(world, capsys):
    code, _, err = run_cli(["--db", str(world.db), "--rankers", "lexical,bm42"], capsys)
    assert code == 2
    assert err == "Error: unknown ranker 'bm42'; use lexical, dense, core or a retriever as module:factory\n"


def test_pool_command_with_a_failing_ranker_exits_1_naming_it(world, capsys):
    code, _, err = run_cli(["--db", str(world.db), "--rankers", FAILING], capsys)
    assert code == 1
    assert err.startswith(f"Error: ranker '{FAILING}' failed on query ")
    assert err.endswith("index offline: connection refused\n")


def test_pool_help_lists_the_export_subcommand(capsys):
    code, out, _ = run_cli(["--help"], capsys)
    assert code == 0
    assert "--rankers" in out and "export" in out


# --------------------------------------------------------------------------- pool export --format jsonl

RUBRIC = HERE.parent / "data" / "conformance" / "rubric.yaml"
OPEN_RUBRIC = HERE.parents[1] / "goldenset" / "data" / "open-rubric.yaml"
RUBRIC_JSON = {
    "name": "support-policies",
    "task": "A support-agent-facing assistant that answers questions about the policies currently in force, "
    "using only the published policy corpus.\n",
    "as_of": "2026-08-01",
    "dimensions": [
        {"name": "answerability", "test": "A reader who sees ONLY this passage can state the answer without guessing."},
        {"name": "authority", "test": "Source is under policies/ or legal/."},
        {"name": "recency", "test": "Passage is from the version in force on as_of."},
        {"name": "coverage", "test": "Every clause of the query is addressed."},
        {"name": "entity", "test": "Any named account, product or plan in the query matches the passage exactly."},
    ],
    "labels": [
        {
            "name": "relevant",
            "grade": 2,
            "pass": ["answerability", "authority", "recency", "coverage", "entity"],
            "fail": [],
            "any_fail": [],
            "decided_by": ["answerability", "authority", "recency", "coverage", "entity"],
        },
        {
            "name": "partial",
            "grade": 1,
            "pass": ["answerability", "authority", "recency", "entity"],
            "fail": ["coverage"],
            "any_fail": [],
            "decided_by": ["coverage"],
        },
        {
            "name": "irrelevant",
            "grade": 0,
            "pass": [],
            "fail": [],
            "any_fail": ["answerability", "authority", "recency", "entity"],
            "decided_by": ["answerability", "authority", "recency", "entity"],
        },
    ],
}


def test_pool_export_jsonl_writes_one_task_a_line_with_what_an_annotator_needs(world, tmp_path, capsys):
    assert run_cli(["--db", str(world.db), "--rankers", f"{FIRST},{SECOND}"], capsys)[0] == 0
    out = tmp_path / "queue.jsonl"
    code, printed, err = run_cli(["export", "--out", str(out), "--db", str(world.db), "--rubric", str(RUBRIC)], capsys)
    assert (code, err) == (0, "")
    assert printed == f"wrote 12 tasks to {out}\n"
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(t["priority"], t["query_id"], t["doc_id"]) for t in lines] == [
        (r[7], r[1], r[2]) for r in expected_queue()
    ]
    assert lines[0] == {
        "pool_id": 1,
        "priority": 1,
        "reason": "stale",
        "query_id": Q1,
        "project": "billing",
        "task": "How long is the refund window?",
        "doc_id": "b",
        "doc_version": "v2",
        "title": "b",
        "text": "text of b v2",
        "rankers": [FIRST],
        "best_rank": 5,
        "rubric": RUBRIC_JSON,
    }
    # The text is the queued version's: d2 is at v3.
    assert next(t["text"] for t in lines if t["doc_id"] == "d2") == "text of d2 v3"


def test_pool_export_reads_the_rubric_from_goldenset_rubric(world, tmp_path, capsys, monkeypatch):
    pool(world)
    monkeypatch.setenv("GOLDENSET_RUBRIC", str(RUBRIC))
    out = tmp_path / "queue.jsonl"
    code, _, _ = run_cli(["export", "--out", str(out), "--db", str(world.db), "--format", "jsonl"], capsys)
    assert code == 0
    assert json.loads(out.read_text(encoding="utf-8").splitlines()[0])["rubric"]["name"] == "support-policies"


def test_pool_export_refuses_an_open_rubric_naming_the_file(world, tmp_path, capsys):
    pool(world)
    code, _, err = run_cli(
        ["export", "--out", str(tmp_path / "q.jsonl"), "--db", str(world.db), "--rubric", str(OPEN_RUBRIC)], capsys
    )
    assert code == 1
    assert err.startswith(f"Error: {OPEN_RUBRIC}: rubric ")
    assert "is open" in err
    assert not (tmp_path / "q.jsonl").exists()


def test_pool_export_without_a_rubric_file_exits_1_naming_the_default(world, tmp_path, capsys, isolated_home):
    pool(world)
    code, _, err = run_cli(["export", "--out", str(tmp_path / "q.jsonl"), "--db", str(world.db)], capsys)
    assert code == 1
    assert err.startswith(f"Error: {isolated_home / 'rubric.yaml'}: cannot read the rubric file")


def test_pool_export_before_any_pool_exits_1(world, tmp_path, capsys):
    code, _, err = run_cli(
        ["export", "--out", str(tmp_path / "q.jsonl"), "--db", str(world.db), "--rubric", str(RUBRIC)], capsys
    )
    assert code == 1
    assert err == "Error: no labelling queue yet: run `goldenset pool` first\n"


def test_pool_export_with_an_unknown_format_exits_2(world, tmp_path, capsys):
    pool(world)
    code, _, err = run_cli(
        ["export", "--out", str(tmp_path / "q.x"), "--db", str(world.db), "--rubric", str(RUBRIC), "--format", "csv"],
        capsys,
    )
    assert code == 2
    assert err == "Error: --format 'csv' is not one of jsonl, label-studio\n"


def test_the_queue_reasons_counted_everywhere_are_the_pools_in_its_order():
    from goldenset.counts import QUEUE_REASONS
    from goldenset.labelling.pool import ORDER

    assert QUEUE_REASONS == ORDER
