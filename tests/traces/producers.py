"""Spans made by the real producers: opentelemetry-sdk with OpenInference's attribute names.

`retriever_spans` records retriever spans with the SDK (in memory), and `otlp_json_line`
serialises them with opentelemetry-proto's encoder to the OTLP JSON encoding the
Collector's file exporter writes: camelCase, ids as hex (protobuf's JSON gives base64).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from google.protobuf.json_format import MessageToDict
from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator


@dataclass(frozen=True)
class Retrieval:
    """One retrieval: when, what was asked, and the documents returned (id, version or None, metadata extra)."""

    at: datetime
    query: str
    docs: list[tuple[str, str | None, dict]]


class SeededIds(IdGenerator):
    """Deterministic ids, so a test's files are the same on every run."""

    def __init__(self, seed: int):
        self.n = seed << 20

    def generate_span_id(self) -> int:
        self.n += 1
        return self.n

    def generate_trace_id(self) -> int:
        self.n += 1
        return (self.n << 64) | 0xABC


def ns(at: datetime) -> int:
    return int(at.astimezone(UTC).timestamp()) * 1_000_000_000 + at.microsecond * 1000


def retriever_spans(
    project: str, retrievals: list[Retrieval], seed: int = 1, resource: dict | None = None
) -> list[ReadableSpan]:
    """Record one RETRIEVER span (inside an agent span) per retrieval with opentelemetry-sdk."""
    exporter = InMemorySpanExporter()
    attrs = {"service.name": project, **(resource or {})}
    provider = TracerProvider(resource=Resource.create(attrs), id_generator=SeededIds(seed))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("goldenset-tests")
    for r in retrievals:
        with tracer.start_as_current_span("agent", start_time=ns(r.at)) as parent:
            parent.set_attribute(SpanAttributes.OPENINFERENCE_SPAN_KIND, OpenInferenceSpanKindValues.AGENT.value)
            with tracer.start_as_current_span("retrieve", start_time=ns(r.at)) as span:
                span.set_attribute(SpanAttributes.OPENINFERENCE_SPAN_KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
                span.set_attribute(SpanAttributes.INPUT_VALUE, r.query)
                for i, (doc_id, version, extra) in enumerate(r.docs):
                    base = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}."
                    meta = dict(extra)
                    if version is not None:
                        meta["version"] = version
                    span.set_attribute(base + DocumentAttributes.DOCUMENT_ID, doc_id)
                    span.set_attribute(base + DocumentAttributes.DOCUMENT_SCORE, 1.0 - i / 10)
                    span.set_attribute(base + DocumentAttributes.DOCUMENT_CONTENT, f"text of {doc_id}")
                    span.set_attribute(base + DocumentAttributes.DOCUMENT_METADATA, json.dumps(meta))
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _hex_ids(obj):
    """protobuf's JSON writes bytes as base64; the OTLP JSON encoding wants trace and span ids as hex."""
    if isinstance(obj, dict):
        return {
            k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else _hex_ids(v)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_hex_ids(v) for v in obj]
    return obj


def otlp_json_line(spans: list[ReadableSpan]) -> str:
    """One ExportTraceServiceRequest in the OTLP JSON encoding (one line of the Collector's file export)."""
    return json.dumps(_hex_ids(MessageToDict(encode_spans(spans))))


def retriever_span_ids(spans: list[ReadableSpan]) -> list[tuple[str, str]]:
    """(trace_id, span_id) as lowercase hex of the RETRIEVER spans, in the order recorded."""
    return [
        (format(s.context.trace_id, "032x"), format(s.context.span_id, "016x"))
        for s in spans
        if s.attributes.get(SpanAttributes.OPENINFERENCE_SPAN_KIND) == "RETRIEVER"
    ]
