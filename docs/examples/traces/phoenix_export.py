"""Read retriever spans and their document annotations back from Phoenix, as an `openinference` span table.

    pip install arize-phoenix-client httpx
    python phoenix_export.py http://127.0.0.1:6006 default export/
    goldenset traces import export/ --format openinference --mapping mapping.yaml

Spans come through Phoenix's client; document annotations through its GraphQL API (its REST
API does not list them), keyed by span id and document position, as the import reads them.
"""

import json
import sys
from pathlib import Path

import httpx
from phoenix.client import Client

DOCUMENT_ANNOTATIONS = """
query ($id: ID!) {
  node(id: $id) {
    ... on Span { spanId documentEvaluations { name label score annotatorKind documentPosition updatedAt } }
  }
}
"""


def export(url: str, project: str, folder: Path, limit: int = 10_000) -> tuple[int, int]:
    """Write spans.jsonl and document_annotations.jsonl under `folder`; (spans, annotations) written."""
    spans = Client(base_url=url).spans.get_spans(project_identifier=project, span_kind="RETRIEVER", limit=limit)
    annotations = []
    for span in spans:
        answer = httpx.post(
            f"{url}/graphql", json={"query": DOCUMENT_ANNOTATIONS, "variables": {"id": span["id"]}}, timeout=30
        )
        answer.raise_for_status()
        node = answer.json()["data"]["node"]
        annotations += [{"span_id": node["spanId"], **a} for a in node["documentEvaluations"]]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spans.jsonl").write_text("".join(json.dumps(s, default=str) + "\n" for s in spans))
    (folder / "document_annotations.jsonl").write_text("".join(json.dumps(a) + "\n" for a in annotations))
    return len(spans), len(annotations)


if __name__ == "__main__":
    url, project, out = sys.argv[1:4]
    print("spans: {}, document annotations: {}".format(*export(url, project, Path(out))))
