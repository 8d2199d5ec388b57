"""Hand-made span files of both formats, valid and not: the lines written, the rejects and their reasons."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from goldenset.errors import InputError, UsageError
from goldenset.quarantine import list_rejects
from goldenset.snapshots import snapshot_corpus
from goldenset.traces.importer import import_traces, line_text
from goldenset.traces.mapping import Mapping, load_mapping
from goldenset.warehouse import connect
from tests.helpers import doc, write_corpus

TRACE = "0af7651916cd43dd8448eb211c80319c"
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def kv(key, value):
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def otlp_span(span_id, attrs, start="1764324000000000000", trace=TRACE):
    span = {"traceId": trace, "spanId": span_id, "name": "retrieve", "attributes": [kv(k, v) for k, v in attrs.items()]}
    if start is not None:
        span["startTimeUnixNano"] = start
    return span


def request(*spans, service="billing"):
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [kv("service.name", service)]},
                "scopeSpans": [{"scope": {}, "spans": list(spans)}],
            }
        ]
    }


def oi_docs(*docs):
    out = {"openinference.span.kind": "RETRIEVER", "input.value": "refund window?"}
    for i, (doc_id, meta) in enumerate(docs):
        if doc_id is not None:
            out[f"retrieval.documents.{i}.document.id"] = doc_id
        out[f"retrieval.documents.{i}.document.score"] = 0.9 - i / 10
        if meta is not None:
            out[f"retrieval.documents.{i}.document.metadata"] = meta if isinstance(meta, str) else json.dumps(meta)
    return out


@pytest.fixture
def warehouse(tmp_path):
    con = connect(tmp_path / "g.duckdb")
    yield con
    con.close()


def lines(root: Path) -> list[dict]:
    return [json.loads(x) for p in sorted(root.rglob("*.jsonl")) for x in p.read_text().splitlines()]


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_bad_otlp_spans_are_quarantined_with_their_reasons_and_the_rest_imported(tmp_path, warehouse):
    good = otlp_span("00f067aa0ba902b7", oi_docs(("a", {"version": "1"}), ("b", {"version": "2"})))
    rows = [
        request(good),
        "{not json",
        "[1, 2]",
        request(otlp_span("", oi_docs(("a", {"version": "1"})))),
        request(otlp_span("00f067aa0ba902b8", oi_docs((None, {"version": "1"})))),
        request(otlp_span("00f067aa0ba902b9", oi_docs(("a", "{version")))),
        request(otlp_span("00f067aa0ba902ba", oi_docs(("a", {"version": "1"})), start=None)),
        request(otlp_span("00f067aa0ba902bb", oi_docs(("c", {})))),
        request(otlp_span("zz", oi_docs(("a", {"version": "1"})))),
    ]
    f = write_jsonl(tmp_path / "in" / "export.jsonl", rows)
    result = import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    assert result.serves == 1
    out = lines(tmp_path / "logs")
    assert out == [
        {
            "event": "serve",
            "serve_id": f"{TRACE}-00f067aa0ba902b7",
            "ts": "2025-11-28T10:00:00.000000Z",
            "project": "billing",
            "task": "refund window?",
            "items": [
                {"doc_id": "a", "doc_version": "1", "channel": "ranked", "rank": 1, "score": 0.9},
                {"doc_id": "b", "doc_version": "2", "channel": "ranked", "rank": 2, "score": 0.8},
            ],
            "span_id": "00f067aa0ba902b7",
            "span_documents": ["a", "b"],
        }
    ]
    assert (tmp_path / "logs" / "dt=2025-11-28" / "traces.jsonl").exists()
    rejects, total = list_rejects(warehouse, limit=None)
    assert [(r.source_file, r.line, r.reason) for r in rejects] == [
        ("traces/export.jsonl", 2, "invalid_json"),
        ("traces/export.jsonl", 3, "not_an_object"),
        ("traces/export.jsonl", 4, "missing_field"),
        ("traces/export.jsonl", 5, "missing_field"),
        ("traces/export.jsonl", 6, "invalid_field"),
        ("traces/export.jsonl", 7, "missing_field"),
        ("traces/export.jsonl", 8, "unknown_document_version"),
        ("traces/export.jsonl", 9, "invalid_field"),
    ]
    assert total == 8 and "no id" in rejects[3].detail and "metadata is not JSON" in rejects[4].detail


def test_reimporting_the_same_spans_writes_the_same_bytes_and_replaces_the_rejects(tmp_path, warehouse):
    f = write_jsonl(
        tmp_path / "export.jsonl",
        [request(otlp_span("00f067aa0ba902b7", oi_docs(("a", {"version": "1"})))), "{bad"],
    )
    import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    target = tmp_path / "logs" / "dt=2025-11-28" / "traces.jsonl"
    first, mtime = target.read_bytes(), target.stat().st_mtime_ns
    again = import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    assert target.read_bytes() == first and target.stat().st_mtime_ns == mtime and again.files_written == []
    assert list_rejects(warehouse)[1] == 1


def test_a_span_resent_with_new_content_in_another_file_converges_to_the_latest(tmp_path, warehouse):
    v1 = write_jsonl(tmp_path / "a.jsonl", [request(otlp_span("00f067aa0ba902b7", oi_docs(("a", {"version": "1"}))))])
    v2 = write_jsonl(tmp_path / "b.jsonl", [request(otlp_span("00f067aa0ba902b7", oi_docs(("a", {"version": "2"}))))])
    other = write_jsonl(
        tmp_path / "c.jsonl", [request(otlp_span("00f067aa0ba902c0", oi_docs(("z", {"version": "9"}))))]
    )
    for f in (v1, other, v2):
        import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    out = lines(tmp_path / "logs")
    assert [(s["serve_id"][-4:], s["items"][0]["doc_version"]) for s in out] == [("02b7", "2"), ("02c0", "9")]


def test_versions_come_from_the_snapshot_in_force_at_the_span_time(tmp_path, warehouse):
    old = write_corpus(tmp_path / "old.jsonl", [doc("a", "1"), doc("b", "1")])
    new = write_corpus(tmp_path / "new.jsonl", [doc("a", "2"), doc("b", "1")])
    snapshot_corpus(warehouse, old, now=datetime(2025, 11, 1))
    snapshot_corpus(warehouse, new, now=datetime(2025, 11, 28, 10, 0, 1))  # one second after the span
    f = write_jsonl(tmp_path / "e.jsonl", [request(otlp_span("00f067aa0ba902b7", oi_docs(("a", {}), ("b", None))))])
    import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    assert [i["doc_version"] for i in lines(tmp_path / "logs")[0]["items"]] == ["1", "1"]


def test_gen_ai_retrieval_spans_read_the_json_array_of_documents(tmp_path, warehouse):
    attrs = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.retrieval.query.text": "reset a password",
        "gen_ai.retrieval.documents": json.dumps(
            [
                {"id": "kb-1", "score": 0.7, "metadata": {"version": "4"}},
                {"id": "kb-2", "score": 0.5, "metadata": {"version": "1"}},
            ]
        ),
        "project": "helpdesk",
    }
    f = write_jsonl(tmp_path / "g.jsonl", [request(otlp_span("00f067aa0ba902b7", attrs))])
    mapping = Mapping.model_validate({"project": {"attribute": "project"}})
    import_traces(warehouse, f, "otlp-json", mapping, tmp_path / "logs", now=NOW)
    [s] = lines(tmp_path / "logs")
    assert s["project"] == "helpdesk" and s["task"] == "reset a password"
    assert [(i["doc_id"], i["doc_version"], i["rank"]) for i in s["items"]] == [("kb-1", "4", 1), ("kb-2", "1", 2)]


PHOENIX_SPAN = {
    "name": "retrieve",
    "span_kind": "RETRIEVER",
    "context.span_id": "5e1c0b2a9d3f4e67",
    "context.trace_id": "7f3e2d1c0b9a8f7e6d5c4b3a29180716",
    "start_time": "2026-11-30T08:15:00.123456+00:00",
    "attributes.input.value": "Which plan includes SSO?",
    "attributes.retrieval.documents": [
        {"document.id": "plan-ent", "document.score": 0.8, "document.metadata": {"version": "5", "pinned": "yes"}},
        {"document.id": "plan-pro", "document.score": 0.6, "document.metadata": {"version": "3"}},
    ],
}


def phoenix_annotations():
    base = {"span_id": "5e1c0b2a9d3f4e67", "name": "relevance", "annotator_kind": "HUMAN"}
    return [
        {**base, "document_position": 0, "label": "relevant", "score": 1, "updated_at": "2026-11-30T09:00:00Z"},
        {**base, "document_position": 1, "label": "meh", "score": None, "updated_at": "2026-11-30T09:00:00Z"},
        {**base, "document_position": 5, "label": "relevant", "updated_at": "2026-11-30T09:00:00Z"},
        {
            **base,
            "span_id": "ffffffffffffffff",
            "document_position": 0,
            "label": "relevant",
            "updated_at": "2026-11-30T09:00:00Z",
        },
        {
            **base,
            "document_position": 1,
            "label": "irrelevant",
            "annotator_kind": "LLM",
            "updated_at": "2026-11-30T09:00:00Z",
        },
        {**base, "document_position": None, "label": "relevant", "updated_at": "2026-11-30T09:00:00Z"},
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_phoenix_span_table_and_its_document_annotations_become_serves_and_verdicts(tmp_path, warehouse, suffix):
    folder = tmp_path / "phoenix"
    folder.mkdir()
    if suffix == ".jsonl":
        write_jsonl(folder / "spans.jsonl", [PHOENIX_SPAN])
        write_jsonl(folder / "annotations.jsonl", phoenix_annotations())
    else:
        pq.write_table(
            pa.Table.from_pylist([{**PHOENIX_SPAN, "start_time": datetime(2026, 11, 30, 8, 15, 0, 123456)}]),
            folder / "spans.parquet",
        )
        pq.write_table(pa.Table.from_pylist(phoenix_annotations()), folder / "annotations.parquet")
    mapping = Mapping.model_validate({"project": {"default": "sales"}, "always": {"key": "pinned", "values": ["yes"]}})
    result = import_traces(warehouse, folder, "openinference", mapping, tmp_path / "logs", now=NOW)
    serve, verdict = lines(tmp_path / "logs")
    assert serve["ts"] == "2026-11-30T08:15:00.123456Z" and serve["project"] == "sales"
    assert serve["items"] == [
        {"doc_id": "plan-ent", "doc_version": "5", "channel": "always", "score": 0.8},
        # Rank 1: the injected document before it takes no rank (contract 14.2).
        {"doc_id": "plan-pro", "doc_version": "3", "channel": "ranked", "rank": 1, "score": 0.6},
    ]
    assert (verdict["doc_id"], verdict["verdict"], verdict["ts"]) == (
        "plan-ent",
        "helped",
        "2026-11-30T09:00:00.000000Z",
    )
    assert dict(result.annotations_skipped) == {"annotator_kind_LLM": 1, "names_no_document": 1}
    reasons = [(r.source_file, r.line, r.reason) for r in list_rejects(warehouse)[0]]
    ann = "traces/annotations" + suffix
    assert reasons == [(ann, 2, "unknown_label"), (ann, 3, "invalid_field"), (ann, 4, "unknown_span")]


def test_the_judge_rule_writes_llm_annotations_as_judge_label_lines_not_verdicts(tmp_path, warehouse):
    folder = tmp_path / "phoenix"
    write_jsonl(folder / "spans.jsonl", [PHOENIX_SPAN])
    write_jsonl(folder / "annotations.jsonl", phoenix_annotations()[4:5])
    mapping = Mapping.model_validate(
        {
            "project": {"default": "sales"},
            "judge": {
                "rubric": "support-policies",
                "annotator": "phoenix-llm",
                "labels": {"irrelevant": "irrelevant"},
                "decided_by": {"irrelevant": "answerability"},
            },
        }
    )
    result = import_traces(warehouse, folder, "openinference", mapping, tmp_path / "logs", tmp_path / "labels", now=NOW)
    assert result.verdicts == 0 and result.judge_labels == 1
    [label] = lines(tmp_path / "labels")
    assert label["kind"] == "judge" and label["doc_id"] == "plan-pro" and label["doc_version"] == "3"
    # Contract section 3's query_id, computed here by hand.
    qid = hashlib.sha256(b"sales\x1fwhich plan includes sso?").hexdigest()[:16]
    assert label["query_id"] == qid and label["label"] == "irrelevant" and label["decided_by"] == "answerability"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("verdicts:\n  kinds: [LLM]\n", "verdicts.kinds: LLM annotations are never verdicts"),
        (
            "verdicts:\n  labels: {relevant: great}\n",
            "verdicts.labels.relevant: Input should be 'helped', 'noise' or 'wrong'",
        ),
        ("projekt: x\n", "projekt: unknown key"),
        ("- a\n", "must hold a mapping of keys"),
        ("a: [\n", "is not valid YAML at line 2"),
    ],
)
def test_a_bad_mapping_file_is_one_line_naming_the_field(tmp_path, text, message):
    f = tmp_path / "mapping.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        load_mapping(f)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_unknown_format_and_missing_input_are_clear(tmp_path, warehouse):
    with pytest.raises(UsageError, match="--format must be one of otlp-json, openinference"):
        import_traces(warehouse, tmp_path, "zipkin", Mapping(), tmp_path / "logs")
    with pytest.raises(InputError, match="no span files at"):
        import_traces(warehouse, tmp_path / "nothing", "otlp-json", Mapping(), tmp_path / "logs")


def test_annotations_imported_after_their_spans_find_them_among_the_written_serves(tmp_path, warehouse):
    spans = write_jsonl(tmp_path / "day1" / "spans.jsonl", [PHOENIX_SPAN])
    mapping = Mapping.model_validate({"project": {"default": "sales"}})
    import_traces(warehouse, spans, "openinference", mapping, tmp_path / "logs", now=NOW)
    first = phoenix_annotations()[0]
    later = write_jsonl(tmp_path / "day2" / "annotations.jsonl", [first])
    result = import_traces(warehouse, later, "openinference", mapping, tmp_path / "logs", now=NOW)
    assert (result.serves, result.verdicts, dict(result.rejected)) == (0, 1, {})
    serve, verdict = lines(tmp_path / "logs")
    assert (verdict["serve_id"], verdict["doc_id"], verdict["verdict"]) == (serve["serve_id"], "plan-ent", "helped")


def test_an_annotation_changed_in_the_tool_converges_to_its_latest_label(tmp_path, warehouse):
    write_jsonl(tmp_path / "p" / "spans.jsonl", [PHOENIX_SPAN])
    mapping = Mapping.model_validate({"project": {"default": "sales"}})
    first = phoenix_annotations()[0]
    write_jsonl(tmp_path / "p" / "annotations.jsonl", [first])
    import_traces(warehouse, tmp_path / "p", "openinference", mapping, tmp_path / "logs", now=NOW)
    changed = {**first, "label": "irrelevant", "updated_at": "2026-11-30T11:00:00Z"}
    write_jsonl(tmp_path / "p" / "annotations.jsonl", [changed])
    import_traces(warehouse, tmp_path / "p", "openinference", mapping, tmp_path / "logs", now=NOW)
    verdicts = [x for x in lines(tmp_path / "logs") if x["event"] == "verdict"]
    assert [(v["doc_id"], v["verdict"], v["ts"]) for v in verdicts] == [
        ("plan-ent", "noise", "2026-11-30T11:00:00.000000Z")
    ]


def test_a_span_annotation_is_a_verdict_only_when_it_names_a_document_of_the_span(tmp_path, warehouse):
    base = {"span_id": "5e1c0b2a9d3f4e67", "name": "relevance", "annotator_kind": "HUMAN"}
    at = {"updated_at": "2026-11-30T09:00:00Z"}
    rows = [
        {**base, **at, "label": "relevant", "metadata": {"document_id": "plan-pro"}},
        {**base, **at, "label": "relevant", "metadata": {"document_id": "plan-basic"}},
        {**base, **at, "label": "relevant"},
    ]
    write_jsonl(tmp_path / "p" / "spans.jsonl", [PHOENIX_SPAN])
    write_jsonl(tmp_path / "p" / "span_annotations.jsonl", rows)
    mapping = Mapping.model_validate({"project": {"default": "sales"}})
    result = import_traces(warehouse, tmp_path / "p", "openinference", mapping, tmp_path / "logs", now=NOW)
    verdicts = [(x["doc_id"], x["verdict"]) for x in lines(tmp_path / "logs") if x["event"] == "verdict"]
    assert verdicts == [("plan-pro", "helped")]
    assert dict(result.annotations_skipped) == {"names_no_document": 1}
    assert [(r.line, r.reason) for r in list_rejects(warehouse)[0]] == [(2, "invalid_field")]


def test_openinference_documents_as_one_json_array_attribute_are_read_like_flattened_keys(tmp_path, warehouse):
    docs = [
        {"document.id": "a", "document.score": 0.9, "document.metadata": json.dumps({"version": "1"})},
        {"document": {"id": "b", "metadata": {"version": "2"}}},
    ]
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": "q", "retrieval.documents": json.dumps(docs)}
    f = write_jsonl(tmp_path / "e.jsonl", [request(otlp_span("00f067aa0ba902b7", attrs))])
    import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    [s] = lines(tmp_path / "logs")
    assert [(i["doc_id"], i["doc_version"], i["rank"]) for i in s["items"]] == [("a", "1", 1), ("b", "2", 2)]


def test_bad_rows_of_a_phoenix_span_table_are_quarantined_with_their_reasons(tmp_path, warehouse):
    rows = [
        PHOENIX_SPAN,
        {k: v for k, v in PHOENIX_SPAN.items() if k != "context.span_id"},
        {**PHOENIX_SPAN, "context.span_id": "5e1c0b2a9d3f4e68", "start_time": "yesterday"},
        {**PHOENIX_SPAN, "context.span_id": "5e1c0b2a9d3f4e69", "attributes.input.value": "   "},
        {**PHOENIX_SPAN, "context.span_id": "5e1c0b2a9d3f4e6a", "attributes.retrieval.documents": "[{"},
        {**PHOENIX_SPAN, "context.span_id": "5e1c0b2a9d3f4e6b", "span_kind": "LLM"},
    ]
    f = write_jsonl(tmp_path / "spans.jsonl", rows)
    mapping = Mapping.model_validate({"project": {"default": "sales"}})
    result = import_traces(warehouse, f, "openinference", mapping, tmp_path / "logs", now=NOW)
    assert (result.serves, result.spans_skipped) == (1, 1)
    assert [(r.line, r.reason) for r in list_rejects(warehouse)[0]] == [
        (2, "missing_field"),
        (3, "invalid_field"),
        (4, "invalid_field"),
        (5, "invalid_field"),
    ]


def test_rank_counts_ranked_documents_only_and_positions_stay_positions(tmp_path, warehouse):
    # Positions 0..3: a (ranked), b (injected), c (ranked, no version: rejected), d (ranked).
    # By hand, contract 14.2: a is rank 1, b takes none, c would be rank 2 and keeps it
    # though rejected, so d is rank 3; position 3 (an annotation's document_position) is d.
    attrs = oi_docs(
        ("a", {"version": "1"}), ("b", {"version": "1", "pinned": True}), ("c", {}), ("d", {"version": "4"})
    )
    write_jsonl(tmp_path / "in" / "e.jsonl", [request(otlp_span("00f067aa0ba902b7", attrs))])
    annotation = {
        "span_id": "00f067aa0ba902b7",
        "document_position": 3,
        "name": "relevance",
        "label": "relevant",
        "annotator_kind": "HUMAN",
        "updated_at": "2025-11-28T11:00:00Z",
    }
    write_jsonl(tmp_path / "in" / "annotations.jsonl", [annotation])
    mapping = Mapping.model_validate({"always": {"key": "pinned", "values": [True]}})
    result = import_traces(warehouse, tmp_path / "in", "otlp-json", mapping, tmp_path / "logs", now=NOW)
    serve, verdict = lines(tmp_path / "logs")
    assert [(i["doc_id"], i["channel"], i.get("rank")) for i in serve["items"]] == [
        ("a", "ranked", 1),
        ("b", "always", None),
        ("d", "ranked", 3),
    ]
    assert serve["span_documents"] == ["a", "b", None, "d"]
    assert (verdict["doc_id"], verdict["verdict"]) == ("d", "helped")
    assert dict(result.rejected) == {"unknown_document_version": 1}


def test_otlp_lines_of_the_wrong_shape_are_rejected_not_a_crash(tmp_path, warehouse):
    rows = [
        {"resourceSpans": [{"scopeSpans": "spans"}]},
        {"resourceSpans": [{"resource": [], "scopeSpans": []}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": {"traceId": TRACE}}]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": ["span"]}]}]},
    ]
    f = write_jsonl(tmp_path / "shapes.jsonl", rows)
    import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    assert [(r.line, r.reason) for r in list_rejects(warehouse)[0]] == [(n, "invalid_field") for n in (1, 2, 3, 4)]


def test_a_line_with_a_duplicate_key_is_invalid_json_at_any_depth(tmp_path, warehouse):
    # Section 1's standard JSON has no duplicate keys: a reader that keeps the last would import both.
    good = json.dumps(request(otlp_span("00f067aa0ba902b7", oi_docs(("a", {"version": "1"})))))
    nested = good.replace('{"stringValue": "refund window?"}', '{"stringValue": "refund window?", "stringValue": "x"}')
    rows = [good, '{"resourceSpans": [], ' + good[1:], nested.replace("00f067aa0ba902b7", "00f067aa0ba902b8")]
    f = write_jsonl(tmp_path / "export.jsonl", rows)
    result = import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    assert (result.serves, dict(result.rejected)) == (1, {"invalid_json": 2})
    rejects = list_rejects(warehouse, limit=None)[0]
    assert [(r.line, r.reason) for r in rejects] == [(2, "invalid_json"), (3, "invalid_json")]
    assert ["duplicate key" in r.detail for r in rejects] == [True, True]


def _number(x: float) -> str:
    """Contract 14.2's number format, built from Python's repr digits (an independent reference for the writer)."""
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    d = Decimal(repr(x)).normalize()
    sign, digits, _ = d.as_tuple()
    ds, e, s = "".join(map(str, digits)), d.adjusted(), "-" if sign else ""
    if -5 <= e < 16:
        whole, frac = (ds[: e + 1].ljust(e + 1, "0"), ds[e + 1 :] or "0") if e >= 0 else ("0", "0" * (-e - 1) + ds)
        return f"{s}{whole}.{frac}"
    return f"{s}{ds[0]}{'.' + ds[1:] if len(ds) > 1 else ''}e{'+' if e >= 0 else '-'}{abs(e)}"


@given(st.floats(allow_nan=False, allow_infinity=False))
@example(1.0)
@example(1e-5)  # the smallest positional magnitude
@example(9.999999999999999e-6)  # just below it
@example(1e16)  # the smallest exponent form above
@example(9999999999999998.0)  # the largest double below 1e16
@example(-0.0)
def test_a_score_is_written_in_the_contracts_number_format(x):
    assert line_text({"score": x}) == '{"score":' + _number(x) + "}"


def test_a_serve_line_is_written_byte_for_byte_as_the_contract_says(tmp_path, warehouse):
    def score(kind, value):
        return {"key": "", "value": {kind: value}}

    attrs = [
        kv("openinference.span.kind", "RETRIEVER"),
        kv("input.value", 'refund "window"?'),
        kv("session.id", "sé\t1"),
    ]
    docs = [
        ("a", '{"version": "1"}', ("intValue", "1")),
        ("b", '{"version": "2", "pinned": true}', ("doubleValue", 1e-05)),
        ("c", '{"version": "3"}', ("doubleValue", "NaN")),
        ("d", '{"version": "4"}', ("doubleValue", 1e16)),
        ("e", '{"version": "5"}', ("intValue", "1" + "0" * 400)),
    ]
    for i, (doc_id, meta, (kind, value)) in enumerate(docs):
        prefix = f"retrieval.documents.{i}.document."
        attrs += [kv(prefix + "id", doc_id), kv(prefix + "metadata", meta)]
        attrs.append({**score(kind, value), "key": prefix + "score"})
    span = {"traceId": TRACE, "spanId": "00f067aa0ba902b7", "startTimeUnixNano": "1764324000123456789"}
    f = write_jsonl(tmp_path / "e.jsonl", [request({**span, "attributes": attrs})])
    mapping = Mapping.model_validate({"always": {"key": "pinned", "values": [True]}})
    import_traces(warehouse, f, "otlp-json", mapping, tmp_path / "logs", now=NOW)
    items = (
        '{"doc_id":"a","doc_version":"1","channel":"ranked","rank":1,"score":1.0},'
        '{"doc_id":"b","doc_version":"2","channel":"always","score":0.00001},'
        '{"doc_id":"c","doc_version":"3","channel":"ranked","rank":2},'
        '{"doc_id":"d","doc_version":"4","channel":"ranked","rank":3,"score":1e+16},'
        '{"doc_id":"e","doc_version":"5","channel":"ranked","rank":4}'
    )
    want = (
        f'{{"event":"serve","serve_id":"{TRACE}-00f067aa0ba902b7","ts":"2025-11-28T10:00:00.123456Z",'
        f'"project":"billing","task":"refund \\"window\\"?","items":[{items}],"span_id":"00f067aa0ba902b7",'
        '"span_documents":["a","b","c","d","e"],"session_id":"sé\\t1"}\n'
    )
    assert (tmp_path / "logs" / "dt=2025-11-28" / "traces.jsonl").read_text(encoding="utf-8") == want


def test_a_retriever_span_is_rejected_whole_with_the_first_reason_in_the_contracts_order(tmp_path, warehouse):
    def span(n: int, attrs: dict) -> dict:
        return otlp_span(f"00f067aa0ba902{n:02x}", {"openinference.span.kind": "RETRIEVER", **attrs})

    query = {"input.value": "q"}
    doc = {"retrieval.documents.0.document.id": "a", "retrieval.documents.0.document.metadata": '{"version": "1"}'}

    def unresourced(sp: dict) -> dict:  # no resource attributes, so no service.name: no project
        return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [sp]}]}]}

    cases = [  # (line, reason, detail)
        (request(span(1, doc)), "missing_field", "has no query"),
        (request(span(2, {"input.value": "  ", **doc})), "invalid_field", "is not a non-blank string"),
        (unresourced(span(3, {**query, **doc})), "missing_field", "has no service.name attribute"),
        (request(span(4, {**query, "retrieval.documents.x.document.id": "a"})), "invalid_field", "is not retrieval"),
        (request(span(5, {**query, "retrieval.documents": "[1]"})), "invalid_field", "is not an array of objects"),
        (request(span(6, query)), "missing_field", "has no retrieval documents"),
        (
            request(span(7, {**query, "retrieval.documents.0.document.score": 0.5})),
            "missing_field",
            "document 0 has no id",
        ),
        (request(span(8, {**query, "retrieval.documents.0.document.id": True})), "invalid_field", "is not a string"),
        (
            request(
                span(
                    9,
                    {
                        **query,
                        "retrieval.documents.0.document.metadata": "[1]",
                        "retrieval.documents.0.document.id": "a",
                    },
                )
            ),
            "invalid_field",
            "metadata is not an object",
        ),
        # Order: the query before the project (neither here), an id twice before a version nobody knows.
        (unresourced(span(10, {})), "missing_field", "has no query"),
        (request(span(11, {**query, **oi_docs(("c", None), ("c", None))})), "invalid_field", "'c' appears twice"),
        (
            request(span(12, {**query, **oi_docs(("c", None))})),
            "unknown_document_version",
            "no document has a known version",
        ),
    ]
    f = write_jsonl(tmp_path / "e.jsonl", [line for line, _, _ in cases])
    result = import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    assert result.serves == 0
    rejects = sorted(list_rejects(warehouse, limit=None)[0], key=lambda r: (r.line, r.reason))
    whole = [r for r in rejects if not r.detail.endswith("holds it")]  # leave out the item reject of line 12
    assert [(r.line, r.reason) for r in whole] == [(i, reason) for i, (_, reason, _) in enumerate(cases, start=1)]
    assert [detail in r.detail for r, (_, _, detail) in zip(whole, cases, strict=True)] == [True] * len(cases)


@pytest.mark.parametrize(
    ("nanos", "ts"),
    [
        ("1764324000123456789", "2025-11-28T10:00:00.123456Z"),  # cut, not rounded to .123457 nor cut to .123
        ("1764324000999999999", "2025-11-28T10:00:00.999999Z"),  # cut, not rounded up into the next second
        ("1764324000000001000", "2025-11-28T10:00:00.000001Z"),
    ],
)
def test_the_span_start_is_cut_to_microseconds(tmp_path, warehouse, nanos, ts):
    f = write_jsonl(
        tmp_path / "e.jsonl", [request(otlp_span("00f067aa0ba902b7", oi_docs(("a", {"version": "1"})), nanos))]
    )
    import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    assert [line["ts"] for line in lines(tmp_path / "logs")] == [ts]


# The span starts at 2025-11-28T10:00:00Z; a load at that instant is in force, one a microsecond later is not.
@pytest.mark.parametrize(
    ("loaded", "version"),
    [
        (datetime(2025, 11, 28, 9, 59, 59, 999999), "2"),
        (datetime(2025, 11, 28, 10, 0, 0), "2"),
        (datetime(2025, 11, 28, 10, 0, 0, 1), "1"),
    ],
)
def test_a_corpus_load_at_the_spans_start_is_in_force(tmp_path, warehouse, loaded, version):
    snapshot_corpus(warehouse, write_corpus(tmp_path / "old.jsonl", [doc("a", "1")]), now=datetime(2025, 11, 1))
    snapshot_corpus(warehouse, write_corpus(tmp_path / "new.jsonl", [doc("a", "2")]), now=loaded)
    f = write_jsonl(tmp_path / "e.jsonl", [request(otlp_span("00f067aa0ba902b7", oi_docs(("a", {}))))])
    import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    assert [i["doc_version"] for i in lines(tmp_path / "logs")[0]["items"]] == [version]


def test_a_span_read_twice_in_one_import_keeps_the_later_line(tmp_path, warehouse):
    span = "00f067aa0ba902b7"
    rows = [
        request(otlp_span(span, oi_docs(("a", {"version": "1"}), ("b", {"version": "1"})))),
        request(otlp_span("00f067aa0ba902c0", oi_docs(("z", {"version": "9"})))),
        request(otlp_span(span, oi_docs(("c", {"version": "3"})))),
    ]
    result = import_traces(
        warehouse, write_jsonl(tmp_path / "e.jsonl", rows), "otlp-json", Mapping(), tmp_path / "logs"
    )
    assert result.serves == 2
    items = {s["span_id"]: [(i["doc_id"], i["doc_version"]) for i in s["items"]] for s in lines(tmp_path / "logs")}
    assert items == {span: [("c", "3")], "00f067aa0ba902c0": [("z", "9")]}


@pytest.mark.parametrize(
    ("values", "channels"),
    [([True], ["always", "ranked", "ranked"]), ([1], ["ranked", "always", "ranked"]), (["true"], ["ranked"] * 3)],
)
def test_always_values_are_compared_as_json_values(tmp_path, warehouse, values, channels):
    # Metadata true, 1 and "1": JSON's true is neither the number 1 nor the string "true".
    docs = oi_docs(
        ("a", {"version": "1", "pin": True}), ("b", {"version": "1", "pin": 1}), ("c", {"version": "1", "pin": "1"})
    )
    f = write_jsonl(tmp_path / "e.jsonl", [request(otlp_span("00f067aa0ba902b7", docs))])
    mapping = Mapping.model_validate({"always": {"key": "pin", "values": values}})
    import_traces(warehouse, f, "otlp-json", mapping, tmp_path / "logs", now=NOW)
    assert [i["channel"] for i in lines(tmp_path / "logs")[0]["items"]] == channels


def _items(root: Path) -> list[tuple]:
    return [(i["doc_id"], i["doc_version"], i["channel"], i.get("rank")) for i in lines(root)[0]["items"]]


def test_a_retriever_span_kind_is_read_in_any_case(tmp_path, warehouse):
    attrs = {**oi_docs(("a", {"version": "1"})), "openinference.span.kind": "retriever"}
    f = write_jsonl(tmp_path / "e.jsonl", [request(otlp_span("00f067aa0ba902b7", attrs))])
    assert import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW).serves == 1


def test_the_metadata_version_wins_over_the_snapshot_in_force(tmp_path, warehouse):
    snapshot_corpus(
        warehouse, write_corpus(tmp_path / "c.jsonl", [doc("a", "2"), doc("b", "2")]), now=datetime(2025, 1, 1)
    )
    f = write_jsonl(
        tmp_path / "e.jsonl", [request(otlp_span("00f067aa0ba902b7", oi_docs(("a", {"version": "1"}), ("b", {}))))]
    )
    import_traces(warehouse, f, "otlp-json", Mapping(), tmp_path / "logs", now=NOW)
    assert _items(tmp_path / "logs") == [("a", "1", "ranked", 1), ("b", "2", "ranked", 2)]


def test_a_days_serves_are_written_by_time_then_serve_id(tmp_path, warehouse):
    # Span ...b8 starts an hour after ...b9: time orders them, not their ids.
    rows = [
        request(otlp_span("00f067aa0ba902b8", oi_docs(("a", {"version": "1"})), "1764324000000000000")),
        request(otlp_span("00f067aa0ba902b9", oi_docs(("a", {"version": "1"})), "1764320400000000000")),
    ]
    import_traces(
        warehouse, write_jsonl(tmp_path / "e.jsonl", rows), "otlp-json", Mapping(), tmp_path / "logs", now=NOW
    )
    assert [(x["span_id"], x["ts"]) for x in lines(tmp_path / "logs")] == [
        ("00f067aa0ba902b9", "2025-11-28T09:00:00.000000Z"),
        ("00f067aa0ba902b8", "2025-11-28T10:00:00.000000Z"),
    ]


def _annotation(span_id: str, position: int, **kw) -> dict:
    return {
        "span_id": span_id,
        "name": "relevance",
        "annotator_kind": "HUMAN",
        "document_position": position,
        "updated_at": "2026-11-30T09:00:00Z",
        **kw,
    }


def test_an_annotation_score_maps_by_the_first_rule_whose_min_it_reaches(tmp_path, warehouse):
    span = "00f067aa0ba902b7"
    docs = oi_docs(("a", {"version": "1"}), ("b", {"version": "1"}), ("c", {"version": "1"}))
    rows = [
        request(otlp_span(span, docs)),
        _annotation(span, 0, score=1.0),  # exactly the first rule's min
        _annotation(span, 1, score=0.5),
        _annotation(span, 2, score=-0.5),  # below every rule
    ]
    scores = [{"min": 1, "verdict": "helped"}, {"min": 0, "verdict": "noise"}]
    mapping = Mapping.model_validate({"verdicts": {"scores": scores}})
    result = import_traces(warehouse, write_jsonl(tmp_path / "e.jsonl", rows), "otlp-json", mapping, tmp_path / "logs")
    verdicts = [(x["doc_id"], x["verdict"]) for x in lines(tmp_path / "logs") if x["event"] == "verdict"]
    assert verdicts == [("a", "helped"), ("b", "noise")]
    assert dict(result.rejected) == {"unknown_label": 1}


def test_an_annotation_position_equal_to_the_number_of_documents_is_invalid(tmp_path, warehouse):
    span = "00f067aa0ba902b7"
    rows = [
        request(otlp_span(span, oi_docs(("a", {"version": "1"}), ("b", {"version": "1"})))),
        _annotation(span, 2, label="relevant"),
    ]
    result = import_traces(
        warehouse, write_jsonl(tmp_path / "e.jsonl", rows), "otlp-json", Mapping(), tmp_path / "logs"
    )
    assert dict(result.rejected) == {"invalid_field": 1}
    assert [x["event"] for x in lines(tmp_path / "logs")] == ["serve"]


def test_an_annotation_whose_span_id_two_traces_wrote_is_an_unknown_span(tmp_path, warehouse):
    span = "00f067aa0ba902b7"
    first = [
        request(otlp_span(span, oi_docs(("a", {"version": "1"})))),
        request(otlp_span(span, oi_docs(("a", {"version": "1"})), trace="1af7651916cd43dd8448eb211c80319c")),
    ]
    import_traces(warehouse, write_jsonl(tmp_path / "spans.jsonl", first), "otlp-json", Mapping(), tmp_path / "logs")
    later = write_jsonl(tmp_path / "later" / "annotations.jsonl", [_annotation(span, 0, label="relevant")])
    result = import_traces(warehouse, later, "otlp-json", Mapping(), tmp_path / "logs")
    assert dict(result.rejected) == {"unknown_span": 1}
    assert result.verdicts == 0
