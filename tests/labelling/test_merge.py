"""Human labels in the build (contract 7.3), on small hand-made worlds through the real pipeline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from goldenset.build import build_golden_set
from goldenset.corpus import read_corpus
from goldenset.ingest import ingest_all
from goldenset.labelling.ingest import ingest_labels
from goldenset.labelling.rubric import load_rubric, parse_rubric
from goldenset.records import normalise_task, query_id
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from tests.helpers import World, doc, ranked, serve, verdict, write_corpus, write_labels, write_log

RUBRIC_PATH = Path(__file__).parents[1] / "data" / "conformance" / "rubric.yaml"
RUBRIC = load_rubric(RUBRIC_PATH)
TASK = "Fix the refund window"
QID = query_id("billing", normalise_task(TASK))
DIMS = ("answerability", "authority", "recency", "coverage", "entity")


def label(doc_id, lab, annotator, ts, version="v1", decided_by=None, qid=QID, **extra) -> dict:
    by = decided_by or {"relevant": "answerability", "partial": "coverage", "irrelevant": "recency"}[lab]
    return {
        "event": "label",
        "query_id": qid,
        "doc_id": doc_id,
        "doc_version": version,
        "label": lab,
        "decided_by": by,
        "annotator": annotator,
        "rubric": "support-policies",
        "ts": ts,
        **extra,
    }


class MergeWorld(World):
    """One query over d1..d4 in a tiny log; labels and corpus versions are the test's to set."""

    def __init__(self, tmp: Path, verdicts=(("d1", "helped"), ("d2", "noise"), ("d3", "helped"))):
        super().__init__(tmp)
        items = [ranked(d, r) for r, (d, _) in enumerate(verdicts, start=1)]
        write_log(
            self.logs,
            "2026-11-01",
            "part-0001.jsonl",
            [serve("s1", "2026-11-01T09:00:00Z", TASK, items)]
            + [verdict("s1", d, v, "2026-11-01T09:10:00Z") for d, v in verdicts],
        )
        self.con = connect(self.db)
        self.snapshot([doc(f"d{i}") for i in range(1, 6)])

    def snapshot(self, docs) -> None:
        """Write a new corpus file of `docs` and store its snapshot."""
        path = write_corpus(self.root / f"corpus-{len(os.listdir(self.root))}.jsonl", docs)
        store_snapshot(self.con, read_corpus(path))

    def build(self, rubric=RUBRIC):
        ingest_all(self.con, self.logs)
        if self.labels.exists():
            ingest_labels(self.con, self.labels, rubric)
        return build_golden_set(self.con)

    def rows(self) -> dict:
        return {
            d: dict(
                zip(
                    ("source", "label", "verdict", "doc_version", "stale_reason", "annotators", "decided_by"),
                    r,
                    strict=True,
                )
            )
            for d, *r in self.con.execute(
                "SELECT doc_id, source, label, verdict, doc_version, stale_reason, annotators, decided_by "
                "FROM golden_set ORDER BY doc_id"
            ).fetchall()
        }


def test_labels_at_the_current_version_outvote_more_labels_at_older_ones(tmp_path):
    w = MergeWorld(tmp_path)
    w.build()  # a committed build's snapshot holds d1 at v1, so labels at v1 are known
    w.snapshot([doc("d1", "v2"), *[doc(f"d{i}") for i in range(2, 6)]])
    write_labels(
        w.labels,
        "2026-11-03",
        "a.jsonl",
        [
            label("d1", "irrelevant", "ana", "2026-11-03T10:00:00Z", version="v1"),
            label("d1", "irrelevant", "ben", "2026-11-03T10:01:00Z", version="v1"),
            label("d1", "partial", "cy", "2026-11-03T09:00:00Z", version="v2"),
        ],
    )
    w.build()
    assert w.rows()["d1"] == {
        "source": "human",
        "label": "partial",
        "verdict": None,
        "doc_version": "v2",
        "stale_reason": None,
        "annotators": 3,
        "decided_by": "coverage",
    }


def test_a_tied_vote_goes_to_the_label_whose_latest_voting_line_is_later(tmp_path):
    w = MergeWorld(tmp_path)
    write_labels(
        w.labels,
        "2026-11-03",
        "a.jsonl",
        [
            label("d2", "relevant", "ana", "2026-11-03T10:00:00Z"),
            label("d2", "irrelevant", "ben", "2026-11-03T10:00:00Z"),  # same ts, later line
            label("d3", "irrelevant", "ana", "2026-11-03T11:00:00Z"),
            label("d3", "relevant", "ben", "2026-11-03T10:00:00Z"),
        ],
    )
    w.build()
    rows = w.rows()
    assert (rows["d2"]["label"], rows["d3"]["label"]) == ("irrelevant", "irrelevant")


