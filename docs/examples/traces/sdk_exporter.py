"""Send retriever spans to `goldenset traces serve` with the OpenTelemetry SDK's OTLP/HTTP exporter.

    goldenset traces serve &
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces python sdk_exporter.py

The exporter reads its endpoint and headers (a token: `Authorization=Bearer%20<token>`) from
the standard OTEL_EXPORTER_OTLP_TRACES_* variables, and sends protobuf, batched. The span
carries OpenInference's attribute names; each document's version goes in its metadata.
"""

import json

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

# Your index: each document's id, version and text.
INDEX = [
    ("pol-1", "1", "Refunds are issued to the original card within five days."),
    ("pol-2", "3", "Refund requests after thirty days need a manager's approval."),
    ("dec-204", "2", "Webhook senders retry with exponential backoff."),
]


def search(query: str, k: int = 2) -> list[tuple[str, str, float]]:
    """A stand-in retriever: documents sharing words with the query, best first."""
    words = set(query.lower().split())
    scored = [(doc_id, version, len(words & set(text.lower().split()))) for doc_id, version, text in INDEX]
    return [(d, v, float(s)) for d, v, s in sorted(scored, key=lambda t: -t[2])[:k]]


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "billing-api"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("billing-api")
    for query in ("how are refunds issued to the card", "do webhook senders retry"):
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attribute("openinference.span.kind", "RETRIEVER")
            span.set_attribute("input.value", query)
            for i, (doc_id, version, score) in enumerate(search(query)):
                prefix = f"retrieval.documents.{i}.document."
                span.set_attribute(prefix + "id", doc_id)
                span.set_attribute(prefix + "score", score)
                span.set_attribute(prefix + "metadata", json.dumps({"version": version}))
    provider.shutdown()  # sends what the batch holds


if __name__ == "__main__":
    main()
