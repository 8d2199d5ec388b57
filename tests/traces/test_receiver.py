"""The receiver's HTTP answers, in process: what each body gets, and that only what is acknowledged is kept.

The app is the real Starlette app over a real spool; the merge is called by the test rather
than by the merger thread, so each test says when it happens. The process, killed and
restarted, is tests/traces/test_receiver_process.py.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToJson
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.testclient import TestClient

from goldenset.quarantine import list_rejects
from goldenset.snapshots import snapshot_corpus
from goldenset.traces.importer import import_traces
from goldenset.traces.mapping import Mapping
from goldenset.traces.receiver import Receiver, ReceiverConfig, create_app
from goldenset.warehouse import connect
from tests.helpers import doc, write_corpus
from tests.traces.producers import Retrieval, otlp_json_line, retriever_spans

PROTOBUF, JSON = "application/x-protobuf", "application/json"
AT = datetime(2026, 11, 28, 10, tzinfo=UTC)
TRACE = "5b8efff798038103d269b633813fc60c"


@contextmanager
def receiving(root: Path, **config) -> Iterator[tuple[Receiver, TestClient]]:
    """A receiver over a spool under `root`, its merge left to the test, and a client of its app."""
    settings = {
        "spool": root / "spool",
        "logs": root / "logs",
        "labels": None,
        "db": root / "g.duckdb",
        "mapping": Mapping(),
        "max_body": 1 << 20,
        "spool_limit": 1 << 20,
    }
    receiver = Receiver(ReceiverConfig(**{**settings, **config}), report=lambda message: None)
    receiver.spool.claim()
    try:
        with TestClient(create_app(receiver)) as client:
            yield receiver, client
    finally:
        receiver.spool.release()


def sdk_spans(seed: int = 7):
    """Two retriever spans (inside agent spans) from opentelemetry-sdk; one document without a version."""
    return retriever_spans(
        "billing",
        [
            Retrieval(AT, "refund window?", [("pol-1", "1", {}), ("pol-2", None, {})]),
            Retrieval(AT, "which plan has sso?", [("plan-ent", "5", {})]),
        ],
        seed=seed,
    )


def day_files(logs: Path) -> dict[str, bytes]:
    return {p.relative_to(logs).as_posix(): p.read_bytes() for p in sorted(logs.glob("dt=*/traces.jsonl"))}


def spooled_lines(spool: Path) -> list[str]:
    return [x for p in sorted(spool.glob("*.jsonl")) for x in p.read_text().splitlines()]


def stored_rejects(db: Path) -> list[tuple[str, str]]:
    """(source_file, reason) of the rejects in the warehouse, where the receiver stored them after its merge."""
    con = connect(db, read_only=True)
    try:
        return sorted((r.source_file, r.reason) for r in list_rejects(con, limit=None)[0])
    finally:
        con.close()


def kv(key, value):
    return {"key": key, "value": {"stringValue": value}}


def span(span_id: str, *attrs: dict, trace: str = TRACE) -> dict:
    return {"traceId": trace, "spanId": span_id, "startTimeUnixNano": "1796119200000000000", "attributes": list(attrs)}


def body(*spans: dict) -> bytes:
    resource = {"attributes": [kv("service.name", "billing")]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": list(spans)}]}]}).encode()


# An AnyValue holding one key twice: a parser that keeps the last would read it as "x".
DUPLICATE = b'{"stringValue": "refund window?", "stringValue": "x"}'
RETRIEVER = (
    kv("openinference.span.kind", "RETRIEVER"),
    kv("input.value", "refund window?"),
    kv("retrieval.documents.0.document.id", "pol-1"),
    kv("retrieval.documents.0.document.metadata", '{"version": "1"}'),
)


@pytest.mark.slow
def test_every_encoding_of_the_same_spans_writes_exactly_what_traces_import_writes(tmp_path):
    spans = sdk_spans()
    request = encode_spans(spans)
    bodies = {
        "protobuf": (request.SerializeToString(), PROTOBUF, {}),
        "protobuf-gzip": (gzip.compress(request.SerializeToString()), PROTOBUF, {"content-encoding": "gzip"}),
        "json-hex": (otlp_json_line(spans).encode(), JSON, {}),
        "json-base64-gzip": (
            gzip.compress(MessageToJson(request, indent=None).encode()),
            f"{JSON}; charset=utf-8",
            {"content-encoding": "gzip"},
        ),
    }
    export = tmp_path / "reference" / "export.jsonl"
    export.parent.mkdir()
    export.write_text(otlp_json_line(spans) + "\n")
    con = connect(tmp_path / "reference" / "g.duckdb")
    try:
        expected = import_traces(con, export, "otlp-json", Mapping(), tmp_path / "reference" / "logs")
    finally:
        con.close()
    assert (expected.serves, dict(expected.rejected)) == (2, {"unknown_document_version": 1})
    for name, (content, media, headers) in bodies.items():
        root = tmp_path / name
        with receiving(root) as (receiver, client):
            answer = client.post("/v1/traces", content=content, headers={"content-type": media, **headers})
            assert answer.status_code == 200, name
            # Nothing rejected at receipt (a version is the merge's to decide): partial_success unset.
            assert answer.content in (b"", b"{}") and answer.headers["content-type"].startswith(media.split(";")[0])
            receiver.merge_now()
        assert day_files(root / "logs") == day_files(tmp_path / "reference" / "logs"), name
        assert stored_rejects(root / "g.duckdb") == [
            ("traces/spool/segment-000000000001.jsonl", "unknown_document_version")
        ], name


def test_partial_success_counts_the_spans_the_import_rejects_and_the_merge_quarantines_them(tmp_path):
    no_query = (kv("openinference.span.kind", "RETRIEVER"), RETRIEVER[2], RETRIEVER[3])
    spans = [
        span("00f067aa0ba902b7", *RETRIEVER),
        span("00f067aa0ba902b8", *no_query),
        span("zz", *RETRIEVER),
        span("00f067aa0ba902b9", kv("openinference.span.kind", "LLM"), kv("llm.prompt", "x" * 5000)),
    ]
    with receiving(tmp_path) as (receiver, client):
        answer = client.post("/v1/traces", content=body(*spans), headers={"content-type": JSON})
        assert answer.status_code == 200
        partial = answer.json()["partialSuccess"]
        assert partial["rejectedSpans"] == "2"
        assert partial["errorMessage"].startswith(
            "2 of 4 spans rejected; the first: span 00f067aa0ba902b8 has no query"
        )
        as_protobuf = client.post(
            "/v1/traces", content=encode_json_as_protobuf(body(*spans)), headers={"content-type": PROTOBUF}
        )
        assert ExportTraceServiceResponse.FromString(as_protobuf.content).partial_success.rejected_spans == 2
        # The LLM span is kept as its ids, start and kind only: the merge counts and skips it.
        assert "llm.prompt" not in spooled_lines(tmp_path / "spool")[0]
        [result] = receiver.merge_now()
    assert (result.serves, result.spans_skipped) == (1, 1)
    # Sent twice (JSON, then protobuf): the span without a query is one span read twice, the later
    # copy kept (14.2); a span whose id does not read is a record of its own each time (14.5).
    assert [reason for _, reason in stored_rejects(tmp_path / "g.duckdb")] == [
        "invalid_field",
        "invalid_field",
        "missing_field",
    ]
    [line] = [json.loads(x) for x in (tmp_path / "logs" / "dt=2026-12-01" / "traces.jsonl").read_text().splitlines()]
    assert line["serve_id"] == f"{TRACE}-00f067aa0ba902b7"


def encode_json_as_protobuf(content: bytes) -> bytes:
    """The same request in protobuf (ids as bytes), through protobuf's own JSON parser."""
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    obj = json.loads(content)
    for rs in obj["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for key in ("traceId", "spanId"):
                    raw = bytes.fromhex(sp[key]) if len(sp[key]) in (16, 32) else sp[key].encode()[:8]
                    sp[key] = base64.b64encode(raw).decode()
    return ParseDict(obj, ExportTraceServiceRequest()).SerializeToString()


def test_a_token_is_required_when_set_and_compared_whole(tmp_path):
    good = body(span("00f067aa0ba902b7", *RETRIEVER))
    with receiving(tmp_path, token="s3cret") as (_, client):
        for header in (None, "Bearer s3cre", "Bearer s3cret ", "Bearer s3creT", "Basic s3cret", "s3cret"):
            headers = {"content-type": PROTOBUF} | ({"authorization": header} if header else {})
            answer = client.post("/v1/traces", content=encode_json_as_protobuf(good), headers=headers)
            assert answer.status_code == 401, header
            assert answer.headers["www-authenticate"] == "Bearer"
            assert "bearer token is required" in Status.FromString(answer.content).message
        assert spooled_lines(tmp_path / "spool") == []
        for header in ("Bearer s3cret", "bearer s3cret"):
            answer = client.post("/v1/traces", content=good, headers={"content-type": JSON, "authorization": header})
            assert answer.status_code == 200
    assert len(spooled_lines(tmp_path / "spool")) == 2


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"content-type": "text/plain"}, 415),
        ({"content-type": "application/x-www-form-urlencoded"}, 415),
        ({}, 415),
        ({"content-type": JSON, "content-encoding": "br"}, 415),
        ({"content-type": "Application/JSON; charset=utf-8"}, 200),
        ({"content-type": JSON, "content-encoding": "identity"}, 200),
    ],
)
def test_content_types_and_encodings_other_than_protobuf_json_and_gzip_get_415(tmp_path, headers, status):
    with receiving(tmp_path) as (_, client):
        answer = client.post("/v1/traces", content=body(span("00f067aa0ba902b7", *RETRIEVER)), headers=headers)
    assert answer.status_code == status
    if status == 415:
        assert json.loads(answer.content)["code"] == 3 and answer.headers["content-type"] == JSON
    assert len(spooled_lines(tmp_path / "spool")) == (status == 200)


