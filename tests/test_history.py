"""Label history across builds: versions, changes, the relabel queue's stale runs."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from goldenset.build import build_golden_set
from goldenset.corpus import read_corpus
from goldenset.export import export_build
from goldenset.ingest import ingest_all
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from tests.helpers import World, doc, examples, new_warehouse, ranked, serve, verdict, write_corpus, write_log


class HistoryWorld(World):
    """A log directory, a corpus file and a warehouse that a test evolves build by build."""

    def __init__(self, tmp_path):
        super().__init__(tmp_path)
        self.con = new_warehouse(self.db)

    def build(self, docs, trigger="manual"):
        write_corpus(self.corpus, docs)
        ingest_all(self.con, self.logs)
        store_snapshot(self.con, read_corpus(self.corpus))
        return build_golden_set(self.con, trigger=trigger)

    def rows(self, sql, params=()):
        return self.con.execute(sql, list(params)).fetchall()


def _day1(w):
    write_log(
        w.logs,
        "2026-11-01",
        "part-0001.jsonl",
        [
            serve("s1", "2026-11-01T09:00:00Z", "Fix refunds", [ranked("d1", 1), ranked("d2", 2)]),
            verdict("s1", "d1", "helped", "2026-11-01T09:05:00Z"),
            verdict("s1", "d2", "noise", "2026-11-01T09:05:00Z"),
        ],
    )


def test_an_unchanged_rebuild_adds_a_build_and_no_history(tmp_path):
    w = HistoryWorld(tmp_path)
    _day1(w)
    w.build([doc("d1"), doc("d2")])
    w.build([doc("d1"), doc("d2")])
    assert w.rows("SELECT count(*) FROM golden_builds") == [(2,)]
    assert w.rows("SELECT count(*), count(valid_to_build) FROM label_history") == [(2, 0)]
    assert w.rows("SELECT count(*) FROM label_changes WHERE to_build = 2") == [(0,)]
    # The repeat stores no labels of its own: it points at build 1's, and reads the same.
    assert w.rows("SELECT build_id, labels_build_id FROM golden_builds ORDER BY 1") == [(1, 1), (2, 1)]
    assert w.rows("SELECT count(*) FROM label_rows") == [(2,)]
    assert w.rows("SELECT count(*) FROM golden_set") == [(2,)]
    assert w.rows("SELECT count(*) FROM golden_set_by_build WHERE build_id = 2") == [(2,)]
    assert export_build(w.con, tmp_path / "out", build_id=2).n_labels == 2


def test_a_changed_log_after_a_repeat_computes_labels_again(tmp_path):
    w = HistoryWorld(tmp_path)
    _day1(w)
    w.build([doc("d1"), doc("d2")])
    w.build([doc("d1"), doc("d2")])
    write_log(w.logs, "2026-11-02", "part-0001.jsonl", [verdict("s1", "d2", "helped", "2026-11-02T09:00:00Z")])
    w.build([doc("d1"), doc("d2")])
    assert w.rows("SELECT labels_build_id FROM golden_builds WHERE build_id = 3") == [(3,)]
    assert w.rows("SELECT verdict FROM golden_set WHERE doc_id = 'd2'") == [("helped",)]
    assert w.rows("SELECT from_build, to_build, change FROM label_changes WHERE to_build = 3") == [
        (2, 3, "verdict_changed")
    ]


def test_a_later_serve_repeating_the_verdict_changes_nothing_in_history(tmp_path):
    w = HistoryWorld(tmp_path)
    _day1(w)
    w.build([doc("d1"), doc("d2")])
    write_log(
        w.logs,
        "2026-11-02",
        "part-0001.jsonl",
        [
            serve("s2", "2026-11-02T09:00:00Z", "fix  REFUNDS", [ranked("d1", 1)]),
            verdict("s2", "d1", "helped", "2026-11-02T09:05:00Z"),
        ],
    )
    w.build([doc("d1"), doc("d2")])
    assert w.rows("SELECT serve_id FROM golden_set WHERE doc_id = 'd1'") == [("s2",)]
    assert w.rows("SELECT count(*) FROM label_history") == [(2,)]


def test_verdict_and_version_changes_are_listed_between_consecutive_builds(tmp_path):
    w = HistoryWorld(tmp_path)
    _day1(w)
    w.build([doc("d1"), doc("d2")])
    write_log(
        w.logs,
        "2026-11-02",
        "part-0001.jsonl",
        [
            serve("s2", "2026-11-02T09:00:00Z", "fix refunds", [ranked("d1", 1), ranked("d2", 2, version="v2")]),
            verdict("s2", "d1", "helped", "2026-11-02T09:05:00Z"),
            verdict("s2", "d2", "wrong", "2026-11-02T09:05:00Z"),
        ],
    )
    w.build([doc("d1"), doc("d2", "v2")])
    changes = w.rows(
        "SELECT doc_id, from_build, to_build, change, old_value, new_value FROM label_changes "
        "WHERE to_build = 2 ORDER BY doc_id, change"
    )
    assert changes == [
        ("d2", 1, 2, "verdict_changed", "noise", "wrong"),
        ("d2", 1, 2, "version_changed", "v1", "v2"),
    ]
    assert w.rows(
        "SELECT doc_id, verdict, valid_from_build, valid_to_build FROM label_history "
        "WHERE doc_id = 'd2' ORDER BY valid_from_build"
    ) == [("d2", "noise", 1, 2), ("d2", "wrong", 2, None)]


def test_a_label_that_disappears_and_returns_starts_a_new_version(tmp_path):
    w = HistoryWorld(tmp_path)
    _day1(w)
    w.build([doc("d1"), doc("d2")])
    w.build([doc("d1"), doc("d2", status="retired")])  # d2 falls to the retired filter
    w.build([doc("d1"), doc("d2")])
    hist = w.rows(
        "SELECT valid_from_build, valid_to_build FROM label_history WHERE doc_id = 'd2' ORDER BY valid_from_build"
    )
    assert hist == [(1, 2), (3, None)]
    changes = w.rows("SELECT from_build, to_build, change FROM label_changes WHERE doc_id = 'd2' ORDER BY to_build")
    assert changes == [(None, 1, "added"), (1, 2, "removed"), (2, 3, "added")]


@pytest.mark.slow
def test_relabel_queue_keeps_the_first_build_of_an_unbroken_stale_run(tmp_path):
    w = HistoryWorld(tmp_path)
    _day1(w)
    w.build([doc("d1"), doc("d2")])
    assert w.rows("SELECT count(*) FROM relabel_queue") == [(0,)]
    w.build([doc("d1", "v2"), doc("d2")])  # build 2: d1 judged at v1, now v2
    w.build([doc("d1", "v2", superseded_by="d2"), doc("d2")])  # build 3: reason moves on, run goes on
    assert w.rows(
        "SELECT doc_id, judged_version, current_version, superseded_by, reason, first_flagged_build FROM relabel_queue"
    ) == [("d1", "v1", "v2", "d2", "superseded", 2)]
    w.build([doc("d1"), doc("d2")])  # build 4: back to v1, no longer stale
    assert w.rows("SELECT count(*) FROM relabel_queue") == [(0,)]
    w.build([doc("d1", "v3"), doc("d2")])  # build 5: a new stale run starts
    assert w.rows("SELECT first_flagged_build FROM relabel_queue") == [(5,)]


def test_an_older_build_exports_as_it_was(tmp_path):
    w = HistoryWorld(tmp_path)
    _day1(w)
    w.build([doc("d1", title="One"), doc("d2")])
    w.build([doc("d1", title="One"), doc("d2", status="retired")])
    res = export_build(w.con, tmp_path / "out", build_id=1)
    assert res.build_id == 1 and res.n_labels == 2 and res.n_documents == 2
    assert (tmp_path / "out" / "qrels.trec").read_text().splitlines()[1].endswith("d2 0")
    latest = export_build(w.con, tmp_path / "latest")
    assert latest.build_id == 2 and latest.n_labels == 1


def test_build_ids_and_triggers_are_recorded(tmp_path):
    w = HistoryWorld(tmp_path)
    _day1(w)
    w.build([doc("d1"), doc("d2")], trigger="schedule")
    w.build([doc("d1"), doc("d2")], trigger="reindex")
    assert w.rows("SELECT build_id, trigger FROM golden_builds ORDER BY 1") == [(1, "schedule"), (2, "reindex")]


def test_an_unchanged_corpus_file_is_not_read_again_but_a_changed_one_is(tmp_path):
    import os
    import time

    from goldenset.snapshots import snapshot_corpus

    con = connect(tmp_path / "g.duckdb")
    corpus = write_corpus(tmp_path / "c.jsonl", [doc("d1"), doc("d2")])
    hour_ago = time.time() - 3600
    os.utime(corpus, (hour_ago, hour_ago))
    first = snapshot_corpus(con, corpus)
    again = snapshot_corpus(con, corpus)
    assert again.load_id == first.load_id == 1 and again.fingerprint == first.fingerprint
    write_corpus(corpus, [doc("d1"), doc("d2", "v2")])
    changed = snapshot_corpus(con, corpus)
    assert changed.load_id == 2 and changed.fingerprint != first.fingerprint
    assert changed.drift_from_previous == 0.5
    # Written just now: within the mtime tick of its read, so it is read again next time.
    assert snapshot_corpus(con, corpus).load_id == 3


# d1's state in each build's snapshot: (version, superseded_by), or None when it is retired.
_D1_STATES = [("v1", None), ("v2", None), ("v3", None), ("v1", "d2"), ("v2", "d2"), None]


def _expected_first_flagged(states) -> list[tuple]:
    """The queue's first_flagged_build for d1 after builds of `states`, derived from the states alone."""
    stale = [state is not None and (state[0] != "v1" or state[1] is not None) for state in states]
    if not stale[-1]:
        return []
    start = len(stale)
    while start > 1 and stale[start - 2]:
        start -= 1
    return [(start,)]


