"""Comparing five rankers on Cranfield without fooling yourself: the family-wise error, measured.

    python benchmarks/cranfield_comparisons.py [--collection DIR] [--resamples 1000] \
        [--rankers bm25:1.2:0.75,bm25:0.9:0.4,bm25:1.5:0.75,bm25:2.0:1.0,dense] [--depth 100] \
        [--permutations 10000] [--seed 0] [--out FILE.json] [--markdown FILE.md]

DIR holds cran.all.1400, cran.qry and cranqrel (default: tests/data/cranfield-mini, the
fresh-clone smoke size; the full collection gives the tables in docs/concepts/benchmark.md).

What it does, in order:

1. **Five real rankers** (`cranfield_study`): BM25 over title and abstract at four (k1, b)
   settings and the packaged MiniLM's cosine, each ranking the `--depth` best documents per
   query. Each is scored with goldenset's own metrics against **every Cranfield judgment**
   (graded: codes 1-2 grade 2, 3-4 grade 1, -1 judged not relevant), over the queries with a
   relevant document (the benchmark's skip_no_relevant policy), at the benchmark's default
   cut-offs (k = 5 and 24): recall@k, precision@k, ndcg@10, mrr, map and noise@k, the nine
   deciding metrics of `bench run`.
2. **The five-run comparison** through the library `bench compare` calls
   (`goldenset.bench.compare_many.compare_many`), paired t test, Holm over the family (10 pairs
   x 9 metrics = 90 comparisons), and the same without correction: the summary table with its
   marks, and how many verdicts the correction changes.
3. **The null** (the family-wise false-verdict rate): `--resamples` times, five *shuffled runs*:
   for each run and each query, one of the five rankers drawn uniformly at random,
   independently, and its per-query values taken. Every shuffled run then has the same
   distribution on every query, so every pairwise null hypothesis is true (the complete null),
   while each paired difference is a real difference between two real rankers on real
   judgments (ties when both drew the same ranker, discreteness, heavy tails). Comparing a
   ranker with itself gives differences of exactly 0 (p = 1: nothing is tested), an A/A split
   of the queries is unpaired, and resampling queries of two fixed rankers keeps their true
   difference: none of them is a null of the paired test `bench compare` runs. On each
   resample the families of the command are tested as the command tests them
   (`goldenset.bench.significance`): all pairs on ndcg@10 (m = 10), all pairs on the nine
   deciding metrics (m = 90), the first run as `--baseline` on ndcg@10 (m = 4), with the t
   test and the randomization test (`--permutations` sign flips, seed = the resample's), and
   10 disjoint pairs of 20 shuffled runs on ndcg@10 (nearly independent tests, where 1 -
   0.95^m applies). The family-wise error is the share of resamples with any verdict, per
   correction (none, Bonferroni, Holm), with its Monte Carlo standard error.

Resample 0's p-values are checked against `compare_many` on the same shuffled runs (the same
numbers through the command's own path).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import cranfield_collection as cc  # noqa: E402
import cranfield_study as study  # noqa: E402

from goldenset.bench import metrics as M  # noqa: E402
from goldenset.bench import significance as sig  # noqa: E402
from goldenset.bench.compare_many import compare_many, pairs_of  # noqa: E402
from goldenset.bench.runs import BenchmarkRun  # noqa: E402

DEFAULT_COLLECTION = HERE.parent / "tests" / "data" / "cranfield-mini"
DEFAULT_RANKERS = "bm25:1.2:0.75,bm25:0.9:0.4,bm25:1.5:0.75,bm25:2.0:1.0,dense"
K_VALUES = (5, 24)
CORRECTIONS = ("none", "bonferroni", "holm")
NULL_METRIC = "ndcg@10"


# --------------------------------------------------------------------------- rankers and their values


def ranker_name(spec: str) -> str:
    if spec == "dense":
        return "dense MiniLM"
    _, k1, b = spec.split(":")
    return f"BM25 k1={k1} b={b}"


def scores_of(collection: cc.Collection, spec: str) -> np.ndarray:
    if spec == "dense":
        return study.dense_scores(collection)
    _, k1, b = spec.split(":")
    return study.bm25_scores(collection, float(k1), float(b))


def per_query_values(collection: cc.Collection, specs: list[str], depth: int) -> tuple[list[str], dict]:
    """(queries measured, {ranker: {query_id: {metric: value}}}) against every Cranfield judgment."""
    qrels = study.full_qrels(collection)
    metrics = M.benchmark_metrics(K_VALUES)
    values = {}
    for spec in specs:
        top = study.top(scores_of(collection, spec), depth)
        lists = {
            q.query_id: [collection.docs[int(i)].doc_id for i in top[row]] for row, q in enumerate(collection.queries)
        }
        values[ranker_name(spec)] = M.evaluate(lists, qrels, metrics, policy=M.QueryPolicy.SKIP_NO_RELEVANT)
    queries = sorted(set.intersection(*(set(v) for v in values.values())))
    return queries, values


def deciding_metrics() -> list[str]:
    return [m.name for m in M.benchmark_metrics(K_VALUES) if not m.reference and m.direction != 0]


def as_run(name: str, values: dict[str, dict[str, float]]) -> BenchmarkRun:
    """A ranker's values as the stored run `bench compare` reads."""
    return BenchmarkRun(
        run_id=name,
        started_at=datetime(2026, 1, 1),
        build_id=1,
        corpus_fingerprint="cranfield",
        retriever=name,
        retriever_config={},
        degraded=False,
        warnings=[],
        k_values=K_VALUES,
        depth=100,
        exclude_stale=False,
        stale_labels=0,
        corpus_drift=0.0,
        down_components=[],
        metric_names=list(next(iter(values.values()))),
        values={"core": values},
    )


