"""How much slower than the model's own `encode` are `calibrate --scorer dense` and a first `bench run`?

Issue 22 asks both to stay within 1.5x of the time the packaged model takes to encode the
same texts directly (sentence-transformers' `encode`, the same batch size) plus the metric
arithmetic. This script builds the demo world in a temporary folder, runs each command once
through the command line with an empty embedding cache, records every text the command sent
to the model and the time spent in the model, then encodes exactly those texts again with
`SentenceTransformer.encode` in one call, and prints the figures.

    python benchmarks/dense_speed.py [--seed 7] [--json]

Commands are run in-process, one after the other, on a machine the caller keeps quiet.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="dense-speed-") as tmp:
        root = Path(tmp)
        os.environ["GOLDENSET_HOME"] = str(root / "home")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")

        from goldenset.demo.generate import write_demo_data
        from goldenset.embeddings import Embedder
        from goldenset_dagster.cli import main as goldenset

        data = write_demo_data(root / "data", seed=args.seed)
        db, corpus = root / "g.duckdb", data.corpus_after
        paths = ["--db", str(db), "--corpus", str(corpus)]
        if goldenset(["--quiet", "build", "--logs", str(data.logs), *paths]) != 0:
            return 1

        # Each command starts from its own copy of the built warehouse: an empty embedding cache.
        for name in ("bench", "calibrate"):
            shutil.copy(db, root / f"{name}.duckdb")

        sent: list[str] = []
        in_model = [0.0, 0]
        original = Embedder._encode

        def recording(self, model, texts):
            start = time.perf_counter()
            try:
                return original(self, model, texts)
            finally:
                in_model[0] += time.perf_counter() - start
                in_model[1] += 1
                sent.extend(texts)

        Embedder._encode = recording  # type: ignore[method-assign]
        figures = {}
        for name, argv in (
            (
                "bench run (first)",
                [
                    "--quiet",
                    "bench",
                    "run",
                    "--db",
                    str(root / "bench.duckdb"),
                    "--corpus",
                    str(corpus),
                    "--index-dir",
                    str(root / "idx"),
                    "--report",
                    str(root / "report"),
                ],
            ),
            (
                "calibrate --scorer dense --against log",
                [
                    "--quiet",
                    "calibrate",
                    "--scorer",
                    "dense",
                    "--against",
                    "log",
                    "--db",
                    str(root / "calibrate.duckdb"),
                ],
            ),
        ):
            sent.clear()
            in_model[0], in_model[1] = 0.0, 0
            start, cpu = time.perf_counter(), time.process_time()
            code = goldenset(argv)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            texts = list(sent)
            model = Embedder().load()
            model.encode(texts[:8], batch_size=32)  # warm, as the command's model was
            start, direct_cpu = time.perf_counter(), time.process_time()
            model.encode(
                texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            direct, direct_cpu = time.perf_counter() - start, time.process_time() - direct_cpu
            figures[name] = {
                "exit_code": code,
                "texts_embedded": len(texts),
                "distinct_texts": len(set(texts)),
                "model_calls": in_model[1],
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "in_model_s": round(in_model[0], 2),
                "direct_encode_s": round(direct, 2),
                "direct_encode_cpu_s": round(direct_cpu, 2),
                "ratio_wall_to_direct": round(wall / direct, 2) if direct else None,
                "ratio_cpu_to_direct_cpu": round(cpu / direct_cpu, 2) if direct_cpu else None,
            }
        Embedder._encode = original  # type: ignore[method-assign]

    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        for name, f in figures.items():
            print(
                f"{name}: {f['wall_s']} s wall ({f['cpu_s']} s CPU), {f['in_model_s']} s in the model in "
                f"{f['model_calls']} call(s) for {f['texts_embedded']} texts ({f['distinct_texts']} distinct); "
                f"direct encode {f['direct_encode_s']} s ({f['direct_encode_cpu_s']} s CPU); "
                f"wall / direct {f['ratio_wall_to_direct']}, CPU / direct CPU {f['ratio_cpu_to_direct_cpu']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