# Each example checks the queue after every one of its builds (every prefix of the states), so
# few examples cover many runs; the explicit ones are the shapes that matter: a run that changes
# reason without breaking, a run broken by a fresh build, a run broken by d1's retirement, and a
# run starting at the first build.
@pytest.mark.slow
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example([("v2", None), ("v2", "d2"), ("v1", "d2"), ("v1", None), ("v3", None), None, ("v2", None)])
@example([("v1", None), ("v3", None), ("v1", None), ("v1", "d2"), ("v2", "d2")])
@given(st.lists(st.sampled_from(_D1_STATES), min_size=1, max_size=7))
def test_first_flagged_build_is_the_start_of_the_unbroken_run_of_stale_builds(states):
    # d1 was judged helped at v1. Independently of the history table: the label is stale in
    # a build when d1 is active there at another version or superseded, and the queue's
    # first_flagged_build is the first build of the run of builds, up to the latest, in
    # each of which it was stale (a retired d1 drops the query: the run breaks).
    with tempfile.TemporaryDirectory() as tmp:
        w = HistoryWorld(Path(tmp))
        _day1(w)
        for n, state in enumerate(states, start=1):
            d1 = [] if state is None else [doc("d1", state[0], superseded_by=state[1])]
            w.build([*d1, doc("d2")])
            assert w.rows("SELECT first_flagged_build FROM relabel_queue WHERE doc_id = 'd1'") == (
                _expected_first_flagged(states[:n])
            ), f"after build {n} of {states}"


@pytest.mark.slow
def test_stale_changed_rows_hold_the_old_and_the_new_reason(tmp_path):
    # A label going stale, changing reason, and clearing: each a stale_changed row whose
    # old_value is the reason before (NULL when fresh) and new_value the reason after.
    w = HistoryWorld(tmp_path)
    _day1(w)
    w.build([doc("d1"), doc("d2")])
    w.build([doc("d1", "v2"), doc("d2")])  # build 2: d1 judged at v1, now v2
    w.build([doc("d1", "v2", superseded_by="d2"), doc("d2")])  # build 3: superseded wins
    w.build([doc("d1"), doc("d2")])  # build 4: back at the judged version, fresh again
    assert w.rows(
        "SELECT from_build, to_build, change, old_value, new_value FROM label_changes "
        "WHERE doc_id = 'd1' AND change = 'stale_changed' ORDER BY to_build"
    ) == [
        (1, 2, "stale_changed", None, "version_changed"),
        (2, 3, "stale_changed", "version_changed", "superseded"),
        (3, 4, "stale_changed", "superseded", None),
    ]