# --------------------------------------------------------------------------- the five-run comparison


def five_runs(names: list[str], values: dict) -> dict:
    runs = [as_run(n, values[n]) for n in names]
    out = {}
    for correction in ("holm", "none"):
        comp = compare_many(runs, correction=correction)
        out[correction] = {
            "family_size": comp.family_size,
            "significant": sum(1 for t in comp.tests if t.significant),
            "means": {r.run_id: {m: comp.means[r.run_id][m][0] for m in comp.metrics} for r in comp.runs},
            "marks": {r.run_id: {m: comp.better_than(r.run_id, m) for m in comp.metrics} for r in comp.runs},
            "comparisons": [
                {k: getattr(t, k) for k in ("a", "b", "metric", "diff", "lo", "hi", "p", "p_corrected", "verdict")}
                for t in comp.tests
            ],
        }
    return out


# --------------------------------------------------------------------------- the null


def shuffled(matrix: np.ndarray, slots: int, rng: np.random.Generator) -> np.ndarray:
    """slots x queries x metrics: each slot's value on each query from a ranker drawn at random."""
    n_rankers, n_queries, _ = matrix.shape
    pick = rng.integers(0, n_rankers, size=(slots, n_queries))
    return matrix[pick, np.arange(n_queries)[None, :], :]


FAMILIES = ("all pairs, ndcg@10", "all pairs, 9 metrics", "baseline, ndcg@10", "10 disjoint pairs, ndcg@10")


def family_diffs(runs: np.ndarray, metrics: list[str], family: str) -> np.ndarray:
    """n x m differences B - A of one family, in compare_many's order (metric-major, pairs in order)."""
    nd = metrics.index(NULL_METRIC)
    if family == "10 disjoint pairs, ndcg@10":
        return np.column_stack([runs[2 * i + 1, :, nd] - runs[2 * i, :, nd] for i in range(10)])
    baseline = "r0" if family.startswith("baseline") else None
    pairs = pairs_of([f"r{i}" for i in range(5)], baseline)
    chosen = [nd] if family.endswith("ndcg@10") else list(range(len(metrics)))
    return np.column_stack([runs[j, :, m] - runs[i, :, m] for m in chosen for i, j in pairs])


def null_rates(matrix: np.ndarray, metrics: list[str], args: argparse.Namespace) -> dict:
    """Share of resamples with any significant comparison, per family, test and correction."""
    hits = {(f, t, c): 0 for f in FAMILIES for t in sig.TESTS for c in CORRECTIONS}
    sizes = {}
    for s in range(args.resamples):
        rng = np.random.default_rng([args.seed, s])
        runs = shuffled(matrix, 20, rng)
        for family in FAMILIES:
            d = family_diffs(runs, metrics, family)
            sizes[family] = d.shape[1]
            for test in sig.TESTS:
                if test == "randomization" and family == "all pairs, 9 metrics" and not args.randomization_all:
                    continue
                p = sig.t_test(d) if test == "t" else sig.randomization_test(d, args.permutations, seed=s)[0]
                for c in CORRECTIONS:
                    if np.any(sig.adjust(p, c) < sig.ALPHA):
                        hits[family, test, c] += 1
    out = {}
    for family in FAMILIES:
        m = sizes[family]
        rows = {}
        for test in sig.TESTS:
            if test == "randomization" and family == "all pairs, 9 metrics" and not args.randomization_all:
                continue
            rate = {c: hits[family, test, c] / args.resamples for c in CORRECTIONS}
            rows[test] = {c: {"rate": r, "se": math.sqrt(r * (1 - r) / args.resamples)} for c, r in rate.items()}
        out[family] = {"m": m, "independent": 1 - 0.95**m, "tests": rows}
    return out