LIMIT = 1000


def padded(size: int) -> bytes:
    """An empty request, valid JSON, of exactly `size` bytes (white space after the object)."""
    return b"{}" + b" " * (size - 2)


@pytest.mark.parametrize(("size", "status"), [(LIMIT - 1, 200), (LIMIT, 200), (LIMIT + 1, 413)])
def test_a_body_at_the_size_limit_is_taken_and_one_byte_more_is_413(tmp_path, size, status):
    with receiving(tmp_path, max_body=LIMIT) as (_, client):
        sent = client.post("/v1/traces", content=padded(size), headers={"content-type": JSON})
        # Streamed without a Content-Length: the limit holds on the bytes read.
        streamed = client.post(
            "/v1/traces", content=iter([padded(size)[:400], padded(size)[400:]]), headers={"content-type": JSON}
        )
        # A small gzip body that inflates to `size` bytes: the limit holds once decompressed.
        inflated = client.post(
            "/v1/traces",
            content=gzip.compress(padded(size)),
            headers={"content-type": JSON, "content-encoding": "gzip"},
        )
    assert (sent.status_code, streamed.status_code, inflated.status_code) == (status, status, status)
    if status == 413:
        assert "past the limit of 1000" in sent.json()["message"]


@pytest.mark.parametrize(
    ("content", "media", "encoding"),
    [
        (b"\x0a\xff\xff\xff", PROTOBUF, None),
        (b"{not json", JSON, None),
        (b"[1, 2]", JSON, None),
        (b'{"resourceSpans": 5}', JSON, None),
        (b'{"resourceSpans": [{"scopeSpans": 5}]}', JSON, None),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [1]}]}]}', JSON, None),
        (b'{"resourceSpans": [{"resource": [], "scopeSpans": []}]}', JSON, None),
        (b"not gzip at all", JSON, "gzip"),
        (gzip.compress(b"{}", mtime=0)[:-6], JSON, "gzip"),
        (b'{"resourceSpans": [], "resourceSpans": []}', JSON, None),
        (
            body(span("00f067aa0ba902b7", *RETRIEVER)).replace(b'{"stringValue": "refund window?"}', DUPLICATE),
            JSON,
            None,
        ),
    ],
    ids=[
        "protobuf",
        "not-json",
        "an-array",
        "resourceSpans-a-number",
        "scopeSpans-a-number",
        "a-span-a-number",
        "resource-a-list",
        "not-gzip",
        "gzip-cut-short",
        "a-duplicate-key",
        "a-duplicate-key-in-an-attribute",
    ],
)
def test_a_body_that_does_not_parse_gets_400_and_nothing_is_kept(tmp_path, content, media, encoding):
    headers = {"content-type": media} | ({"content-encoding": encoding} if encoding else {})
    with receiving(tmp_path) as (_, client):
        answer = client.post("/v1/traces", content=content, headers=headers)
    assert answer.status_code == 400
    message = Status.FromString(answer.content).message if media == PROTOBUF else answer.json()["message"]
    assert message.startswith(("the body is not", "the gzip body"))
    if b'"stringValue": "x"' in content or content.count(b"resourceSpans") == 2:  # standard JSON has no duplicates
        assert message.startswith("the body is not standard JSON (duplicate key ")
    assert spooled_lines(tmp_path / "spool") == []


