"""The labelling page's context for a decision: a stale pair's old label and what changed, a successor's predecessor.

Built by the real pipeline (ingest, two corpus snapshots, two builds): build 1 labels d1
and d2 from helped verdicts; then d1 changes version (its text too) and d2 is superseded
by d3, so build 2 holds both labels stale. The queue is written by hand so the test names
which pair is which.
"""

from __future__ import annotations

import re
from pathlib import Path

from starlette.testclient import TestClient

from goldenset.build import build_golden_set
from goldenset.corpus import read_corpus
from goldenset.ingest import ingest_all
from goldenset.labelling.page import create_app, open_session
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from tests.helpers import doc, ranked, serve, verdict, write_corpus, write_log

RUBRIC = Path(__file__).resolve().parents[1] / "data" / "conformance" / "rubric.yaml"
OLD_TEXT = "Refunds take 30 days.\nContact support to start one."
NEW_TEXT = "Refunds take 14 days.\nContact support to start one."


def _build(con, corpus: Path) -> None:
    store_snapshot(con, read_corpus(corpus))
    build_golden_set(con)


def test_a_stale_pair_shows_its_label_and_the_diff_and_a_successor_links_what_it_replaced(tmp_path):
    logs = tmp_path / "logs"
    ts = "2026-11-01T09:00:00Z"
    write_log(
        logs,
        "2026-11-01",
        "part-0001.jsonl",
        [
            serve("s1", ts, "how long do refunds take", [ranked("d1", 1), ranked("d2", 2)]),
            verdict("s1", "d1", "helped", "2026-11-01T09:01:00Z"),
            verdict("s1", "d2", "helped", "2026-11-01T09:02:00Z"),
        ],
    )
    db = tmp_path / "g.duckdb"
    con = connect(db)
    try:
        ingest_all(con, logs)
        _build(con, write_corpus(tmp_path / "c1.jsonl", [doc("d1", text=OLD_TEXT), doc("d2"), doc("d3")]))
        moved = [doc("d1", "v2", text=NEW_TEXT), doc("d2", superseded_by="d3"), doc("d3")]
        _build(con, write_corpus(tmp_path / "c2.jsonl", moved))
        held = dict(con.execute("SELECT doc_id, verdict FROM golden_set WHERE stale_reason IS NOT NULL").fetchall())
        (qid,) = con.execute("SELECT DISTINCT query_id FROM golden_set").fetchone()
        for priority, doc_id, version, reason in (
            (1, "d1", "v2", "stale"),
            (2, "d3", "v1", "successor"),
            (3, "d2", "v1", "stale"),
        ):
            con.execute(
                "INSERT INTO labelling_queue (pool_id, query_id, doc_id, doc_version, reason, rankers, best_rank, "
                "priority, pooled_at, project, task) VALUES (1, ?, ?, ?, ?, [], NULL, ?, now(), 'billing', 't')",
                [qid, doc_id, version, reason, priority],
            )
    finally:
        con.close()
    assert held == {"d1": "helped", "d2": "helped"}  # both log labels (helped verdicts) went stale in build 2

    session = open_session("ana", db=db, labels=tmp_path / "labels", rubric=RUBRIC)
    with TestClient(create_app(session), base_url="http://127.0.0.1") as c:
        stale = c.get("/pair/1").text
        successor = c.get("/pair/2").text
        superseded = c.get("/pair/3").text
        # The log's verdict is the agent's: it is shown once the annotator has decided, not before.
        answers = {f"dim_{d}": "pass" for d in session.rubric.dimension_names}
        item = session.items[0]
        form = {"token": session.token, "query_id": item.query_id, "doc_id": item.doc_id}
        form |= {"doc_version": item.doc_version, "decided_by": session.rubric.dimension_names[0], **answers}
        decided = c.post("/label", data=form).text
        reopened = c.get("/pair/1").text
    assert (
        "<strong>helped" not in stale
        and "verdict <strong>" not in stale
        and "the log's verdict (shown once you decide)" in stale
    )
    assert "Beside it: the log's verdict <strong>helped</strong>." in decided
    assert "Beside it: the log's verdict <strong>helped</strong>." in reopened
    diff = re.search(r'<pre id="diff">(.*?)</pre>', stale, flags=re.S).group(1).splitlines()
    assert "-Refunds take 30 days." in diff and "+Refunds take 14 days." in diff
    assert " Contact support to start one." in diff  # context, unchanged
    assert 'id="replaced-doc">d2</code>' in successor and '<a href="/pair/3" id="replaced-link">pair 3</a>' in successor
    # d2's own version did not change: the texts are said to be the same.
    assert 'id="diff-none"' in superseded and "verdict <strong>" not in superseded
