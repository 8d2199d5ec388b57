"""An incremental build gives exactly what a full build of the same input gives."""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest.mock import patch

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from goldenset import delta
from goldenset.build import build_golden_set
from goldenset.checks import BuildChecks
from goldenset.corpus import read_corpus
from goldenset.ingest import ingest_all
from goldenset.records import normalise_task, query_id
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from tests.helpers import always, doc, ranked, serve, verdict, write_corpus, write_log

DOCS = [doc("d1"), doc("d2", "v2"), doc("d3", status="retired"), doc("d4", superseded_by="d1"), doc("d5"), doc("r1")]
TASKS = ["Fix refunds", "fix  REFUNDS", "Ｆｉｘ refunds", "rotate keys", "Rotate keys", "parse csv"]
LAX = BuildChecks(block_rejected_share=1.0)
QUERIES = sorted({query_id(p, normalise_task(t)) for p in ("billing", "ops") for t in TASKS})


@st.composite
def log_days(draw):
    """Few queries, most served items judged, helped often: golden queries that labels meet."""
    days, served, n = [], [], 0
    for day in range(draw(st.integers(2, 4))):
        lines = []
        for _ in range(draw(st.integers(1, 3))):
            n += 1
            docs = draw(st.lists(st.sampled_from(["d1", "d2", "d4", "d5"]), min_size=1, max_size=3, unique=True))
            items = [ranked(d, r, version=draw(st.sampled_from(["v1", "v2"]))) for r, d in enumerate(docs, 1)]
            task = draw(st.sampled_from(TASKS[:5]))
            lines.append(serve(f"s{n}", f"2026-11-0{day + 1}T0{n % 10}:00:00Z", task, items))
            served.append((f"s{n}", docs))
        for _ in range(draw(st.integers(1, 5))):
            sid, docs = draw(st.sampled_from(served))
            v = draw(st.sampled_from(["helped", "helped", "noise", "wrong"]))
            minute = draw(st.integers(10, 59))
            lines.append(verdict(sid, draw(st.sampled_from(docs)), v, f"2026-11-0{day + 1}T09:{minute:02d}:00Z"))
        days.append(lines)
    return days


@st.composite
def events(draw):
    """Per day: serves, verdicts (some for earlier days' serves), now and then a conflict or orphan."""
    n_days = draw(st.integers(2, 4))
    days = []
    serve_no = 0
    served: list[tuple[str, list[str]]] = []
    for day in range(n_days):
        lines = []
        for _ in range(draw(st.integers(1, 4))):
            serve_no += 1
            sid = f"s{serve_no}"
            docs = draw(st.lists(st.sampled_from(["d1", "d2", "d3", "d4", "d5"]), min_size=1, max_size=3, unique=True))
            items = [always("r1")] + [
                ranked(d, r, version=draw(st.sampled_from(["v1", "v2"]))) for r, d in enumerate(docs, 1)
            ]
            lines.append(
                serve(
                    sid,
                    f"2026-11-0{day + 1}T0{serve_no % 10}:00:00Z",
                    draw(st.sampled_from(TASKS)),
                    items,
                    project=draw(st.sampled_from(["billing", "ops"])),
                )
            )
            served.append((sid, ["r1"] + docs))
        for _ in range(draw(st.integers(0, 6))):
            sid, docs = draw(st.sampled_from(served))
            target = draw(st.sampled_from(docs + ["d9"]))
            minute = draw(st.integers(10, 59))
            lines.append(
                verdict(
                    sid,
                    target,
                    draw(st.sampled_from(["helped", "noise", "wrong"])),
                    f"2026-11-0{day + 1}T09:{minute:02d}:00Z",
                )
            )
        if draw(st.integers(0, 4)) == 0:
            lines.append(verdict("s404", "d1", "helped", f"2026-11-0{day + 1}T10:00:00Z"))
        if served and draw(st.integers(0, 4)) == 0:
            sid, _ = draw(st.sampled_from(served))
            lines.append(serve(sid, "2026-11-01T00:00:00Z", "a conflicting task", [ranked("d5", 1)]))
        days.append(lines)
    return days


def _outcome(con):
    golden = con.execute("SELECT * FROM golden_set ORDER BY ALL").fetchall()
    funnel = con.execute(
        "SELECT step, judgments_dropped, judgments_left, units_left FROM filter_funnel "
        "WHERE build_id = (SELECT max(build_id) FROM golden_builds) ORDER BY step_order"
    ).fetchall()
    counts = con.execute(
        "SELECT n_queries, n_projects, n_helped, n_noise, n_wrong, n_stale, unjudged_items, "
        "orphan_verdicts, unserved_item_verdicts, lines_read, lines_rejected, conflicting_serves FROM golden_builds "
        "ORDER BY build_id DESC LIMIT 1"
    ).fetchall()
    queue = con.execute("SELECT query_id, doc_id, reason FROM relabel_queue ORDER BY ALL").fetchall()
    return golden, funnel, counts, queue


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(events(), log_days()), st.booleans(), st.booleans(), st.sampled_from([delta.FOLD_AT_MOST, 1.0]))
def test_building_after_each_day_matches_one_full_build(days, backfill_last_first, rewrite, fold_at_most):
    _check_each_day(days, backfill_last_first, rewrite, fold_at_most)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log_days(), st.booleans())
def test_folding_each_day_into_the_labels_matches_one_full_build(days, backfill_last_first):
    """Days that only add lines, to queries the previous build held: the fold's own ground."""
    folded = _check_each_day(days, backfill_last_first, rewrite=False, fold_at_most=1.0)
    event("folded" if folded else "nothing to fold")


def _check_each_day(days, backfill_last_first: bool, rewrite: bool, fold_at_most: float) -> int:
    """Build after each day; each build must equal a fresh full build. Returns the queries folded."""
    folded = 0
    # A day of these tiny logs is a large share of them: a share of 1.0 folds whatever may be folded.
    with tempfile.TemporaryDirectory() as tmp, patch.object(delta, "FOLD_AT_MOST", fold_at_most):
        tmp = Path(tmp)
        logs = tmp / "logs"
        corpus = write_corpus(tmp / "corpus.jsonl", DOCS)
        con = connect(tmp / "step.duckdb")
        order = list(range(len(days)))
        if backfill_last_first:
            order = [order[-1]] + order[:-1]  # a later day arrives first, earlier ones are backfilled
        computations = []
        for step, day in enumerate(order):
            write_log(logs, f"2026-11-0{day + 1}", "part-0001.jsonl", days[day])
            if step == 1 and rewrite:
                # A file rewritten after it was read: its first line gone, one verdict more.
                write_log(
                    logs,
                    f"2026-11-0{order[0] + 1}",
                    "part-0001.jsonl",
                    days[order[0]][1:] + [verdict("s1", "d1", "helped", "2026-11-05T00:00:00Z")],
                )
            ingest_all(con, logs)
            store_snapshot(con, read_corpus(corpus))
            result = build_golden_set(con, checks=LAX)
            computations.append(result.build_id)
            folded += result.folded_queries
            fresh = connect(tmp / f"fresh{step}.duckdb")
            ingest_all(fresh, logs)
            store_snapshot(fresh, read_corpus(corpus))
            build_golden_set(fresh, checks=LAX)
            assert _outcome(con) == _outcome(fresh)
            fresh.close()
        kinds = [k for (k,) in con.execute("SELECT computation FROM golden_builds ORDER BY build_id").fetchall()]
        assert kinds[0] == "full" and set(kinds[1:]) <= {"incremental", "repeat"}
        return folded
