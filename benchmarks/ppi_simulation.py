"""Validity of prediction-powered estimates, shown by simulation on Cranfield's real judgments.

    python benchmarks/ppi_simulation.py [--collection DIR] [--samples 1000] [--sizes 20,40,80] \
        [--kappas 0.3,0.5,0.7] [--depth 10] [--seed 0] [--out FILE.json] [--markdown FILE.md]

DIR holds cran.all.1400, cran.qry and cranqrel (default: tests/data/cranfield-mini, the
fresh-clone smoke size; the full collection gives the table in docs/concepts/estimates.md).

What it does, in order:

1. Two rankers over the 1,400 abstracts (title + abstract): BM25 (bm25s, the benchmark's
   lexical settings) and dense (the packaged MiniLM, cosine). The pool is the union of
   their top `depth` documents per query; the **truth** of a pooled pair is Cranfield's
   judgment (codes 1-4 relevant, anything else not), as a human audit would record it.
2. Judges label every pooled pair: simulated judges with a symmetric confusion matrix
   (the same accuracy on relevant and irrelevant pairs) whose accuracy is solved so that
   Cohen's kappa against the truth is the target (0.3, 0.5, 0.7), drawn once with the
   seed; and the **dense judge**: the real cosine cut at its calibrated threshold (the
   cut minimising the false-pass rate plus the false-fail rate over the pooled pairs:
   contract 8.2's `single` with R = relevant / irrelevant pairs; ties to the higher cut).
3. Per query: nDCG@depth (binary gains) of each ranker under the truth (y) and under the
   judge's labels (f); the population is every query, its true mean the mean of y. The
   paired difference is dense - BM25.
4. For each judge and audit size n: `--samples` audits, each a uniform draw of n queries
   without replacement; on each, the PPI interval of goldenset.bench.ppi (finite design:
   mean_N(f) - mean_n(f - y), variance (1 - n/N) s_d^2 / n, Student's t) and the
   human-only interval (mean_n(y), (1 - n/N) s_y^2 / n); and PPI++ (lambda fitted on the
   audit, the regression estimator's variance: n - 2 degrees of freedom). Reported: coverage
   of the true mean (of the mean, and of the paired difference), the mean ratio of the PPI
   width to the human-only width on the same sample, and the effective sample size gain
   (mean human-only variance / mean PPI variance). Vectorised with numpy; the first sample
   of each setting is checked against goldenset.bench.ppi.ppi_mean itself.
5. Per judge, over all queries: the correlation rho of prediction and truth, and
   sqrt(1 - rho^2), the width ratio of the best fixed lambda (cov / var over the whole
   population, which no audit knows) for large audits: the floor of every PPI and PPI++
   interval with this judge, whatever the audit size. A judge-side figure, not a sampled one.

Sizes at or above the number of queries are skipped (the mini collection has 4).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import cranfield_collection as cc  # noqa: E402
import cranfield_study as study  # noqa: E402

from goldenset.bench.ppi import ppi_mean  # noqa: E402

DEFAULT_COLLECTION = HERE.parent / "tests" / "data" / "cranfield-mini"


# --------------------------------------------------------------------------- the audits


def audits(f: np.ndarray, y: np.ndarray, n: int, draws: np.ndarray) -> dict:
    """Coverage, width ratio and effective sample size gain of PPI, PPI++ and human-only over the audit draws."""
    big_n = len(f)
    mu = float(y.mean())
    fs, ys = f[draws], y[draws]
    fpc = 1 - n / big_n
    q_h = float(stats.t.ppf(0.975, n - 1))
    var_h = fpc * ys.var(axis=1, ddof=1) / n
    cover_h = np.abs(ys.mean(axis=1) - mu) <= q_h * np.sqrt(var_h)
    # PPI++ (goldenset.bench.ppi.tuned_lambda, per draw): cov(f, y) / var(f), clipped to [0, 1].
    var_f = fs.var(axis=1, ddof=1)
    cov = ((fs - fs.mean(axis=1, keepdims=True)) * (ys - ys.mean(axis=1, keepdims=True))).sum(axis=1) / (n - 1)
    tuned = np.clip(np.divide(cov, var_f, out=np.zeros_like(cov), where=var_f > 0), 0.0, 1.0)
    rho = float(np.corrcoef(f, y)[0, 1]) if f.std() > 0 and y.std() > 0 else None
    out: dict = {
        "true_mean": mu,
        "coverage_human": float(cover_h.mean()),
        "correlation": rho,
        "width_bound": math.sqrt(1 - rho**2) if rho is not None else None,
    }
    # PPI++ spends a degree of freedom on lambda (the regression estimator's variance), as the library does.
    # Inside (0, 1) the fitted lambda costs a degree of freedom; at the clip the interval is the fixed lambda's.
    inside = (tuned > 0) & (tuned < 1)
    for key, lam, ddof in (("ppi", np.ones(len(draws)), np.ones(len(draws), int)), ("ppi++", tuned, 1 + inside)):
        d = lam[:, None] * fs - ys
        est = lam * f.mean() - d.mean(axis=1)
        ok = n > ddof
        var = np.where(
            ok, fpc * ((d - d.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) / np.maximum(n - ddof, 1) / n, np.nan
        )
        q = np.array([float(stats.t.ppf(0.975, n - k)) if n > k else math.inf for k in ddof])
        cover = np.where(ok, np.abs(est - mu) <= q * np.sqrt(np.where(ok, var, 0)), True)
        both = var_h > 0
        # The ratio of the interval widths (the quantiles differ for PPI++: n - 2 against n - 1).
        ratio = q[both] * np.sqrt(var[both]) / (q_h * np.sqrt(var_h[both]))
        # The first draw, through the library's own estimator: the vectorised arithmetic must agree with it.
        check = ppi_mean(f, fs[0], ys[0], lam=None if key == "ppi++" else 1.0)
        if not (
            math.isclose(check.estimate, est[0], abs_tol=1e-9)
            and (
                math.isclose(check.variance, var[0], abs_tol=1e-9) or (math.isnan(check.variance) and np.isnan(var[0]))
            )
        ):
            raise AssertionError(f"the vectorised {key} estimator disagrees with goldenset.bench.ppi.ppi_mean")
        out[key] = {
            "coverage": float(cover.mean()),
            "width_ratio": float(ratio.mean()) if ratio.size and np.isfinite(ratio).all() else None,
            "ess_gain": float(var_h.mean() / var.mean()) if var.mean() > 0 else None,
        }
    return out


def run(args: argparse.Namespace) -> dict:
    started = time.monotonic()
    collection = cc.read_collection(Path(args.collection))
    cosine = study.dense_scores(collection)
    top_bm25, top_dense = study.top(study.bm25_scores(collection), args.depth), study.top(cosine, args.depth)
    rel = study.truth_matrix(collection)
    n_q, n_d = rel.shape
    pooled = study.pooled(rel.shape, top_bm25, top_dense)
    truth = np.where(pooled, rel, 0)
    prevalence = float(truth[pooled].mean())
    rng = np.random.default_rng(args.seed)

    judges: dict[str, np.ndarray] = {}
    for target in args.kappas:
        acc = study.accuracy_for_kappa(prevalence, target)
        flip = rng.random(truth.shape) >= acc
        judges[f"simulated kappa {target:g}"] = np.where(pooled, truth ^ flip, 0)
    cut = study.calibrated_cut(cosine[pooled], truth[pooled])
    judges["dense score >= calibrated cut"] = np.where(pooled, (cosine >= cut).astype(np.int8), 0)

    y_a, y_b = study.ndcg(top_bm25, truth), study.ndcg(top_dense, truth)
    sizes = [n for n in args.sizes if 2 <= n < n_q] or [max(2, n_q - 1)]
    draws = {n: np.argsort(rng.random((args.samples, n_q)), axis=1)[:, :n] for n in sizes}
    results = []
    for name, labels in judges.items():
        f_a, f_b = study.ndcg(top_bm25, labels), study.ndcg(top_dense, labels)
        k = study.kappa(labels[pooled], truth[pooled])
        for n in sizes:
            results.append(
                {
                    "judge": name,
                    "kappa": k,
                    "n": n,
                    "mean": audits(f_b, y_b, n, draws[n]),
                    "difference": audits(f_b - f_a, y_b - y_a, n, draws[n]),
                }
            )
    return {
        "collection": str(args.collection),
        "queries": n_q,
        "documents": n_d,
        "depth": args.depth,
        "metric": f"ndcg@{args.depth} (binary gains), dense; difference dense - bm25",
        "pooled_pairs": int(pooled.sum()),
        "pooled_relevant_share": prevalence,
        "dense_cut": cut,
        "samples": args.samples,
        "seed": args.seed,
        "true_means": {"bm25": float(y_a.mean()), "dense": float(y_b.mean())},
        "results": results,
        "seconds": round(time.monotonic() - started, 1),
    }


def markdown(out: dict) -> str:
    lines = [
        f"{out['queries']} queries, {out['documents']} documents, pool depth {out['depth']} "
        f"({out['pooled_pairs']} pooled pairs, {study.pct(out['pooled_relevant_share'], 1)} relevant); "
        f"{out['samples']} audits per row, seed {out['seed']}; metric {out['metric']}. Coverage of the "
        "95% intervals; width: the PPI interval's width over the human-only one's on the same audit; ESS "
        "gain: mean human-only variance / mean PPI variance; rho: the correlation of the judge's per-query "
        "metric with the truth's over all queries; floor: sqrt(1 - rho^2), the width of the best fixed "
        "lambda (known only to the simulation) for large audits. PPI++: lambda fitted on the audit, n - 2 "
        "degrees of freedom.",
        "",
    ]
    for part, title in (("mean", "Mean of the dense ranker"), ("difference", "Paired difference dense - BM25")):
        lines += [
            f"**{title}**",
            "",
            "| judge | kappa | rho | floor | n | coverage human | coverage PPI | width PPI | ESS gain PPI "
            "| coverage PPI++ | width PPI++ | ESS gain PPI++ |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in out["results"]:
            m = r[part]
            a, b = m["ppi"], m["ppi++"]
            lines.append(
                f"| {r['judge']} | {r['kappa']:.2f} | {study.fmt(m['correlation'], 2)} | {study.fmt(m['width_bound'], 2)} "
                f"| {r['n']} | {study.pct(m['coverage_human'], 1)} "
                f"| {study.pct(a['coverage'], 1)} | {study.fmt(a['width_ratio'], 2)} | {study.fmt(a['ess_gain'], 2)} "
                f"| {study.pct(b['coverage'], 1)} | {study.fmt(b['width_ratio'], 2)} | {study.fmt(b['ess_gain'], 2)} |"
            )
        lines.append("")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--collection", default=str(DEFAULT_COLLECTION), help="folder of cran.all.1400, cran.qry, cranqrel")
    p.add_argument("--samples", type=int, default=1000, help="audits drawn per judge and size")
    p.add_argument("--sizes", default="20,40,80", help="audit sizes, comma-separated")
    p.add_argument("--kappas", default="0.3,0.5,0.7", help="target kappas of the simulated judges")
    p.add_argument("--depth", type=int, default=10, help="pool depth per ranker, and the k of nDCG@k")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="write the JSON here")
    p.add_argument("--markdown", type=Path, help="write the table here")
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.kappas = [float(s) for s in args.kappas.split(",")]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = run(args)
    text = json.dumps(out, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    table = markdown(out)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(table, encoding="utf-8")
    print(table, end="")
    print(f"({out['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
