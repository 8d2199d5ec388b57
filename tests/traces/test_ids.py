"""Trace and span ids in both encodings real tools write: hex (OTLP JSON) and base64 (protobuf's JSON mapping)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest
from google.protobuf.json_format import MessageToDict, MessageToJson
from hypothesis import example, given
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from goldenset.traces.importer import import_traces
from goldenset.traces.mapping import Mapping
from goldenset.traces.spans import BadValue, otlp_id
from goldenset.warehouse import connect
from tests.traces.producers import Retrieval, otlp_json_line, retriever_span_ids, retriever_spans

nonzero = st.binary(min_size=16, max_size=16).filter(any)


@given(raw=nonzero)
@example(raw=bytes([0xFB] * 16))  # base64 '+/' against URL-safe '-_'
@example(raw=bytes(15) + b"\x01")
def test_a_trace_id_reads_the_same_from_hex_either_case_and_from_both_base64_alphabets(raw):
    # The reference is Python's own codecs: bytes.hex and the base64 module.
    want = raw.hex()
    spellings = [raw.hex(), raw.hex().upper(), base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    assert {otlp_id(s, "traceId", 16) for s in spellings} == {want}


@given(raw=st.binary(min_size=8, max_size=8).filter(any))
def test_a_span_id_reads_the_same_from_hex_and_base64(raw):
    assert otlp_id(raw.hex(), "spanId", 8) == otlp_id(base64.b64encode(raw).decode(), "spanId", 8) == raw.hex()


TRACE = bytes(range(1, 17))


@pytest.mark.parametrize(
    ("value", "reason", "size"),
    [
        (TRACE.hex()[:-1], "invalid_field", 16),  # 31 hex digits
        (TRACE.hex() + "0", "invalid_field", 16),  # 33
        (TRACE.hex() + "01", "invalid_field", 16),  # 34: whole bytes, one too many
        ("0123456789abcdef01234567", "invalid_field", 16),  # 24 hex digits: read as base64, no `==`
        (base64.b64encode(TRACE).decode().rstrip("="), "invalid_field", 16),  # unpadded base64
        (base64.b64encode(TRACE).decode()[:-3] + "B==", "invalid_field", 16),  # not canonical
        ("AQIDBAUGBwgJCgsMDQ4P+-==", "invalid_field", 16),  # both alphabets
        (base64.b64encode(bytes(16)).decode(), "invalid_field", 16),  # all zeros, in base64
        ("0" * 32, "invalid_field", 16),
        (base64.b64encode(TRACE[:8]).decode()[:-1] + "==", "invalid_field", 8),
        ("", "missing_field", 16),
        (None, "missing_field", 8),
        (12345, "invalid_field", 8),
    ],
)
def test_an_id_that_is_neither_encoding_is_refused_with_its_reason(value, reason, size):
    with pytest.raises(BadValue) as exc:
        otlp_id(value, "traceId" if size == 16 else "spanId", size)
    assert exc.value.reason == reason


def test_base64_at_its_exact_length_is_read_and_one_character_either_side_is_not():
    text = base64.b64encode(TRACE).decode()
    assert len(text) == 24 and otlp_id(text, "traceId", 16) == TRACE.hex()
    for wrong in (text[1:], "A" + text):
        with pytest.raises(BadValue):
            otlp_id(wrong, "traceId", 16)


def test_sdk_spans_in_base64_and_hex_encodings_give_the_same_lines(tmp_path):
    """The bytes each encoder writes from real opentelemetry-sdk spans import to the same files."""
    at = datetime(2026, 11, 28, 10, tzinfo=UTC)
    spans = retriever_spans(
        "billing",
        [Retrieval(at, "refund window?", [("a", "1", {}), ("b", "2", {})]), Retrieval(at, "sso?", [("c", "3", {})])],
        seed=41,
    )
    request = encode_spans(spans)
    as_dict = json.dumps(MessageToDict(request))
    as_json = MessageToJson(request, indent=None)
    assert base64.b64encode(bytes.fromhex(retriever_span_ids(spans)[0][1])).decode() in as_json
    encodings = {"hex": otlp_json_line(spans), "message_to_dict": as_dict, "message_to_json": as_json}
    written = {}
    for name, line in encodings.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "export.jsonl").write_text(line + "\n")
        con = connect(tmp_path / f"{name}.duckdb")
        try:
            result = import_traces(con, folder / "export.jsonl", "otlp-json", Mapping(), folder / "logs")
        finally:
            con.close()
        assert (result.serves, dict(result.rejected)) == (2, {})
        written[name] = {p.relative_to(folder).as_posix(): p.read_bytes() for p in (folder / "logs").rglob("*.jsonl")}
    assert written["hex"] == written["message_to_dict"] == written["message_to_json"]
    serve_ids = [json.loads(x)["serve_id"] for x in next(iter(written["hex"].values())).decode().splitlines()]
    assert sorted(serve_ids) == sorted(f"{t}-{s}" for t, s in retriever_span_ids(spans))


def _retriever(span_id: str) -> dict:
    attrs = {
        "openinference.span.kind": "RETRIEVER",
        "input.value": "refund window?",
        "retrieval.documents.0.document.id": "a",
        "retrieval.documents.0.document.metadata": '{"version": "1"}',
        "retrieval.documents.1.document.id": "b",
        "retrieval.documents.1.document.metadata": '{"version": "1"}',
    }
    return {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": span_id,
        "startTimeUnixNano": "1764324000000000000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }


def test_an_annotation_names_its_span_in_either_encoding_of_its_id(tmp_path):
    # The span id bytes fb ef ff ff ff ff ff 01: `+` and `/` in base64, letters in hex (contract 14.4 reads an
    # annotation's span_id as 14.1 reads a span's).
    request = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [_retriever("fbefffffffffff01")]}]}]}
    annotation = {"name": "relevance", "annotator_kind": "HUMAN", "updated_at": "2025-11-28T11:00:00Z"}
    rows = [
        {**annotation, "span_id": "FBEFFFFFFFFFFF01", "document_position": 0, "label": "relevant"},
        {**annotation, "span_id": "++///////wE=", "document_position": 1, "label": "irrelevant"},
    ]
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a-spans.jsonl").write_text(json.dumps(request) + "\n")
    (folder / "b-annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    con = connect(tmp_path / "g.duckdb")
    try:
        result = import_traces(
            con, folder, "otlp-json", Mapping.model_validate({"project": {"default": "billing"}}), tmp_path / "logs"
        )
    finally:
        con.close()
    assert (result.serves, result.verdicts, dict(result.rejected)) == (1, 2, {})
    written = [json.loads(x) for x in (tmp_path / "logs" / "dt=2025-11-28" / "traces.jsonl").read_text().splitlines()]
    assert [(x["event"], x.get("doc_id"), x.get("verdict")) for x in written[1:]] == [
        ("verdict", "a", "helped"),
        ("verdict", "b", "noise"),
    ]


def test_a_phoenix_rows_ids_are_read_as_an_otlp_spans_and_written_lowercase(tmp_path):
    row = {
        "span_kind": "RETRIEVER",
        "context.span_id": "FBEFFFFFFFFFFF01",
        "context.trace_id": "0AF7651916CD43DD8448EB211C80319C",
        "start_time": "2025-11-28T10:00:00+00:00",
        "attributes.input.value": "refund window?",
        "attributes.retrieval.documents": [{"document.id": "a", "document.metadata": {"version": "1"}}],
    }
    (tmp_path / "spans.jsonl").write_text(json.dumps(row) + "\n")
    con = connect(tmp_path / "g.duckdb")
    try:
        import_traces(
            con,
            tmp_path / "spans.jsonl",
            "openinference",
            Mapping.model_validate({"project": {"default": "b"}}),
            tmp_path / "logs",
        )
    finally:
        con.close()
    [serve] = [json.loads(x) for x in (tmp_path / "logs" / "dt=2025-11-28" / "traces.jsonl").read_text().splitlines()]
    assert (serve["serve_id"], serve["span_id"]) == (
        "0af7651916cd43dd8448eb211c80319c-fbefffffffffff01",
        "fbefffffffffff01",
    )
