"""ranx's `compare` on five seeded runs, run in ranx's own venv (tests/bench/test_ranx.py).

Needs only numpy and ranx, so it runs under the venv's Python with nothing of this checkout
on its path (`python -I tests/bench/ranx_oracle.py`): it prints one JSON object, ranx's
version, its superscripts per run and metric, and its p-value per pair and metric. `.ci/run`
runs it once right after installing the venv, so numba compiles (and caches) exactly the code
the test then runs: a warm-up of any other shape left 22 CPU seconds of compiling to the test.
The test imports `case()` from here, so both sides read the same runs.
"""

from __future__ import annotations

import json
import sys

import numpy as np

# ranx's metric names, in the order of the table.
METRICS = ["ndcg@10", "precision@5", "recall@10", "map@100", "mrr@100"]


def case() -> dict:
    """Five seeded rankers of growing skill over 50 queries of 60 documents, graded qrels 0-2."""
    rng = np.random.default_rng(42)
    qrels: dict[str, dict[str, int]] = {}
    for q in range(50):
        docs = rng.choice(60, size=12, replace=False)
        grades = rng.choice([0, 1, 1, 2], size=12)
        grades[0] = max(grades[0], 1)  # every query has a relevant document
        qrels[f"q{q:02d}"] = {f"d{d:02d}": int(g) for d, g in zip(docs, grades, strict=True)}
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for name, skill in zip("abcde", (0.0, 0.1, 0.12, 0.6, 0.65), strict=True):
        runs[f"run_{name}"] = {}
        for q, rels in qrels.items():
            scores = rng.random(60) + np.array([skill * rels.get(f"d{d:02d}", 0) for d in range(60)])
            top = np.argsort(-scores, kind="stable")[:30]
            runs[f"run_{name}"][q] = {f"d{d:02d}": float(30 - i) for i, d in enumerate(top)}
    return {"qrels": qrels, "runs": runs, "metrics": list(METRICS)}


def main() -> int:
    from importlib.metadata import version

    from ranx import Qrels, Run, compare

    data = case()
    runs = [Run(r, name=name) for name, r in data["runs"].items()]
    report = compare(Qrels(data["qrels"]), runs, data["metrics"], stat_test="student", max_p=0.05)
    names = list(data["runs"])
    out: dict = {"version": version("ranx"), "marks": {}, "p": {}}
    for a in names:
        out["marks"][a] = {m: report.get_superscript_for_table(a, m) for m in data["metrics"]}
        for b in names[names.index(a) + 1 :]:
            out["p"][f"{a} {b}"] = {m: float(report.comparisons[a, b][m]["p_value"]) for m in data["metrics"]}
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
