"""Time `goldenset traces serve`: spans per second accepted, and accepted and written to LOGS.

    python benchmarks/traces_serve.py [--spans 20000] [--docs 5] [--batch 512]

Starts the receiver (a process of its own, in a temporary home, as `goldenset traces serve`
runs), then records --spans RETRIEVER spans of --docs documents each (version in metadata,
the attribute names of benchmarks/traces_import.py) with the OpenTelemetry SDK, exported by
its BatchSpanProcessor and OTLPSpanExporter (HTTP protobuf, --batch spans a request). Prints
when the last request was acknowledged (accepted: appended to the spool and fsynced) and
when the last serve line was in LOGS (written: merged), each as spans per second from the
first span, and the CPU seconds of the receiver and of this client. The spans start now, so
they fall on one or two days: each merge rewrites one growing day file, as live traffic does.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def start_receiver(home: Path) -> tuple[subprocess.Popen, str, Path]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOLDENSET_", "OTEL_"))}
    env["GOLDENSET_HOME"] = str(home)
    out = home.parent / "receiver.out"
    with out.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "goldenset", "traces", "serve", "--port", "0"],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=home.parent,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in out.read_text().splitlines():
            if line.startswith("receiving OTLP/HTTP spans at "):
                return proc, line.split(" at ", 1)[1].strip(), out
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    sys.exit(f"traces serve did not start: {out.read_text()}")


def serves_written(logs: Path) -> int:
    total = 0
    for path in logs.glob("dt=*/traces.jsonl"):
        with path.open("rb") as fh:
            total += sum(1 for _ in fh)
    return total


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def send(url: str, n_spans: int, n_docs: int, batch: int, seed: int) -> None:
    rng = random.Random(seed)
    exporter = OTLPSpanExporter(endpoint=url, timeout=60)
    processor = BatchSpanProcessor(exporter, max_queue_size=n_spans, max_export_batch_size=batch)
    provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench")
    for _ in range(n_spans):
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attribute("openinference.span.kind", "RETRIEVER")
            span.set_attribute("input.value", f"question {rng.randrange(max(1, n_spans // 4))}")
            for p in range(n_docs):
                base = f"retrieval.documents.{p}.document."
                span.set_attribute(base + "id", f"doc-{rng.randrange(10_000)}-{p}")
                span.set_attribute(base + "score", 1.0 - p / 10)
                span.set_attribute(base + "metadata", json.dumps({"version": str(rng.randrange(1, 4))}))
    if not provider.force_flush(timeout_millis=600_000):
        sys.exit("the exporter did not flush every span within 10 minutes")
    provider.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spans", type=int, default=20_000)
    ap.add_argument("--docs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        proc, url, out = start_receiver(home)
        try:
            start_cpu, client_start = cpu_seconds(proc.pid), time.process_time()
            t0 = time.perf_counter()
            send(url, args.spans, args.docs, args.batch, args.seed)
            accepted = time.perf_counter() - t0
            client_cpu = time.process_time() - client_start
            while serves_written(home / "logs") < args.spans:
                if proc.poll() is not None:
                    sys.exit(f"the receiver ended: {out.read_text()}")
                time.sleep(0.05)
            written = time.perf_counter() - t0
            receiver_cpu = cpu_seconds(proc.pid) - start_cpu
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        merges = sum(1 for line in out.read_text().splitlines() if line.startswith("merged:"))
        print(
            f"{args.spans} spans of {args.docs} documents, {args.batch} a request: "
            f"accepted in {accepted:.2f} s ({args.spans / accepted:,.0f} spans/s), "
            f"written to LOGS in {written:.2f} s ({args.spans / written:,.0f} spans/s); "
            f"{merges} merges; CPU: receiver {receiver_cpu:.1f} s, client {client_cpu:.1f} s"
        )


if __name__ == "__main__":
    main()
