"""OTLP/HTTP trace requests: reading a body, what the receiver keeps of it, and the answers it gives.

Contract 14.8; the answers are the OTLP specification's (OTLP/HTTP, "Response").

Decisions:

- **Content types**: `application/x-protobuf` (what the SDK's `OTLPSpanExporter` sends) and
  `application/json`, compared without parameters (`; charset=utf-8`) and case. Anything
  else is 415. `Content-Encoding` is `gzip`, `identity` or absent; anything else is 415.
- **Size**: the body as it arrives and as it is once decompressed are each at most
  `max_body` bytes; one byte more is 413. A gzip body is decompressed at most one byte
  past the limit, so a small body that inflates to gigabytes costs no memory.
- **Parsing**: protobuf through `ExportTraceServiceRequest.FromString`, then protobuf's JSON
  mapping (`MessageToDict`: camelCase, ids in base64, which the reader takes, 14.1); JSON
  as it comes (hex ids, the OTLP JSON encoding, or base64). A body that does not decode,
  or whose JSON is not an ExportTraceServiceRequest's shape (lists of objects down to the
  spans), is 400; so is a gzip body that is not gzip.
- **Receipt**: each span is read and, when it is a retriever span, converted by the import's
  own code (14.1, 14.2) with every document's version taken as known: a span either
  rule rejects is counted in `partial_success.rejected_spans` and kept, so the merge
  records it in `rejected_records` with its reason; a version only a corpus snapshot can
  give is decided at the merge. A span that is not a retriever span is kept as its ids,
  start and the two attributes that say so (the merge counts and skips it, and a later
  copy still replaces an earlier one as in a file); an empty request keeps nothing.
- **Answers** are in the request's encoding: 200 with an `ExportTraceServiceResponse`
  (`partial_success` left unset when nothing was rejected), a `google.rpc.Status` for a
  refusal (JSON when the content type is neither).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from goldenset import jsonstrict
from goldenset.errors import RequestRefused
from goldenset.traces.convert import SpanRejected, is_retriever, to_serve
from goldenset.traces.mapping import Mapping
from goldenset.traces.spans import BadValue, otlp_attributes, otlp_span, request_shape_error

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MEDIA_TYPES = (PROTOBUF, JSON)
# What decides whether a span is a retriever span (convert.is_retriever): all a skipped span keeps.
KIND_ATTRIBUTES = ("openinference.span.kind", "gen_ai.operation.name")
# google.rpc.Status codes for the refusals (the specification lets a server omit them).
_RPC_CODES = {400: 3, 401: 16, 413: 3, 415: 3, 503: 14}


def media_type(header: str | None) -> str | None:
    """PROTOBUF or JSON for a Content-Type header naming one of them; None otherwise."""
    kind = (header or "").split(";", 1)[0].strip().lower()
    return kind if kind in MEDIA_TYPES else None


def check_encoding(header: str | None) -> bool:
    """Whether Content-Encoding is gzip (True), or identity or absent (False); RequestRefused 415 otherwise."""
    coding = (header or "identity").strip().lower()
    if coding not in ("gzip", "identity"):
        raise RequestRefused(415, f"Content-Encoding {header!r} is not supported; send gzip or no encoding")
    return coding == "gzip"


def too_large(size: int, limit: int, what: str) -> RequestRefused:
    return RequestRefused(
        413,
        f"the request body is {what} {size} bytes, past the limit of {limit} (GOLDENSET_TRACE_MAX_BODY); "
        "send smaller batches (the SDK's max_export_batch_size)",
    )


def gunzip(body: bytes, limit: int) -> bytes:
    """The decompressed body (every gzip member), refusing it (413) as soon as it passes `limit` bytes."""
    out = bytearray()
    data = body
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(data, limit + 1 - len(out))
        except zlib.error as exc:
            raise RequestRefused(400, f"the body is not valid gzip ({exc})") from None
        if len(out) > limit:
            raise too_large(len(out), limit, "more than")
        if not inflater.eof:
            raise RequestRefused(400, "the gzip body ends before its end (truncated)")
        data = inflater.unused_data
        if not data:
            return bytes(out)


def decode(body: bytes, media: str) -> dict[str, Any]:
    """The request as a dict in OTLP JSON's shape; RequestRefused 400 when it does not parse."""
    if media == PROTOBUF:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        try:
            message = ExportTraceServiceRequest.FromString(body)
        except (DecodeError, RecursionError) as exc:
            raise RequestRefused(400, f"the body is not a protobuf ExportTraceServiceRequest ({exc})") from None
        return MessageToDict(message)
    try:
        obj = jsonstrict.loads(body)  # standard JSON as section 1 defines it: no duplicate keys, no NaN
    except jsonstrict.StrictJSONError as exc:
        raise RequestRefused(400, f"the body is not standard JSON ({exc})") from None
    problem = request_shape_error(obj)
    if problem is not None:
        raise RequestRefused(400, f"the body is not an ExportTraceServiceRequest: {problem}")
    return obj


