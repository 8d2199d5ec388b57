"""A real Phoenix: spans sent over OTLP/HTTP, document annotations added with its client, read back, imported, built."""

from __future__ import annotations

import json
import runpy
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from goldenset.records import normalise_task, query_id
from goldenset.snapshots import snapshot_corpus
from goldenset.traces.importer import import_traces
from goldenset.traces.mapping import Mapping
from goldenset.warehouse import connect
from goldenset_dagster.cli import main
from tests.helpers import doc, running_under_ci, wait_for_venv, write_corpus
from tests.traces.phoenix_server import ENV_VENV, PhoenixServer, phoenix_venv
from tests.traces.producers import Retrieval, retriever_span_ids, retriever_spans

pytestmark = pytest.mark.phoenix
PROJECT = "goldenset-phoenix-test"
TASK1 = "Add retries to the webhook sender"
TASK2 = "How are refunds issued?"
RECIPE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "traces" / "phoenix_export.py"


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory):
    """One Phoenix server for the whole run (it takes 30-40 s to start)."""
    venv = phoenix_venv()
    wait_for_venv(venv)
    if not (venv / "bin" / "phoenix").exists():
        why = f"no Phoenix venv at {venv}: create it with `python -m venv {venv} && {venv}/bin/pip install arize-phoenix` or set {ENV_VENV}"
        if running_under_ci():
            pytest.fail("CI must run the Phoenix tests: " + why)
        pytest.skip(why)
    server = PhoenixServer(venv, tmp_path_factory.mktemp("phoenix"))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def send(url: str, spans) -> None:
    """OTLP/HTTP: Phoenix's /v1/traces takes the protobuf encoding only."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    r = httpx.post(
        url + "/v1/traces",
        content=encode_spans(spans).SerializeToString(),
        headers={"content-type": "application/x-protobuf"},
        timeout=30,
    )
    r.raise_for_status()


def stored_retriever_spans(client, n: int) -> list[dict]:
    """Phoenix stores OTLP spans asynchronously (the project exists only after the first): poll up to 60 s."""
    deadline = time.monotonic() + 60
    while True:
        try:
            spans = client.spans.get_spans(project_identifier=PROJECT, span_kind="RETRIEVER", limit=100)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 404:
                raise
            spans = []
        if len(spans) >= n:
            return spans
        assert time.monotonic() < deadline, f"Phoenix stored {len(spans)} of {n} retriever spans within 60 s"
        time.sleep(0.5)


def read_back(url: str, folder: Path, n_retrievers: int) -> list[dict]:
    """The guide's recipe (docs/examples/traces/phoenix_export.py), run once Phoenix has stored the spans."""
    from phoenix.client import Client

    stored_retriever_spans(Client(base_url=url), n_retrievers)
    recipe = runpy.run_path(str(RECIPE))
    assert recipe["export"](url, PROJECT, folder)[0] == n_retrievers
    return [json.loads(x) for x in (folder / "document_annotations.jsonl").read_text().splitlines()]


def test_spans_and_annotations_read_back_from_phoenix_build_the_annotated_golden_set(phoenix, tmp_path, monkeypatch):
    from phoenix.client import Client

    monkeypatch.chdir(tmp_path)
    spans = retriever_spans(
        "billing",
        [
            Retrieval(datetime(2026, 11, 28, 10, tzinfo=UTC), TASK1, [("dec-204", "2", {}), ("dec-9", None, {})]),
            Retrieval(datetime(2026, 11, 29, 9, 30, tzinfo=UTC), TASK2, [("pol-1", "1", {}), ("pol-2", "1", {})]),
        ],
        seed=26,
        resource={"openinference.project.name": PROJECT},
    )
    send(phoenix.url, spans)
    (_, s1), (_, s2) = retriever_span_ids(spans)
    client = Client(base_url=phoenix.url)
    stored_retriever_spans(client, 2)
    given = [
        (s1, 0, "relevant", "HUMAN"),
        (s1, 1, "irrelevant", "HUMAN"),
        (s2, 0, "relevant", "HUMAN"),
        (s2, 1, "contradicted", "HUMAN"),
        (s2, 0, "irrelevant", "LLM"),
    ]
    client.spans.log_document_annotations(
        document_annotations=[
            {
                "name": "relevance" if kind == "HUMAN" else "llm-relevance",
                "span_id": sid,
                "document_position": pos,
                "annotator_kind": kind,
                "result": {"label": label},
            }
            for sid, pos, label, kind in given
        ],
        sync=True,
    )
    annotations = read_back(phoenix.url, tmp_path / "phoenix-export", 2)
    assert sorted((a["span_id"], a["documentPosition"], a["label"], a["annotatorKind"]) for a in annotations) == sorted(
        given
    )

    corpus = write_corpus(
        tmp_path / "corpus.jsonl", [doc("dec-204", "2"), doc("dec-9", "7"), doc("pol-1", "1"), doc("pol-2", "1")]
    )
    db = tmp_path / "g.duckdb"
    con = connect(db)
    snapshot_corpus(con, corpus, now=datetime(2026, 11, 1))
    mapping = Mapping.model_validate({"project": {"default": "billing"}})
    result = import_traces(con, tmp_path / "phoenix-export", "openinference", mapping, tmp_path / "logs")
    con.close()
    assert (result.serves, result.verdicts, dict(result.rejected)) == (2, 4, {})
    assert dict(result.annotations_skipped) == {"annotator_kind_LLM": 1}
    assert main(["build", "--logs", str(tmp_path / "logs"), "--corpus", str(corpus), "--db", str(db)]) == 0

    con = connect(db, read_only=True)
    got = con.execute("SELECT query_id, doc_id, doc_version, verdict FROM golden_set ORDER BY ALL").fetchall()
    con.close()
    q1, q2 = query_id("billing", normalise_task(TASK1)), query_id("billing", normalise_task(TASK2))
    # The human annotations, mapped by the default labels (the LLM's opinion is not a verdict).
    assert got == sorted(
        [
            (q1, "dec-204", "2", "helped"),
            (q1, "dec-9", "7", "noise"),
            (q2, "pol-1", "1", "helped"),
            (q2, "pol-2", "1", "wrong"),
        ]
    )