def test_a_full_spool_answers_503_with_retry_after_and_keeps_what_it_acknowledged(tmp_path):
    first = body(span("00f067aa0ba902b7", *RETRIEVER))
    second = body(span("00f067aa0ba902b8", *RETRIEVER))
    from goldenset.traces.otlp import decode, receive

    room = len(receive(decode(first, JSON), Mapping()).line or b"") + 1  # the line and its newline
    with receiving(tmp_path, spool_limit=room) as (receiver, client):
        assert client.post("/v1/traces", content=first, headers={"content-type": JSON}).status_code == 200
        assert receiver.spool.size == room  # exactly full
        full = client.post("/v1/traces", content=second, headers={"content-type": JSON})
        assert full.status_code == 503 and full.headers["retry-after"] == "5"
        assert "past its limit" in full.json()["message"]
        assert len(spooled_lines(tmp_path / "spool")) == 1
        # A request that could never fit is 413, not a 503 its sender would retry for ever.
        huge = body(span("00f067aa0ba902b9", *RETRIEVER, kv("padding", "x" * room)))
        assert client.post("/v1/traces", content=huge, headers={"content-type": JSON}).status_code == 413
        receiver.merge_now()  # the merge empties the spool: the retry is taken
        assert client.post("/v1/traces", content=second, headers={"content-type": JSON}).status_code == 200
        receiver.merge_now()
    serves = [
        json.loads(x)["serve_id"]
        for x in (tmp_path / "logs" / "dt=2026-12-01" / "traces.jsonl").read_text().splitlines()
    ]
    assert serves == [f"{TRACE}-00f067aa0ba902b7", f"{TRACE}-00f067aa0ba902b8"]


