"""Time `goldenset traces import` on a generated OTLP JSON export: spans per second, twice.

    python benchmarks/traces_import.py [--spans 20000] [--docs 5] [--seed 0]

Writes one export (512 spans per line, as a Collector batch; each span a RETRIEVER span
with --docs documents carrying their version, half of them annotated by a person) into a
temporary folder, imports it into a fresh warehouse, then imports it again (nothing to
write: the idempotent path). Prints the file size and both times, wall and CPU.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goldenset.traces.importer import import_traces  # noqa: E402
from goldenset.traces.mapping import Mapping  # noqa: E402
from goldenset.warehouse import connect  # noqa: E402

START_NS = 1_764_324_000_000_000_000  # 2025-11-28T10:00:00Z


def _kv(key: str, value) -> dict:
    kind = "doubleValue" if isinstance(value, float) else "stringValue"
    return {"key": key, "value": {kind: value}}


def write_export(folder: Path, n_spans: int, n_docs: int, seed: int) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "traces.jsonl").open("w") as spans_out, (folder / "annotations.jsonl").open("w") as ann_out:
        for start in range(0, n_spans, 512):
            spans = []
            for i in range(start, min(n_spans, start + 512)):
                span_id = f"{i + 1:016x}"
                attrs = [
                    _kv("openinference.span.kind", "RETRIEVER"),
                    _kv("input.value", f"question {rng.randrange(n_spans // 4)}"),
                ]
                for p in range(n_docs):
                    base = f"retrieval.documents.{p}.document."
                    attrs += [
                        _kv(base + "id", f"doc-{rng.randrange(10_000)}-{p}"),
                        _kv(base + "score", 1.0 - p / 10),
                        _kv(base + "metadata", json.dumps({"version": str(rng.randrange(1, 4))})),
                    ]
                spans.append(
                    {
                        "traceId": f"{i + 1:032x}",
                        "spanId": span_id,
                        "name": "retrieve",
                        "startTimeUnixNano": str(START_NS + i * 60_000_000_000),
                        "attributes": attrs,
                    }
                )
                if i % 2 == 0:
                    ann = {
                        "span_id": span_id,
                        "document_position": rng.randrange(n_docs),
                        "name": "relevance",
                        "label": rng.choice(["relevant", "irrelevant"]),
                        "annotator_kind": "HUMAN",
                        "updated_at": "2026-01-01T00:00:00Z",
                    }
                    ann_out.write(json.dumps(ann) + "\n")
            request = {
                "resourceSpans": [
                    {"resource": {"attributes": [_kv("service.name", "bench")]}, "scopeSpans": [{"spans": spans}]}
                ]
            }
            spans_out.write(json.dumps(request) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spans", type=int, default=20_000)
    ap.add_argument("--docs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_export(root / "export", args.spans, args.docs, args.seed)
        size = sum(p.stat().st_size for p in (root / "export").iterdir())
        con = connect(root / "g.duckdb")
        for label in ("first import", "same again"):
            t, cpu = time.perf_counter(), time.process_time()
            result = import_traces(con, root / "export", "otlp-json", Mapping(), root / "logs")
            took, cpu = time.perf_counter() - t, time.process_time() - cpu
            print(
                f"{label}: {args.spans} spans ({size / 1e6:.1f} MB), {took:.2f} s, {args.spans / took:,.0f} spans/s "
                f"(CPU {cpu:.2f} s); serves {result.serves}, verdicts {result.verdicts}, "
                f"files written {len(result.files_written)}"
            )
        con.close()


if __name__ == "__main__":
    main()
