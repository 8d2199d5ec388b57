"""Write spans in the format of the OpenTelemetry Collector's file exporter, from the SDK.

    python file_exporter.py trace_export/traces.jsonl
    goldenset traces import trace_export --format otlp-json

The Collector's `file` exporter (`format: json`) writes one ExportTraceServiceRequest per
line in the OTLP JSON encoding, as the specification's "OTLP file exporter" describes:
lowerCamelCase keys, trace and span ids as hex, 64-bit integers as decimal strings, enums
as integers. The Collector is a Go program (not on PyPI or Debian), so this exporter writes
the same format from the SDK: point it at the folder the pipeline imports (GOLDENSET_TRACE_EXPORT).
"""

import base64
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def otlp_json(value):
    """protobuf's JSON mapping turned into OTLP's: ids from base64 to hex (enums are integers already)."""
    if isinstance(value, dict):
        return {k: base64.b64decode(v).hex() if k in ID_FIELDS and v else otlp_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [otlp_json(v) for v in value]
    return value


class FileSpanExporter(SpanExporter):
    """Appends each batch of spans to `path` as one line of OTLP JSON."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        request = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(otlp_json(request), separators=(",", ":")) + "\n")
        return SpanExportResult.SUCCESS


def main(path: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "billing-api"}))
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(Path(path))))
    tracer = provider.get_tracer("billing-api")
    with tracer.start_as_current_span("retrieve") as span:
        span.set_attribute("openinference.span.kind", "RETRIEVER")
        span.set_attribute("input.value", "how long do refunds take")
        span.set_attribute("retrieval.documents.0.document.id", "pol-1")
        span.set_attribute("retrieval.documents.0.document.metadata", json.dumps({"version": "1"}))
    provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "trace_export/traces.jsonl")