@dataclass(frozen=True)
class Receipt:
    """What one request held: spans, how many were rejected (and the first reason), and the line to spool."""

    spans: int
    rejected: int
    first_error: str | None
    line: bytes | None

    def message(self) -> str:
        return f"{self.rejected} of {self.spans} spans rejected; the first: {self.first_error}"


def _any_version(doc_id: str, at: datetime) -> str:
    return "known at the merge"


def receive(request: dict[str, Any], mapping: Mapping) -> Receipt:
    """Check each span of a decoded request as the import would, and the line the spool keeps of it."""
    spans = rejected = 0
    first: str | None = None
    kept_resources = []
    for rs in request.get("resourceSpans") or []:
        try:
            resource = otlp_attributes((rs.get("resource") or {}).get("attributes"))
            resource_problem = None
        except BadValue as exc:
            resource, resource_problem = {}, "resource: " + exc.detail
        kept_scopes = []
        for ss in rs.get("scopeSpans") or []:
            kept = []
            for sp in ss.get("spans") or []:
                spans += 1
                problem, skeleton = resource_problem, None
                if problem is None:
                    problem, skeleton = _check(sp, resource, mapping)
                if problem is not None:
                    rejected += 1
                    first = first or problem
                kept.append(sp if skeleton is None else skeleton)
            if kept:
                kept_scopes.append({**ss, "spans": kept})
        if kept_scopes:
            kept_resources.append({**rs, "scopeSpans": kept_scopes})
    line = orjson.dumps({"resourceSpans": kept_resources}) if kept_resources else None
    return Receipt(spans, rejected, first, line)


def _check(sp: dict[str, Any], resource: dict[str, Any], mapping: Mapping) -> tuple[str | None, dict | None]:
    """(why the span is rejected or None, its skeleton when it is kept as a skipped span)."""
    try:
        span = otlp_span(sp, resource)
    except BadValue as exc:
        return exc.detail, None
    if not is_retriever(span):
        attributes = [kv for kv in sp.get("attributes") or [] if kv.get("key") in KIND_ATTRIBUTES]
        keys = ("traceId", "spanId", "startTimeUnixNano")
        return None, {**{k: sp[k] for k in keys if k in sp}, "attributes": attributes}
    try:
        to_serve(span, mapping, _any_version)
    except SpanRejected as exc:
        return exc.detail, None
    return None, None


def success_body(media: str, receipt: Receipt | None) -> bytes:
    """An ExportTraceServiceResponse in `media`; partial_success set only when spans were rejected."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTracePartialSuccess,
        ExportTraceServiceResponse,
    )

    response = ExportTraceServiceResponse()
    if receipt is not None and receipt.rejected:
        response.partial_success.CopyFrom(
            ExportTracePartialSuccess(rejected_spans=receipt.rejected, error_message=receipt.message())
        )
    return _encode(response, media)


def status_body(media: str, status: int, message: str) -> bytes:
    """A google.rpc.Status in `media`, for a refusal."""
    from google.rpc.status_pb2 import Status

    return _encode(Status(code=_RPC_CODES.get(status, 2), message=message), media)


def _encode(message: Any, media: str) -> bytes:
    if media == PROTOBUF:
        return message.SerializeToString()
    from google.protobuf.json_format import MessageToJson

    return MessageToJson(message, indent=None).encode()