def check_resample_zero(matrix: np.ndarray, names: list[str], metrics: list[str], queries: list[str], seed: int):
    """The first resample's all-pairs p-values through compare_many equal the study's own."""
    runs = shuffled(matrix, 20, np.random.default_rng([seed, 0]))[:5]
    stored = [
        as_run(f"r{i}", {q: dict(zip(metrics, map(float, runs[i, n]), strict=True)) for n, q in enumerate(queries)})
        for i in range(5)
    ]
    comp = compare_many(stored, metrics=metrics, correction="holm")
    expected = sig.t_test(family_diffs(runs, metrics, "all pairs, 9 metrics"))
    got = np.array([t.p for t in comp.tests])
    if not np.allclose(got, expected, rtol=1e-12, atol=0):
        raise SystemExit("error: compare_many and the study disagree on resample 0's p-values")


# --------------------------------------------------------------------------- run and report


def run(args: argparse.Namespace) -> dict:
    started = time.monotonic()
    collection = cc.read_collection(Path(args.collection))
    specs = args.rankers.split(",")
    queries, values = per_query_values(collection, specs, args.depth)
    names = [ranker_name(s) for s in specs]
    metrics = deciding_metrics()
    matrix = np.array([[[values[n][q][m] for m in metrics] for q in queries] for n in names])
    check_resample_zero(matrix, names, metrics, queries, args.seed)
    return {
        "collection": str(args.collection),
        "queries": len(queries),
        "documents": len(collection.docs),
        "rankers": names,
        "depth": args.depth,
        "metrics": metrics,
        "five_runs": five_runs(names, values),
        "null": null_rates(matrix, metrics, args),
        "resamples": args.resamples,
        "permutations": args.permutations,
        "seed": args.seed,
        "seconds": round(time.monotonic() - started, 1),
    }


def _marks(letters: list[str]) -> str:
    return "".join("ᵃᵇᶜᵈᵉ"["abcde".index(x)] for x in letters)


def markdown(out: dict) -> str:
    names, metrics = out["rankers"], out["metrics"]
    lines = [
        f"{out['queries']} queries with a relevant document, {out['documents']} documents, every Cranfield "
        f"judgment; top {out['depth']} per ranker.",
        "",
        "**The five rankers, compared** (paired t test; superscripts: the runs a mean is significantly better "
        f"than; {out['five_runs']['holm']['family_size']} comparisons):",
        "",
    ]
    for correction, title in (("holm", "Holm"), ("none", "no correction")):
        r = out["five_runs"][correction]
        lines += [f"*{title}*: {r['significant']} of {r['family_size']} comparisons significant.", ""]
        header = ["#", "ranker", *metrics]
        rows = [
            [
                "abcde"[i],
                n,
                *(f"{study.fmt(r['means'][n][m])}{_marks(r['marks'][n][m])}" for m in metrics),
            ]
            for i, n in enumerate(names)
        ]
        lines += study.table(header, rows) + [""]
    lines += [
        f"**The family-wise false-verdict rate under the null** ({out['resamples']} resamples of five shuffled "
        f"runs, seed {out['seed']}; randomization test with {out['permutations']} sign flips; ± one Monte "
        "Carlo standard error):",
        "",
    ]
    header = ["family", "m", "1 - 0.95^m", "test", *(f"{c}" for c in CORRECTIONS)]
    rows = []
    for family, f in out["null"].items():
        for test, rates in f["tests"].items():
            rows.append(
                [
                    family,
                    str(f["m"]),
                    study.pct(f["independent"], 1),
                    test,
                    *(f"{study.pct(rates[c]['rate'], 1)} ± {study.pct(rates[c]['se'], 1)}" for c in CORRECTIONS),
                ]
            )
    lines += study.table(header, rows)
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--collection", default=str(DEFAULT_COLLECTION), help="folder of cran.all.1400, cran.qry, cranqrel")
    p.add_argument("--rankers", default=DEFAULT_RANKERS, help="bm25:K1:B or dense, comma-separated (five)")
    p.add_argument("--depth", type=int, default=100, help="documents ranked per query")
    p.add_argument("--resamples", type=int, default=1000, help="shuffled families drawn under the null")
    p.add_argument("--permutations", type=int, default=sig.DEFAULT_PERMUTATIONS, help="sign flips per test")
    p.add_argument(
        "--randomization-all",
        action="store_true",
        help="also the randomization test on the 90-comparison family (slow: 90 columns per resample)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffles")
    p.add_argument("--out", type=Path, help="write the JSON here")
    p.add_argument("--markdown", type=Path, help="write the tables here")
    args = p.parse_args(argv)
    if len(args.rankers.split(",")) != 5:
        p.error("--rankers: name five rankers")
    return args


def main(argv: list[str] | None = None) -> int:
    return study.simulation_main(parse_args(argv), run, markdown, indent=1)


if __name__ == "__main__":
    sys.exit(main())
