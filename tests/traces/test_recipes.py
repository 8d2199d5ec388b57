"""Each way in that docs/guides/traces.md gives, run as the guide runs it (docs/examples/traces/).

The two exporting recipes send to one `goldenset traces serve` process (a token set, as the
guide shows), configured only by the standard OTEL_EXPORTER_OTLP_TRACES_* variables; the
file exporter's output is imported with `goldenset traces import`. The Phoenix recipe runs
against a real Phoenix in tests/traces/test_phoenix.py.
"""

from __future__ import annotations

import json
import re
import runpy
import time
from pathlib import Path

import pytest

from goldenset.cli.app import main  # traces import itself (its Dagster run: tests/test_command_runs.py)
from tests.traces.receiver_process import ReceiverProcess

pytestmark = pytest.mark.slow
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "traces"
TOKEN = "recipe-token"


@pytest.fixture(scope="module")
def receiver(tmp_path_factory):
    root = tmp_path_factory.mktemp("receiver")
    (root / "token").write_text(TOKEN)
    process = ReceiverProcess(root, "--token-file", str(root / "token"))
    yield process
    assert process.stop() == 0


@pytest.fixture
def otel_env(receiver, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", f"Authorization=Bearer%20{TOKEN}")
    return receiver


def serves_for(receiver: ReceiverProcess, task: str, seconds: float = 60.0) -> dict:
    """The serve line whose task is `task`, once the receiver has merged it into LOGS."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for path in sorted((receiver.home / "logs").glob("dt=*/traces.jsonl")):
            for line in path.read_text().splitlines():
                serve = json.loads(line)
                if serve.get("task") == task:
                    return serve
        time.sleep(0.1)
    raise AssertionError(f"no serve for {task!r} in LOGS after {seconds} s: {receiver.output()}")


def test_the_sdk_exporter_recipe_sends_its_spans_to_traces_serve(otel_env):
    runpy.run_path(str(EXAMPLES / "sdk_exporter.py"), run_name="__main__")
    refunds = serves_for(otel_env, "how are refunds issued to the card")
    # By hand from the recipe's index: pol-1 shares "are refunds issued to the card" (6 words);
    # pol-2 and dec-204 share none, a tie the sort leaves in the index's order: pol-2.
    assert refunds["project"] == "billing-api"
    assert [(i["doc_id"], i["doc_version"], i["rank"], i["score"]) for i in refunds["items"]] == [
        ("pol-1", "1", 1, 6.0),
        ("pol-2", "3", 2, 0.0),
    ]
    assert serves_for(otel_env, "do webhook senders retry")["items"][0]["doc_id"] == "dec-204"


def test_the_openinference_recipe_traces_a_decorated_retriever(otel_env):
    runpy.run_path(str(EXAMPLES / "openinference_retriever.py"), run_name="__main__")
    serve = serves_for(otel_env, "which plan includes sso")
    assert serve["project"] == "sales-assistant"
    # plan-ent shares "plan", "includes", "sso"; plan-pro and plan-basic share "plan", "includes"
    # (a tie: Python's sort keeps the index's order, so plan-pro).
    assert [(i["doc_id"], i["doc_version"], i["rank"]) for i in serve["items"]] == [
        ("plan-ent", "5", 1),
        ("plan-pro", "3", 2),
    ]


def test_the_file_exporter_recipe_writes_the_collectors_format_and_imports(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["file_exporter.py", "trace_export/traces.jsonl"])
    runpy.run_path(str(EXAMPLES / "file_exporter.py"), run_name="__main__")
    [line] = (tmp_path / "trace_export" / "traces.jsonl").read_text().splitlines()
    # The OTLP JSON encoding the specification's file exporter and the Collector write.
    request = json.loads(line)
    [span] = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"]) and re.fullmatch(r"[0-9a-f]{16}", span["spanId"])
    assert isinstance(span["kind"], int) and isinstance(span["startTimeUnixNano"], str)
    args = ["traces", "import", "trace_export", "--format", "otlp-json", "--logs", "logs", "--db", "g.duckdb"]
    assert main(args) == 0
    assert "serves: 1" in capsys.readouterr().out.splitlines()
    [serve] = [json.loads(x) for p in (tmp_path / "logs").glob("dt=*/traces.jsonl") for x in p.read_text().splitlines()]
    assert (serve["task"], serve["items"][0]["doc_id"]) == ("how long do refunds take", "pol-1")
