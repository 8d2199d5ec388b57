"""Spans from opentelemetry-sdk, written as OTLP JSON, imported and built: the same golden set as contract JSONL."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goldenset.records import normalise_task, query_id
from goldenset.snapshots import snapshot_corpus
from goldenset.traces.importer import import_traces
from goldenset.traces.mapping import AlwaysRule, Mapping
from goldenset.warehouse import connect
from goldenset_dagster.cli import main
from tests.helpers import always, doc, ranked, serve, verdict, write_corpus, write_log
from tests.traces.producers import Retrieval, otlp_json_line, retriever_span_ids, retriever_spans

pytestmark = pytest.mark.slow

T1 = datetime(2026, 11, 28, 10, 0, 0, 250000, tzinfo=UTC)
T2 = datetime(2026, 11, 29, 9, 30, tzinfo=UTC)
TASK1 = "Add retries to the webhook sender"
TASK2 = "How are refunds issued?"
MAPPING = Mapping(always=AlwaysRule(key="injected", values=[True]))


@pytest.fixture
def project_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def corpus(tmp_path: Path) -> Path:
    return write_corpus(
        tmp_path / "corpus.jsonl",
        [doc("rule-17", "3"), doc("dec-204", "2"), doc("dec-9", "7"), doc("pol-1", "1"), doc("pol-2", "1")],
    )


def annotation(
    span_id, position, label=None, score=None, kind="HUMAN", at="2026-11-29T12:00:00+00:00", name="relevance"
):
    return {
        "span_id": span_id,
        "document_position": position,
        "name": name,
        "label": label,
        "score": score,
        "annotator_kind": kind,
        "updated_at": at,
    }


def test_sdk_spans_build_the_same_golden_set_as_the_equivalent_contract_log(project_dir):
    spans = retriever_spans(
        "billing",
        [
            Retrieval(T1, TASK1, [("rule-17", "3", {"injected": True}), ("dec-204", "2", {}), ("dec-9", None, {})]),
            Retrieval(T2, TASK2, [("pol-1", "1", {}), ("pol-2", None, {})]),
        ],
    )
    (t1, s1), (t2, s2) = retriever_span_ids(spans)
    export = project_dir / "export"
    export.mkdir()
    (export / "traces.jsonl").write_text(otlp_json_line(spans) + "\n")
    anns = [
        annotation(s1, 0, "relevant"),
        annotation(s1, 1, "relevant"),
        annotation(s1, 2, "irrelevant", at="2026-11-28T11:00:00Z"),
        annotation(s2, 0, score=1.0),
        annotation(s2, 1, "contradicted"),
        annotation(s2, 0, "irrelevant", kind="LLM", name="judge"),
    ]
    (export / "annotations.jsonl").write_text("".join(json.dumps(a) + "\n" for a in anns))
    mapping = Mapping.model_validate(
        {"always": {"key": "injected", "values": [True]}, "verdicts": {"scores": [{"min": 1, "verdict": "helped"}]}}
    )
    c = corpus(project_dir)
    db_traces = project_dir / "traces.duckdb"
    con = connect(db_traces)
    # The snapshot in force when the spans were recorded gives dec-9 and pol-2 their versions.
    snapshot_corpus(con, c, now=datetime(2026, 11, 1))
    result = import_traces(con, export, "otlp-json", mapping, project_dir / "logs-traces")
    con.close()
    assert (result.serves, result.verdicts, result.spans_skipped) == (2, 5, 2)
    assert dict(result.annotations_skipped) == {"annotator_kind_LLM": 1}
    assert dict(result.rejected) == {}

    # The same serves and verdicts, written by hand in the contract's format.
    logs = project_dir / "logs-contract"
    sid1, sid2 = f"{t1}-{s1}", f"{t2}-{s2}"
    write_log(
        logs,
        "2026-11-28",
        "part-0001.jsonl",
        [
            serve(
                sid1,
                "2026-11-28T10:00:00.25Z",
                TASK1,
                [always("rule-17", "3"), ranked("dec-204", 1, "2"), ranked("dec-9", 2, "7")],
            ),
            verdict(sid1, "rule-17", "helped", "2026-11-29T12:00:00Z"),
            verdict(sid1, "dec-204", "helped", "2026-11-29T12:00:00Z"),
            verdict(sid1, "dec-9", "noise", "2026-11-28T11:00:00Z"),
        ],
    )
    write_log(
        logs,
        "2026-11-29",
        "part-0001.jsonl",
        [
            serve(sid2, "2026-11-29T09:30:00Z", TASK2, [ranked("pol-1", 1, "1"), ranked("pol-2", 2, "1")]),
            verdict(sid2, "pol-1", "helped", "2026-11-29T12:00:00Z"),
            verdict(sid2, "pol-2", "wrong", "2026-11-29T12:00:00Z"),
        ],
    )
    db_contract = project_dir / "contract.duckdb"
    assert main(["build", "--logs", str(project_dir / "logs-traces"), "--corpus", str(c), "--db", str(db_traces)]) == 0
    # A second warehouse of the same home, for the comparison.
    assert main(["build", "--logs", str(logs), "--corpus", str(c), "--db", str(db_contract), "--new-warehouse"]) == 0

    def labels(db):
        con = connect(db, read_only=True)
        try:
            return con.execute(
                "SELECT query_id, doc_id, doc_version, verdict, relevance, serve_id, judged_at FROM golden_set ORDER BY ALL"
            ).fetchall()
        finally:
            con.close()

    got = labels(db_traces)
    assert got == labels(db_contract)
    q1, q2 = query_id("billing", normalise_task(TASK1)), query_id("billing", normalise_task(TASK2))
    # By hand: rule-17 is injected (always_served drops it); the rest are ranked judgments.
    assert sorted((q, d, v, verdict) for q, d, v, verdict, *_ in got) == sorted(
        [
            (q1, "dec-204", "2", "helped"),
            (q1, "dec-9", "7", "noise"),
            (q2, "pol-1", "1", "helped"),
            (q2, "pol-2", "1", "wrong"),
        ]
    )
