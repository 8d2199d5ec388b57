"""`goldenset traces serve` as a process: killed between acknowledging and merging, nothing acknowledged is lost.

The spans come from opentelemetry-sdk, sent by the SDK's own `OTLPSpanExporter` (HTTP protobuf,
its `export` returning SUCCESS only on a 2xx) and as JSON bodies in both id encodings. The lines
the receiver writes are held to what `traces import` writes from the same requests in a file.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from goldenset.quarantine import list_rejects
from goldenset.traces.importer import import_traces
from goldenset.traces.mapping import Mapping
from goldenset.warehouse import connect
from tests.traces.producers import Retrieval, otlp_json_line, retriever_span_ids, retriever_spans
from tests.traces.receiver_process import ReceiverProcess

pytestmark = pytest.mark.slow

DAY1 = datetime(2026, 11, 28, 9, tzinfo=UTC)
DAY2 = datetime(2026, 11, 29, 17, 30, tzinfo=UTC)
TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def retrievals(n: int, at: datetime, prefix: str) -> list[Retrieval]:
    # The last document of each carries no version and no warehouse exists: unknown_document_version.
    return [
        Retrieval(at, f"{prefix} question {i}", [(f"{prefix}-{i}-a", "1", {}), (f"{prefix}-{i}-b", None, {})])
        for i in range(n)
    ]


def traces_files(logs: Path) -> dict[str, bytes]:
    return {p.relative_to(logs).as_posix(): p.read_bytes() for p in sorted(logs.glob("dt=*/traces.jsonl"))}


def wait_for(predicate, what: str, seconds: float = 60.0):
    import time

    deadline = time.monotonic() + seconds
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def post(url: str, body: bytes, media: str, **headers: str) -> httpx.Response:
    return httpx.post(url, content=body, headers={"content-type": media, **headers}, timeout=30)


def test_a_receiver_killed_between_acknowledging_and_merging_loses_nothing(tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    marker = tmp_path / "merge-paused"
    first = ReceiverProcess(
        tmp_path,
        "--token-file",
        str(token),
        GOLDENSET_FAILPOINT="traces.before_merge:pause",
        GOLDENSET_FAILPOINT_FILE=str(marker),
    )
    sdk = retriever_spans("billing", retrievals(3, DAY1, "sdk"), seed=1)
    hexed = retriever_spans("billing", retrievals(2, DAY2, "hex"), seed=2)
    based = retriever_spans("billing", retrievals(2, DAY2, "b64"), seed=3)
    refused = retriever_spans("billing", retrievals(1, DAY2, "refused"), seed=4)

    exporter = OTLPSpanExporter(endpoint=first.url, headers=AUTH)
    assert exporter.export(sdk) == SpanExportResult.SUCCESS
    hex_line = otlp_json_line(hexed)
    assert post(first.url, hex_line.encode(), "application/json", **AUTH).status_code == 200
    b64_line = MessageToJson(encode_spans(based), indent=None)
    answer = post(
        first.url, gzip.compress(b64_line.encode()), "application/json", **AUTH, **{"content-encoding": "gzip"}
    )
    assert answer.status_code == 200 and answer.json() == {}  # full success: partial_success unset
    assert exporter.export(sdk) == SpanExportResult.SUCCESS  # re-sent, as after a lost answer: lines once
    # Refused, so not acknowledged: never written.
    wrong = {"Authorization": "Bearer s3cret-tokeN"}
    assert post(first.url, otlp_json_line(refused).encode(), "application/json", **wrong).status_code == 401
    assert post(first.url, b"\x0a\xff\xff", "application/x-protobuf", **AUTH).status_code == 400

    wait_for(marker.exists, "the merger to pause before its first merge")
    first.kill()
    logs = first.home / "logs"
    assert traces_files(logs) == {}, "nothing was merged before the kill"
    spooled = sorted(p.name for p in (first.home / "trace_spool").glob("*.jsonl"))
    assert spooled and all(name.startswith(("open-", "segment-")) for name in spooled)

    # Restarted: the spool is recovered and merged at start. This one dies in its first append.
    second = ReceiverProcess(tmp_path, "--token-file", str(token), GOLDENSET_FAILPOINT="traces.mid_append")
    ids = {f"{t}-{s}" for spans in (sdk, hexed, based) for t, s in retriever_span_ids(spans)}
    written = wait_for(lambda: _serve_ids(logs) == ids and traces_files(logs), "every acknowledged span in LOGS")

    # What `traces import` writes from the same requests, as lines of a file, in the order sent.
    reference = tmp_path / "reference"
    export = reference / "export.jsonl"
    export.parent.mkdir()
    sdk_line = MessageToJson(encode_spans(sdk), indent=None)
    export.write_text("\n".join([sdk_line, hex_line, b64_line, sdk_line]) + "\n")
    con = connect(reference / "g.duckdb")
    try:
        expected = import_traces(con, export, "otlp-json", Mapping(), reference / "logs")
    finally:
        con.close()
    assert written == traces_files(reference / "logs")
    lines = [json.loads(x) for body in written.values() for x in body.decode().splitlines()]
    assert sorted(x["serve_id"] for x in lines) == sorted(ids)  # each acknowledged retriever span once
    assert not any(x["task"].startswith("refused") for x in lines)

    # A kill in the middle of an append: the request is not acknowledged, and the torn line is cut.
    with pytest.raises(httpx.HTTPError):
        post(second.url, otlp_json_line(refused).encode(), "application/json", **AUTH)
    assert second.proc.wait(timeout=30) == -9
    third = ReceiverProcess(tmp_path)
    assert third.stop() == 0
    assert traces_files(logs) == written
    assert [p.name for p in (first.home / "trace_spool").glob("*.jsonl")] == []

    # The rejects reached the warehouse (the receivers store them when it is free), each once.
    con = connect(first.home / "goldenset.duckdb", read_only=True)
    try:
        rejects = list_rejects(con, limit=None)[0]
    finally:
        con.close()
    assert sorted(r.reason for r in rejects) == sorted(expected.rejected.elements())
    assert all(r.source_file.startswith("traces/spool/segment-") for r in rejects)


def _serve_ids(logs: Path) -> set[str]:
    out = set()
    for body in traces_files(logs).values():
        out |= {json.loads(x)["serve_id"] for x in body.decode().splitlines()}
    return out
