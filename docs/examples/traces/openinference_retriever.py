"""A retriever traced by OpenInference's instrumentation, its spans sent to `goldenset traces serve`.

    pip install openinference-instrumentation opentelemetry-exporter-otlp-proto-http
    goldenset traces serve &
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces python openinference_retriever.py

`@tracer.retriever` makes each call a RETRIEVER span whose input is the query; the documents
are recorded with OpenInference's own helper, the version in each document's metadata.
LangChain's and LlamaIndex's auto-instrumentations write the same attributes.
"""

from openinference.instrumentation import TracerProvider, get_retriever_attributes
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import BatchSpanProcessor

INDEX = [
    ("plan-ent", "5", "The Enterprise plan includes SSO and audit logs."),
    ("plan-pro", "3", "The Pro plan includes priority support."),
    ("plan-basic", "1", "The Basic plan includes email support."),
]

provider = TracerProvider(resource=Resource.create({"service.name": "sales-assistant"}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
tracer = provider.get_tracer(__name__)


@tracer.retriever
def retrieve(query: str) -> list[dict]:
    words = set(query.lower().split())
    ranked = sorted(INDEX, key=lambda doc: -len(words & set(doc[2].lower().split())))[:2]
    documents = [
        {"id": doc_id, "score": 1.0 / (rank + 1), "content": text, "metadata": {"version": version}}
        for rank, (doc_id, version, text) in enumerate(ranked)
    ]
    trace.get_current_span().set_attributes(get_retriever_attributes(documents=documents))
    return documents


if __name__ == "__main__":
    retrieve("which plan includes sso")
    provider.shutdown()  # sends what the batch holds