def test_a_stale_human_label_gives_way_to_a_current_log_label_and_both_stale_keep_the_human(tmp_path):
    w = MergeWorld(tmp_path, verdicts=(("d1", "helped"), ("d2", "helped")))
    w.build()
    # d1's log label is at v2 (served at v2); the human labelled v1, now stale.
    write_log(
        w.logs,
        "2026-11-02",
        "part-0001.jsonl",
        [
            serve("s2", "2026-11-02T09:00:00Z", TASK, [ranked("d1", 1, "v2")]),
            verdict("s2", "d1", "helped", "2026-11-02T09:10:00Z"),
        ],
    )
    w.snapshot([doc("d1", "v2"), doc("d2", superseded_by="d5"), doc("d3"), doc("d4"), doc("d5")])
    write_labels(
        w.labels,
        "2026-11-03",
        "a.jsonl",
        [
            label("d1", "irrelevant", "ana", "2026-11-03T10:00:00Z", version="v1"),
            label("d2", "irrelevant", "ana", "2026-11-03T10:00:00Z", decided_by="authority"),
        ],
    )
    result = w.build()
    rows = w.rows()
    assert rows["d1"]["source"] == "log" and rows["d1"]["doc_version"] == "v2" and rows["d1"]["stale_reason"] is None
    assert rows["d2"] == {
        "source": "human",
        "label": "irrelevant",
        "verdict": None,
        "doc_version": "v1",
        "stale_reason": "superseded",
        "annotators": 1,
        "decided_by": "authority",
    }
    assert result.record.log_labels_overridden == 1
    kept = w.con.execute("SELECT doc_id, in_golden_set FROM build_human_labels ORDER BY doc_id").fetchall()
    assert kept == [("d1", False), ("d2", True)]


def test_a_query_whose_positives_were_all_overruled_stays_in_the_set(tmp_path):
    w = MergeWorld(tmp_path, verdicts=(("d1", "helped"), ("d2", "noise")))
    write_labels(w.labels, "2026-11-03", "a.jsonl", [label("d1", "irrelevant", "ana", "2026-11-03T10:00:00Z")])
    result = w.build()
    assert result.record.n_queries == 1
    assert w.con.execute("SELECT max(relevance) FROM golden_set").fetchone() == (0,)


def test_a_label_on_a_version_no_built_snapshot_held_is_unknown_until_a_build_holds_it(tmp_path):
    w = MergeWorld(tmp_path)
    w.snapshot([doc("d1", "v2"), *[doc(f"d{i}") for i in range(2, 6)]])  # v1 was never a build's snapshot
    write_labels(
        w.labels, "2026-11-03", "a.jsonl", [label("d1", "relevant", "ana", "2026-11-03T10:00:00Z", version="v1")]
    )
    w.build()
    assert w.con.execute(
        "SELECT line, reason FROM rejected_records WHERE starts_with(source_file, 'labels/')"
    ).fetchall() == [(1, "unknown_document_version")]
    assert w.rows()["d1"]["source"] == "log"


def test_labels_that_take_part_in_nothing_are_kept_and_counted_per_annotator_and_pair(tmp_path):
    w = MergeWorld(tmp_path)
    write_labels(
        w.labels,
        "2026-11-03",
        "a.jsonl",
        [
            label("d1", "relevant", "ana", "2026-11-03T10:00:00Z", qid="0123456789abcdef"),  # no such golden query
            label("d1", "partial", "ana", "2026-11-03T11:00:00Z", qid="0123456789abcdef"),  # the same pair again
            label("d1", "relevant", "ben", "2026-11-03T10:00:00Z", qid="0123456789abcdef"),
            label("d9", "relevant", "ana", "2026-11-03T10:00:00Z"),  # no such document: unknown version
        ],
    )
    result = w.build()
    assert result.record.human_labels_unused == 2
    assert result.record.label_lines_rejected == 1
    assert w.con.execute("SELECT count(*) FROM human_labels").fetchone() == (4,)


def test_label_changes_write_source_and_value_when_a_human_label_replaces_a_log_label(tmp_path):
    w = MergeWorld(tmp_path)
    w.build()
    write_labels(w.labels, "2026-11-03", "a.jsonl", [label("d1", "partial", "ana", "2026-11-03T10:00:00Z")])
    w.build()
    changes = w.con.execute(
        "SELECT change, old_value, new_value FROM label_changes WHERE to_build = 2 ORDER BY change"
    ).fetchall()
    assert changes == [("verdict_changed", "log:helped", "human:partial")]
    history = w.con.execute(
        "SELECT source, verdict, label, valid_from_build, valid_to_build FROM label_history "
        "WHERE doc_id = 'd1' ORDER BY valid_from_build"
    ).fetchall()
    assert history == [("log", "helped", None, 1, 2), ("human", None, "partial", 2, None)]


def test_the_stale_run_of_a_pair_spans_a_change_of_source(tmp_path):
    w = MergeWorld(tmp_path)
    w.build()  # build 1 holds d1 at v1
    w.snapshot([doc("d1", "v2"), *[doc(f"d{i}") for i in range(2, 6)]])
    w.build()  # build 2: d1's log label (v1) is stale
    write_labels(w.labels, "2026-11-03", "a.jsonl", [label("d1", "relevant", "ana", "2026-11-03T10:00:00Z")])
    w.build()  # build 3: a human label, still at v1: stale too, and the stale run goes on
    assert w.con.execute("SELECT doc_id, reason, first_flagged_build FROM relabel_queue").fetchall() == [
        ("d1", "version_changed", 2)
    ]
    assert w.rows()["d1"]["source"] == "human"


