"""Label rows held by runs of builds: what each build holds never changes afterwards.

A build writes only the label rows that changed, so a mistake would show as an
earlier build's labels shifting, or history drifting from the labels. Both are
checked here against what each build read out when it was committed, over random
sequences of new log days, new human labels, corpus changes and unchanged reruns.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from goldenset import delta
from goldenset.build import build_golden_set
from goldenset.corpus import read_corpus
from goldenset.counts import relabel_queue_by_reason as relabel_counts
from goldenset.ingest import ingest_all
from goldenset.labelling.ingest import ingest_labels
from goldenset.labelling.rubric import load_rubric
from goldenset.records import normalise_task, query_id
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from tests.helpers import (
    DAY_DOCS,
    LENIENT,
    RUBRIC_PATH,
    day_queries,
    doc,
    events,
    examples,
    label_line,
    log_days,
    new_warehouse,
    publish,
    ranked,
    serve,
    verdict,
    write_corpus,
    write_labels,
    write_log,
)

RUBRIC = load_rubric(RUBRIC_PATH)
QUERIES = day_queries()
DAY1, DAY2 = "2026-11-01", "2026-11-02"
S1 = serve("s1", "2026-11-01T09:00:00Z", "Fix the refund window", [ranked("d1", 1), ranked("d2", 2)])
V1 = verdict("s1", "d1", "helped", "2026-11-01T09:05:00Z")
DOCS_1_TO_9 = [doc(f"d{i}") for i in range(1, 10)] + [doc("rule-1")]

CORPORA = [
    DAY_DOCS,
    [doc("d1", "v2"), doc("d2", "v2"), doc("d3"), doc("d4", superseded_by="d1"), doc("d5"), doc("r1")],
    [doc("d1"), doc("d2", "v1"), doc("d3", status="retired"), doc("d4"), doc("d5", status="retired"), doc("r1")],
]


@st.composite
def label_lines(draw, day: int, queries: list[str]):
    lines = []
    for n in range(draw(st.integers(1, 6))):
        doc_id = draw(st.sampled_from(["d1", "d2", "d4", "d5"]))
        lab = draw(st.sampled_from(["relevant", "partial", "irrelevant"]))
        annotator = draw(st.sampled_from(["ann", "bea"]))
        version = draw(st.sampled_from(["v1", "v2"]))
        qid = draw(st.sampled_from(queries))
        lines.append(
            label_line(qid, doc_id, lab, f"2026-11-1{day}T10:{n:02d}:00Z", annotator=annotator, version=version)
        )
    return lines


@st.composite
def plans(draw):
    days = draw(st.one_of(log_days(), events()))
    # Labels mostly name queries the log serves, so that they meet log labels.
    served = sorted(
        {query_id(r["project"], normalise_task(r["task"])) for day in days for r in day if r["event"] == "serve"}
    )
    steps = draw(
        st.lists(st.sampled_from(["log", "log", "labels", "labels", "corpus", "same"]), min_size=3, max_size=7)
    )
    labels = [draw(label_lines(i, served + QUERIES[:1])) for i in range(len(steps))]
    corpora = [draw(st.integers(0, len(CORPORA) - 1)) for _ in steps]
    return days, steps, labels, corpora


def _held(con, build_id: int) -> list[tuple]:
    return con.execute("SELECT * FROM golden_set_by_build WHERE build_id = ? ORDER BY ALL", [build_id]).fetchall()


def _expected_history(per_build: dict[int, list[tuple]], computed: list[int]) -> list[tuple]:
    """label_history derived from each computed build's rows: a version per run of equal values."""
    open_versions: dict[tuple, tuple[tuple, int]] = {}
    out = []
    for b in computed:
        now = {}
        for row in per_build[b]:
            # golden_set_by_build: build_id, query_id, project, task, doc_id, doc_version, verdict,
            # relevance, serve_id, judged_at, stale_reason, source, label, ...
            _, q, _, _, d, ver, verdict, _, _, _, stale, source, lab = row[:13]
            now[(q, d)] = (source, verdict, lab, ver, stale)
        for pair, (version, start) in list(open_versions.items()):
            if now.get(pair) != version:
                out.append((*pair, *version, start, b))
                del open_versions[pair]
        for pair, version in now.items():
            if pair not in open_versions:
                open_versions[pair] = (version, b)
    out += [(*pair, *version, start, None) for pair, (version, start) in open_versions.items()]
    return sorted(out, key=repr)


