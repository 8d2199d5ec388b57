"""An incremental build gives exactly what a full build of the same input gives."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldenset.build import build_golden_set
from goldenset.checks import BuildChecks
from goldenset.corpus import read_corpus
from goldenset.ingest import ingest_all
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from tests.helpers import always, doc, ranked, serve, verdict, write_corpus, write_log

DOCS = [doc("d1"), doc("d2", "v2"), doc("d3", status="retired"), doc("d4", superseded_by="d1"), doc("d5"), doc("r1")]
TASKS = ["Fix refunds", "fix  REFUNDS", "Ｆｉｘ refunds", "rotate keys", "Rotate keys", "parse csv"]
LAX = BuildChecks(block_rejected_share=1.0)


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
        "orphan_verdicts, unserved_item_verdicts, lines_read, lines_rejected FROM golden_builds "
        "ORDER BY build_id DESC LIMIT 1"
    ).fetchall()
    queue = con.execute("SELECT query_id, doc_id, reason FROM relabel_queue ORDER BY ALL").fetchall()
    return golden, funnel, counts, queue


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events(), st.booleans())
def test_building_after_each_day_matches_one_full_build(days, backfill_last_first):
    with tempfile.TemporaryDirectory() as tmp:
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
            if step == 1:
                # A file rewritten after it was read: its first line gone, one verdict more.
                write_log(
                    logs,
                    f"2026-11-0{order[0] + 1}",
                    "part-0001.jsonl",
                    days[order[0]][1:] + [verdict("s1", "d1", "helped", "2026-11-05T00:00:00Z")],
                )
            ingest_all(con, logs)
            store_snapshot(con, read_corpus(corpus))
            computations.append(build_golden_set(con, checks=LAX).build_id)
            fresh = connect(tmp / f"fresh{step}.duckdb")
            ingest_all(fresh, logs)
            store_snapshot(fresh, read_corpus(corpus))
            build_golden_set(fresh, checks=LAX)
            assert _outcome(con) == _outcome(fresh)
            fresh.close()
        kinds = [k for (k,) in con.execute("SELECT computation FROM golden_builds ORDER BY build_id").fetchall()]
        assert kinds[0] == "full" and set(kinds[1:]) <= {"incremental", "repeat"}
