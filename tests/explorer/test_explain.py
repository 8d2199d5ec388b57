"""`goldenset explain` and the v5 rules it explains, on the story world (story_world.py).

Every expected value is read off the story's table (derived by hand from the contract's
rules, sections 3 and 7.3 as changed in v5), never from the code under test.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from story_world import QID, TASKS

from goldenset.errors import InputError, UsageError
from goldenset.explain import explain, explain_lines, resolve_query
from goldenset.status import golden_status
from goldenset.warehouse import connect
from goldenset_dagster.cli import main
from tests.helpers import verdict, write_log

# The story world is built once per session; its first test pays for it.
pytestmark = pytest.mark.slow

# query -> (in build 1, in build 2, in build 3); None: not in that build's set, else what kept it.
MEMBERSHIP = {
    "RESET": ("log", "log", "log"),
    "RULES": (None, None, None),
    "HANDBOOK": (None, None, None),
    "GDB": ("log", "human", "human"),
    "REFUND": (None, "human", None),
    "EXPENSES": ("log", None, None),
    "VPN": ("human", None, None),
}
# query -> (the build it left, the rule that keeps it out now) for queries out of the set.
OUT = {
    "RULES": (None, "always_served"),
    "HANDBOOK": (None, "retired"),
    "REFUND": (3, "no_positive"),
    "EXPENSES": (2, "retired"),
    "VPN": (2, "no_positive"),
}


@pytest.fixture
def story_con(story):
    con = connect(story.db, read_only=True)
    yield con
    con.close()


def test_each_query_is_in_each_build_exactly_when_the_v5_rules_say(story_con):
    got = {
        name: tuple(
            story_con.execute(
                "SELECT count(*) > 0 FROM golden_set_by_build WHERE build_id = ? AND query_id = ?", [b, QID[name]]
            ).fetchall()[0][0]
            for b in (1, 2, 3)
        )
        for name in MEMBERSHIP
    }
    assert got == {name: tuple(k is not None for k in ks) for name, ks in MEMBERSHIP.items()}


def test_the_funnel_counts_the_queries_only_a_human_positive_kept(story_con):
    rows = story_con.execute(
        "SELECT build_id, step, units_kept_by_human, judgments_kept_by_human FROM filter_funnel ORDER BY build_id, "
        "step_order"
    ).fetchall()
    kept = {b: sum(1 for ks in MEMBERSHIP.values() if ks[b - 1] == "human") for b in (1, 2, 3)}
    # Build 1: VPN (1 judgment); build 2: GDB (2 judgments), REFUND (1); build 3: GDB (2).
    assert [(b, u, j) for b, step, u, j in rows if step == "no_positive"] == [(1, 1, 1), (2, 2, 3), (3, 1, 2)]
    assert [kept[b] for b in (1, 2, 3)] == [1, 2, 1]
    assert all(u == 0 and j == 0 for _, step, u, j in rows if step != "no_positive")


def test_status_json_splits_what_no_positive_kept_by_log_and_by_human(story_con):
    # Build 3 holds RESET (a log helped) and GDB (a human positive alone): one query each. Status reads the
    # stored filter_funnel, which must give the human count, not a default 0.
    (row,) = [r for r in golden_status(story_con).to_json()["full_funnel"] if r["step"] == "no_positive"]
    assert row["units_left"] == 2 and row["queries_kept_by"] == {"log_helped": 1, "human_positive": 1}


def test_golden_queries_marks_what_kept_each_query(story_con):
    got = dict(story_con.execute("SELECT query_id, kept_by FROM golden_queries").fetchall())
    assert got == {QID[n]: ks[2] for n, ks in MEMBERSHIP.items() if ks[2] is not None}


@pytest.mark.parametrize("name", sorted(MEMBERSHIP))
def test_explain_says_in_or_out_and_the_rule_that_keeps_it_out(story_con, name):
    x = explain(story_con, QID[name])
    assert x["kept_by"] == MEMBERSHIP[name][2]
    if name in OUT:
        left, rule = OUT[name]
        assert x["status"] == ("never" if left is None else "left")
        assert x["left"]["build_id"] == left and x["left"]["rule"].startswith(rule + ":")
    else:
        assert x["status"] == "in" and x["left"] is None
    assert json.loads(json.dumps(x)) == x  # the page's data: plain JSON


def test_a_flipped_verdict_shows_both_lines_and_a_human_positive_keeps_the_query(story_con):
    x = explain(story_con, QID["GDB"])
    (serve,) = x["serves"]
    gdb = next(it for it in serve["items"] if it["doc_id"] == "deb/gdb")
    assert [(h["verdict"], h["ts"]) for h in gdb["verdict_history"]] == [
        ("helped", "2026-11-01T09:01:00Z"),
        ("noise", "2026-11-02T09:00:00Z"),
    ]
    assert gdb["verdict"] == "noise" and gdb["decision"] == "kept"
    step = x["filters"][-1]
    assert step["passed"] and step["kept_by"] == "human" and step["log_positives"] == []
    assert [(h["doc_id"], h["label"], h["grade"], h["positive"]) for h in step["human_labels"]] == [
        ("deb/gdb", "relevant", 2, True)
    ]
    assert "filter no_positive: passed by a human positive only (no helped judgment left): deb/gdb" in explain_lines(x)


def test_each_filter_names_the_rows_it_dropped(story_con):
    x = explain(story_con, QID["RESET"])
    steps = {f["step"]: f for f in x["filters"]}
    assert [(r["serve_id"], r["doc_id"]) for r in steps["always_served"]["dropped"]] == [("sR3", "rule-1")]
    assert [(r["serve_id"], r["doc_id"], r["winner"]) for r in steps["repeats"]["dropped"]] == [
        ("sR1", "d-reset", "sR2")
    ]
    assert steps["retired"]["dropped"] == []
    assert [(r["serve_id"], r["doc_id"]) for r in steps["no_positive"]["log_positives"]] == [("sR2", "d-reset")]
    handbook = {f["step"]: f for f in explain(story_con, QID["HANDBOOK"])["filters"]}
    assert [(r["serve_id"], r["doc_id"]) for r in handbook["retired"]["dropped"]] == [("sH1", "d-old")]
    assert not handbook["no_positive"]["tested"]


def test_the_display_text_is_the_most_served_form_and_the_raw_texts_stay(story_con):
    x = explain(story_con, QID["RESET"])
    # Three serves fold to the plain form (one full-width, one with two spaces); the capitals keep theirs.
    assert x["task"] == "How do I reset my password?"
    assert sorted((v["task"], v["serves"]) for v in x["variants"]) == sorted(
        [
            ("\uff28ow do I reset my password?", 1),
            ("How do I reset  my password?", 1),
            ("How do I reset my password?", 1),
            ("HOW DO I RESET MY PASSWORD?", 1),
        ]
    )
    variants = story_con.execute(
        "SELECT task, serves FROM query_variants WHERE query_id = ? ORDER BY task", [QID["RESET"]]
    ).fetchall()
    assert sorted(variants) == sorted((v["task"], v["serves"]) for v in x["variants"])
    # Every label row, and so exports and the benchmark, carries the display text.
    tasks = story_con.execute("SELECT DISTINCT task FROM golden_set WHERE query_id = ?", [QID["RESET"]]).fetchall()
    assert tasks == [("How do I reset my password?",)]


def test_a_label_at_an_older_version_or_of_grade_0_is_no_positive_and_says_why(story_con):
    vpn = explain(story_con, QID["VPN"])["filters"][-1]["human_labels"]
    assert [(h["doc_version"], h["current_version"], h["grade"], h["positive"]) for h in vpn] == [
        ("v1", "v2", 1, False)
    ]
    assert vpn[0]["why"] == "labelled at another version than the current one"
    refund = explain(story_con, QID["REFUND"])
    (h,) = refund["filters"][-1]["human_labels"]
    assert (h["label"], h["grade"], h["annotators"], h["positive"], h["why"]) == (
        "irrelevant",
        0,
        3,
        False,
        "grade below 1",
    )
    assert [(c["to_build"], c["change"], c["old_value"]) for c in refund["left"]["removed"]] == [
        (3, "removed", "human:partial")
    ]


def test_audits_queue_and_runs_name_the_query(story, story_con):
    x = explain(story_con, QID["GDB"])
    assert [a["pool_id"] for a in x["audits"]] == [1]
    assert x["queue"] and all(q["reason"] == "audit" for q in x["queue"])
    assert [r["run_id"] for r in x["benchmark"]] == list(reversed(story.runs))
    words = next(r for r in x["benchmark"] if r["run_id"].endswith("words"))
    # The words retriever ranks deb/gdb (the only relevant label) first: recall@1 = 1 by hand.
    assert words["measured"] and words["metrics"]["recall@1"] == 1.0 and words["ranking"][0]["doc_id"] == "deb/gdb"
    vpn = explain(story_con, QID["VPN"])
    assert [r["measured"] for r in vpn["benchmark"]] == [False, False]


def test_a_query_is_found_by_its_text_in_any_form_and_unknown_ones_are_refused(story_con):
    assert resolve_query(story_con, None, "  how do i RESET my password?", None) == QID["RESET"]
    assert resolve_query(story_con, None, "Is there something installed for GNU Debugger?", "debian") == QID["GDB"]
    with pytest.raises(InputError, match="no serve carries a task that normalises to 'no such question'"):
        resolve_query(story_con, None, "No such question", None)
    with pytest.raises(UsageError, match="exactly one"):
        resolve_query(story_con, QID["GDB"], "x", None)
    with pytest.raises(UsageError, match="'ABC' is not 16 lowercase hex digits"):
        resolve_query(story_con, "ABC", None, None)
    with pytest.raises(InputError, match="no serve, label or label history names query 0123456789abcdef"):
        explain(story_con, "0123456789abcdef")


def test_explain_on_the_command_line_reads_without_changing_the_warehouse(story, capsys):
    before = hashlib.sha256(story.db.read_bytes()).hexdigest()
    assert main(["explain", "--db", str(story.db), "--task", TASKS["VPN"][1]]) == 0
    text = capsys.readouterr().out
    assert "left the set at build 2: no_positive: no judgment left is helped and no human label is a positive" in text
    assert main(["explain", "--db", str(story.db), QID["GDB"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kept_by"] == "human"
    assert main(["explain", "--db", str(story.db), "--project", "x", QID["GDB"]]) == 2
    assert "--project goes with --task" in capsys.readouterr().err
    assert hashlib.sha256(story.db.read_bytes()).hexdigest() == before


def test_an_incremental_build_keeps_a_query_through_its_human_positive(story):
    """New log lines fold into GDB (a new serve, noise again) and RESET: the fold applies filter 4 as v5 says."""
    from goldenset.build import build_golden_set
    from goldenset.ingest import ingest_all
    from tests.helpers import LENIENT, ranked, serve

    write_log(
        story.logs,
        "2026-11-04",
        "part-0001.jsonl",
        [
            serve("sG2", "2026-11-04T09:00:00Z", TASKS["GDB"][1], [ranked("deb/lldb", 1)], project="debian"),
            verdict("sG2", "deb/lldb", "noise", "2026-11-04T09:01:00Z"),
            # RESET is folded too: its log helped keeps it, so it counts nothing as kept by a human.
            serve("sR9", "2026-11-04T09:00:00Z", TASKS["RESET"][1], [ranked("d-2fa", 1)], project="support"),
            verdict("sR9", "d-2fa", "noise", "2026-11-04T09:01:00Z"),
        ],
    )
    con = connect(story.db)
    try:
        ingest_all(con, story.logs)
        result = build_golden_set(con, checks=LENIENT)
        assert result.record.computation == "incremental" and result.folded_queries == 2
        assert dict(con.execute("SELECT query_id, kept_by FROM golden_queries").fetchall())[QID["GDB"]] == "human"
        step = con.execute(
            "SELECT units_kept_by_human, judgments_kept_by_human FROM filter_funnel WHERE build_id = 4 "
            "AND step = 'no_positive'"
        ).fetchall()
        assert step == [(1, 2)]  # GDB: deb/gdb (noise) and deb/lldb (now sG2's noise) left after repeats
    finally:
        con.close()


def test_an_old_warehouse_not_yet_upgraded_is_refused_saying_what_to_run(story):
    import duckdb

    con = duckdb.connect(str(story.db))  # plain DuckDB: take the warehouse back to before v5
    con.execute("DROP VIEW golden_queries")
    con.execute("ALTER TABLE golden_builds DROP COLUMN contract_version")
    con.close()
    old = connect(story.db, read_only=True)
    try:
        with pytest.raises(InputError, match="run `goldenset build` once"):
            explain(old, QID["GDB"])
    finally:
        old.close()