# A plan by hand with every kind of step: labels before the log serves their pair, a new day
# that moves a verdict and a version, a corpus change that makes labels stale, an unchanged rerun
# (a repeat) and a second annotator's later label replacing the first.
_Q = query_id("billing", normalise_task("Fix refunds"))
HAND_PLAN = (
    [
        [
            serve("s1", "2026-11-01T00:00:00Z", "Fix refunds", [ranked("d1", 1), ranked("d2", 2)]),
            verdict("s1", "d1", "helped", "2026-11-01T09:10:00Z"),
            verdict("s1", "d2", "noise", "2026-11-01T09:11:00Z"),
        ],
        [
            serve("s2", "2026-11-02T01:00:00Z", "fix  REFUNDS", [ranked("d1", 1, version="v2")]),
            verdict("s2", "d1", "wrong", "2026-11-02T09:10:00Z"),
            verdict("s1", "d2", "helped", "2026-11-02T09:20:00Z"),
        ],
    ],
    ["labels", "log", "corpus", "same", "labels"],
    [
        [
            label_line(_Q, "d1", "relevant", "2026-11-10T10:00:00Z"),
            label_line(_Q, "d4", "partial", "2026-11-10T10:01:00Z"),
        ],
        [],
        [],
        [],
        [label_line(_Q, "d1", "irrelevant", "2026-11-14T10:00:00Z", annotator="bea", version="v2")],
    ],
    [0, 0, 1, 0, 0],
)


@pytest.mark.slow  # up to seven builds and their read-outs for each example
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(HAND_PLAN)
@given(plans())
def test_each_build_keeps_its_labels_and_history_follows_them(plan):
    days, steps, labels, corpora = plan
    with tempfile.TemporaryDirectory() as tmp, patch.object(delta, "FOLD_AT_MOST", 1.0):
        tmp = Path(tmp)
        logs, label_root = tmp / "logs", tmp / "labels"
        con = new_warehouse(tmp / "g.duckdb")
        write_log(logs, "2026-11-01", "part-0001.jsonl", days[0])
        next_day, corpus = 1, 0
        recorded: dict[int, list[tuple]] = {}
        for i, step in enumerate(steps):
            if step == "log" and next_day < len(days):
                write_log(logs, f"2026-11-0{next_day + 1}", "part-0001.jsonl", days[next_day])
                next_day += 1
            elif step == "labels":
                write_labels(label_root, f"2026-11-1{i}", "part-0001.jsonl", labels[i])
            elif step == "corpus":
                corpus = corpora[i]
            ingest_all(con, logs)
            if label_root.exists():
                ingest_labels(con, label_root, RUBRIC)
            store_snapshot(con, read_corpus(write_corpus(tmp / f"corpus{i}.jsonl", CORPORA[corpus])))
            build = build_golden_set(con, checks=LENIENT)
            recorded[build.build_id] = _held(con, build.build_id)
            latest = con.execute("SELECT * FROM golden_set ORDER BY ALL").fetchall()
            assert latest == [row[1:] for row in recorded[build.build_id]]
            # The open rows are the latest build's, replaced log labels included.
            n_open, n_overridden = con.execute(
                "SELECT count(*), count(*) FILTER (WHERE overridden) FROM build_labels WHERE valid_to_build IS NULL"
            ).fetchone()
            assert n_open - n_overridden == len(latest)
            assert n_overridden == build.record.log_labels_overridden
            queue = con.execute("SELECT reason, count(*) FROM relabel_queue GROUP BY 1 ORDER BY 1").fetchall()
            assert relabel_counts(con) == dict(queue)
            if build.folded_queries:
                event("new lines folded into a query's labels")
            if build.record.n_human_labels:
                event("a build holds human labels")
            if n_overridden:
                event("a build replaced log labels")
        for build_id, rows in recorded.items():
            assert _held(con, build_id) == rows, f"build {build_id}'s labels changed after later builds"
        computed = [
            b
            for (b,) in con.execute(
                "SELECT build_id FROM golden_builds WHERE labels_build_id = build_id ORDER BY 1"
            ).fetchall()
        ]
        history = con.execute(
            "SELECT query_id, doc_id, source, verdict, label, doc_version, stale_reason, valid_from_build, "
            "valid_to_build FROM label_history"
        ).fetchall()
        assert sorted(history, key=repr) == _expected_history(recorded, computed)
        if any(h[-1] is not None for h in history):
            event("a label version was closed")