@pytest.mark.slow
def test_a_merge_that_needs_a_snapshot_waits_while_another_process_holds_the_warehouse(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl", [doc("pol-1", "7")])
    con = connect(tmp_path / "g.duckdb")
    snapshot_corpus(con, corpus, now=datetime(2026, 11, 1))
    con.close()
    unversioned = (*RETRIEVER[:3], kv("retrieval.documents.0.document.metadata", "{}"))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print(1, flush=True); sys.stdin.read()",
            str(tmp_path / "g.duckdb"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"1"
        with receiving(tmp_path) as (receiver, client):
            assert (
                client.post(
                    "/v1/traces", content=body(span("00f067aa0ba902b7", *unversioned)), headers={"content-type": JSON}
                ).status_code
                == 200
            )
            assert receiver.merge_now() == []  # the warehouse is held: the batch waits, nothing written
            assert day_files(tmp_path / "logs") == {} and len(spooled_lines(tmp_path / "spool")) == 1
            holder.communicate(b"", timeout=30)
            [result] = receiver.merge_now()
        assert result.serves == 1
    finally:
        if holder.poll() is None:
            holder.kill()
    [line] = [json.loads(x) for x in (tmp_path / "logs" / "dt=2026-12-01" / "traces.jsonl").read_text().splitlines()]
    assert line["items"][0]["doc_version"] == "7"  # the snapshot in force at the span's start
    assert spooled_lines(tmp_path / "spool") == []


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("evil.example", 400),  # DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends its own name
        ("localhost:4318", 200),
        ("LOCALHOST", 200),
        ("127.0.0.1", 200),
        ("127.0.0.1:", 400),
        ("127.0.0.1:43a8", 400),
        ("127.0.0.1.evil.example", 400),
    ],
)
def test_on_loopback_a_request_naming_another_host_is_refused_first_as_a_status(tmp_path, host, status):
    from goldenset.cli.shared import LOOPBACK_NAMES

    receiver = Receiver(
        ReceiverConfig(tmp_path / "spool", tmp_path / "logs", None, tmp_path / "g.duckdb", Mapping(), 1 << 20, 1 << 20),
        report=lambda message: None,
    )
    receiver.spool.claim()
    try:
        with TestClient(create_app(receiver, list(LOOPBACK_NAMES)), base_url="http://127.0.0.1:4318") as client:
            content = body(span("00f067aa0ba902b7", *RETRIEVER))
            answer = client.post("/v1/traces", content=content, headers={"content-type": JSON, "host": host})
            # Before the token: a set token the request lacks would be 401.
            receiver.config = dataclasses.replace(receiver.config, token="s3cret")
            protobuf = client.post(
                "/v1/traces", content=b"", headers={"content-type": PROTOBUF, "host": host, "authorization": ""}
            )
    finally:
        receiver.spool.release()
    assert answer.status_code == status
    assert protobuf.status_code == (400 if status == 400 else 401)
    if status == 400:
        assert answer.headers["content-type"] == JSON and protobuf.headers["content-type"] == PROTOBUF
        message = answer.json()["message"]
        assert message == Status.FromString(protobuf.content).message
        assert message.startswith(f"the Host header {host!r} names another host: a receiver bound to loopback answers")
    assert len(spooled_lines(tmp_path / "spool")) == (1 if status == 200 else 0)


def test_a_merge_that_fails_is_said_once_and_tried_again_with_nothing_lost(tmp_path):
    said: list[str] = []
    (tmp_path / "logs").write_text("not a folder")  # LOGS cannot hold day folders
    receiver = Receiver(
        ReceiverConfig(tmp_path / "spool", tmp_path / "logs", None, tmp_path / "g.duckdb", Mapping(), 1 << 20, 1 << 20),
        report=said.append,
    )
    receiver.spool.claim()
    try:
        with TestClient(create_app(receiver)) as client:
            answer = client.post(
                "/v1/traces", content=body(span("00f067aa0ba902b7", *RETRIEVER)), headers={"content-type": JSON}
            )
            assert answer.status_code == 200
            assert receiver.merge_now() == [] and receiver.merge_now() == []
            assert len(said) == 1 and said[0].startswith("merge failed, will retry: ")
            assert len(spooled_lines(tmp_path / "spool")) == 1
            (tmp_path / "logs").unlink()
            [result] = receiver.merge_now()
    finally:
        receiver.spool.release()
    assert result.serves == 1 and spooled_lines(tmp_path / "spool") == []