@pytest.mark.slow
def test_a_build_after_new_log_lines_with_the_same_labels_equals_a_full_build(tmp_path):
    w = MergeWorld(tmp_path)
    write_labels(w.labels, "2026-11-03", "a.jsonl", [label("d1", "partial", "ana", "2026-11-03T10:00:00Z")])
    w.build()
    write_log(
        w.logs,
        "2026-11-04",
        "part-0001.jsonl",
        [
            serve("s9", "2026-11-04T09:00:00Z", "another task", [ranked("d4", 1)]),
            verdict("s9", "d4", "helped", "2026-11-04T09:10:00Z"),
        ],
    )
    second = w.build()
    assert second.record.computation == "incremental"
    got = w.con.execute("SELECT * FROM golden_set ORDER BY ALL").fetchall()
    fresh = MergeWorld(tmp_path / "fresh")
    write_log(
        fresh.logs,
        "2026-11-04",
        "part-0001.jsonl",
        [
            serve("s9", "2026-11-04T09:00:00Z", "another task", [ranked("d4", 1)]),
            verdict("s9", "d4", "helped", "2026-11-04T09:10:00Z"),
        ],
    )
    write_labels(fresh.labels, "2026-11-03", "a.jsonl", [label("d1", "partial", "ana", "2026-11-03T10:00:00Z")])
    assert fresh.build().record.computation == "full"
    assert fresh.con.execute("SELECT * FROM golden_set ORDER BY ALL").fetchall() == got


def test_new_label_lines_make_the_next_build_full_not_a_repeat(tmp_path):
    w = MergeWorld(tmp_path)
    write_labels(w.labels, "2026-11-03", "a.jsonl", [label("d1", "partial", "ana", "2026-11-03T10:00:00Z")])
    assert w.build().record.computation == "full"
    assert w.build().record.computation == "repeat"
    path = write_labels(
        w.labels,
        "2026-11-03",
        "a.jsonl",
        [label("d1", "partial", "ana", "2026-11-03T10:00:00Z"), label("d2", "relevant", "ana", "2026-11-03T10:05:00Z")],
    )
    os.utime(path, (1, 1))
    third = w.build()
    assert third.record.computation == "full" and third.record.n_human_labels == 2


def test_a_change_of_the_rubrics_content_validates_every_label_file_again(tmp_path):
    w = MergeWorld(tmp_path)
    write_labels(w.labels, "2026-11-03", "a.jsonl", [label("d1", "partial", "ana", "2026-11-03T10:00:00Z")])
    w.build()
    renamed = parse_rubric(RUBRIC_PATH.read_text().replace("partial:", "part_relevant:"), "renamed.yaml")
    w.build(renamed)
    assert w.con.execute(
        "SELECT line, reason FROM rejected_records WHERE starts_with(source_file, 'labels/')"
    ).fetchall() == [(1, "invalid_field")]
    assert w.rows()["d1"]["source"] == "log"


def test_a_deleted_label_file_keeps_its_rows_and_an_appended_one_is_read_again(tmp_path):
    w = MergeWorld(tmp_path)
    first = write_labels(w.labels, "2026-11-03", "a.jsonl", [label("d1", "partial", "ana", "2026-11-03T10:00:00Z")])
    w.build()
    first.unlink()
    write_labels(w.labels, "2026-11-04", "b.jsonl", [label("d2", "relevant", "ben", "2026-11-04T10:00:00Z")])
    w.build()
    assert {d: r["source"] for d, r in w.rows().items()} == {"d1": "human", "d2": "human", "d3": "log"}


def test_a_human_labels_grade_gives_its_relevance_and_is_what_an_export_writes(tmp_path):
    # Contract 7.3: relevance is 1 when grade >= 1, and exports write `grade`. d1 human relevant (2),
    # d2 human partial (1), d3 log helped (1).
    from goldenset.export import export_build

    w = MergeWorld(tmp_path)
    write_labels(
        w.labels,
        "2026-11-02",
        "part-0001.jsonl",
        [label("d1", "relevant", "ana", "2026-11-02T10:00:00Z"), label("d2", "partial", "ana", "2026-11-02T10:00:00Z")],
    )
    w.build()
    rows = w.con.execute("SELECT doc_id, source, grade, relevance FROM golden_set ORDER BY doc_id").fetchall()
    assert rows == [("d1", "human", 2, 1), ("d2", "human", 1, 1), ("d3", "log", 1, 1)]
    export_build(w.con, tmp_path / "out")
    beir = (tmp_path / "out" / "qrels" / "test.tsv").read_text().splitlines()
    trec = (tmp_path / "out" / "qrels.trec").read_text().splitlines()
    assert beir == ["query-id\tcorpus-id\tscore", f"{QID}\td1\t2", f"{QID}\td2\t1", f"{QID}\td3\t1"]
    assert trec == [f"{QID} 0 d1 2", f"{QID} 0 d2 1", f"{QID} 0 d3 1"]