def test_a_warehouse_storing_labels_per_build_is_reshaped_without_losing_a_build(tmp_path):
    """Rows of the earlier layout (one copy per computed build) read back the same after the upgrade."""
    con = connect(tmp_path / "old.duckdb")
    # That layout predates recorded migrations: such a warehouse has no schema_migrations.
    con.execute("DROP TABLE schema_migrations")
    con.execute("DROP VIEW golden_set_by_build")
    con.execute("DROP VIEW golden_set")
    con.execute("DROP TABLE build_labels")
    con.execute(
        "CREATE TABLE build_labels (build_id BIGINT, query_id VARCHAR, project VARCHAR, task VARCHAR, "
        "doc_id VARCHAR, doc_version VARCHAR, verdict VARCHAR, relevance INTEGER, serve_id VARCHAR, "
        "judged_at TIMESTAMP, stale_reason VARCHAR, source VARCHAR, label VARCHAR, grade INTEGER, "
        "decided_by VARCHAR, annotators INTEGER, overridden BOOLEAN)"
    )
    # Builds 1 and 3 computed labels, 2 repeated 1's, 4 repeated 3's.
    for b, labels_of in ((1, 1), (2, 1), (3, 3), (4, 3)):
        con.execute(
            "INSERT INTO golden_builds (build_id, built_at, labels_build_id) VALUES (?, now(), ?)", [b, labels_of]
        )
    rows = [
        (1, "q1", "d1", "helped", False),
        (1, "q1", "d2", "noise", False),
        (3, "q1", "d1", "noise", False),
        (3, "q1", "d2", "noise", True),
    ]
    for b, q, d, v, over in rows:
        con.execute(
            "INSERT INTO build_labels VALUES (?, ?, 'p', 't', ?, 'v1', ?, 0, 's', '2026-11-01', NULL, 'log', "
            "NULL, 0, NULL, NULL, ?)",
            [b, q, d, v, over],
        )
    con.close()
    con = connect(tmp_path / "old.duckdb")
    got = con.execute("SELECT build_id, doc_id, verdict FROM golden_set_by_build ORDER BY build_id, doc_id").fetchall()
    assert got == [
        (1, "d1", "helped"),
        (1, "d2", "noise"),
        (2, "d1", "helped"),
        (2, "d2", "noise"),
        (3, "d1", "noise"),
        (4, "d1", "noise"),
    ]
    assert con.execute("SELECT doc_id, verdict FROM golden_set").fetchall() == [("d1", "noise")]
    assert con.execute("SELECT count(*) FROM build_labels WHERE valid_to_build IS NULL").fetchone() == (2,)
    # The rows closed at build 3 are kept apart from the open ones.
    assert con.execute("SELECT count(*) FROM build_labels WHERE valid_to_build IS NOT NULL").fetchone() == (0,)
    assert con.execute("SELECT valid_to_build, count(*) FROM build_labels_closed GROUP BY 1").fetchall() == [(3, 2)]


def test_closed_label_rows_kept_among_the_open_ones_are_moved_apart_when_the_warehouse_opens(tmp_path):
    """The layout before closed rows were kept apart reads back the same once they are moved."""
    log_root = tmp_path / "logs"
    con = connect(tmp_path / "g.duckdb")
    write_log(log_root, DAY1, "part-0001.jsonl", [S1, V1])
    ingest_all(con, log_root)
    publish(con, tmp_path, DOCS_1_TO_9)
    write_log(log_root, DAY2, "part-0001.jsonl", [verdict("s1", "d1", "noise", "2026-11-01T10:00:00Z")])
    ingest_all(con, log_root)
    publish(con, tmp_path, DOCS_1_TO_9)
    closed = con.execute("SELECT * FROM build_labels_closed ORDER BY ALL").fetchall()
    assert [r[:2] for r in closed] == [(1, 2)]  # the helped label of build 1, closed at build 2
    by_build = con.execute("SELECT * FROM golden_set_by_build ORDER BY ALL").fetchall()
    # The layout before: one table, closed rows among the open ones (and no recorded migrations).
    con.execute("DROP TABLE schema_migrations")
    con.execute("INSERT INTO build_labels BY NAME SELECT * FROM build_labels_closed")
    con.execute("DELETE FROM build_labels_closed")
    con.close()
    con = connect(tmp_path / "g.duckdb")
    try:
        assert con.execute("SELECT count(*) FROM build_labels WHERE valid_to_build IS NOT NULL").fetchone() == (0,)
        assert con.execute("SELECT * FROM build_labels_closed ORDER BY ALL").fetchall() == closed
        assert con.execute("SELECT * FROM golden_set_by_build ORDER BY ALL").fetchall() == by_build
    finally:
        con.close()
