"""Validity and width of prediction-powered estimates, shown by simulation on Cranfield's real judgments.

    python benchmarks/ppi_simulation.py [--collection DIR] [--samples 1000] [--sizes 20,40,80] \
        [--kappas 0.3,0.5,0.7] [--depth 10] [--seed 0] [--out FILE.json] [--markdown FILE.md]

DIR holds cran.all.1400, cran.qry and cranqrel (default: tests/data/cranfield-mini, the
fresh-clone smoke size; the full collection gives the tables in docs/concepts/estimates.md).

What it does, in order:

1. Two rankers over the 1,400 abstracts (title + abstract): BM25 (bm25s, the benchmark's
   lexical settings) and dense (the packaged MiniLM, cosine). The pool is the union of
   their top `depth` documents per query; the **truth** of a pooled pair is Cranfield's
   judgment (codes 1-4 relevant, anything else not), as a human audit would record it.
2. Judges label every pooled pair: simulated judges with a symmetric confusion matrix
   (the same accuracy on relevant and irrelevant pairs) whose accuracy is solved so that
   Cohen's kappa against the truth is the target (0.3, 0.5, 0.7), and one **wrong on 30%
   of the pairs** (accuracy 0.7, the issue's case), each drawn once with the seed; and two
   real judges, a score cut at its calibrated threshold (the cut minimising the false-pass
   rate plus the false-fail rate over the pooled pairs: contract 8.2's `single` with R =
   relevant / irrelevant pairs; ties to the higher cut): the **dense judge** (the packaged
   model's cosine) and the **BM25 judge** (BM25's score).
3. Per query: nDCG@depth (binary gains) of each ranker under the truth (y) and under the
   judge's labels (f); the population is every query, its true mean the mean of y. The
   paired difference is dense - BM25.
4. **Uniform audits.** For each judge and audit size n: `--samples` audits, each a uniform
   draw of n queries without replacement; on each, the human-only interval, classical PPI
   (lambda 1) and PPI++ (lambda tuned, the default of `bench run`), as goldenset.bench.ppi
   computes them in the finite design (contract 12.2), vectorised with numpy; the first
   draw of each setting is checked against goldenset.bench.ppi.ppi_mean itself. Reported:
   coverage of the true mean (of the mean, and of the paired difference), the mean ratio of
   each interval's width to the human-only width on the same audit (before clamping into the
   metric's range), its largest value over the audits, and the effective sample size gain
   (mean human-only variance / mean variance).
5. **Active audits at the same budget.** For each judge and n: the active design of
   contract 12.1 (goldenset.labelling.active_audit: the judge's uncertainty u(q) over the
   query's pooled pairs, inclusion probabilities summing to n, Poisson draws), `--samples`
   draws, PPI++ with inverse-probability weights (contract 12.2). The judge's per-grade rates
   are taken from every pooled pair (the rates a long labelling history would give: the
   best case for the rule). Reported: its coverage, the mean number of queries drawn, and
   the ratio of the uniform audit's PPI++ mean squared error to the active one's (the
   effective sample size ratio at equal expected budget), with the same ratio of mean
   estimated variances; and the **ceiling**: the variance ratio of an oracle design whose
   probabilities follow each query's actual residual |e(q)| (known only to the simulation),
   which no uncertainty measure can beat.
6. Per judge, over all queries: the correlation rho of prediction and truth, and
   sqrt(1 - rho^2), the width ratio of the best fixed lambda for large audits.
7. **The width tolerance.** PPI++ with a lambda inside (0, 1) has the residual variance of a
   least-squares fit, never above the truth's own, on n - 2 degrees of freedom; at the clip
   it is classical PPI with a vertex beyond 1 (variance below the human-only one) or the
   human-only interval itself. So its width is at most sqrt((n - 1)/(n - 2)) t_{n-2}/t_{n-1}
   times the human-only width on the same audit, whatever the judge: 1.031 at n = 20, 1.014
   at 40, 1.007 at 80. The simulation reports the largest ratio it saw beside that bound.

Sizes at or above the number of queries are skipped (the mini collection has 4).
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import cranfield_study as study  # noqa: E402

from goldenset.bench.ppi import ppi_mean  # noqa: E402
from goldenset.labelling.active_audit import JudgeRates, inclusion_probabilities, uncertainty  # noqa: E402

DEFAULT_COLLECTION = HERE.parent / "tests" / "data" / "cranfield-mini"
WRONG_30 = "simulated, wrong on 30% of pairs"


@functools.cache
def t975(df: int) -> float:
    """Student's t quantile at 0.975 (cached: the audits ask for few distinct degrees of freedom)."""
    return float(stats.t.ppf(0.975, df)) if df > 0 else math.inf


def width_bound(n: int) -> float:
    """The largest PPI++ / human-only width ratio on one uniform audit of n (module, point 7)."""
    return math.sqrt((n - 1) / (n - 2)) * float(stats.t.ppf(0.975, n - 2) / stats.t.ppf(0.975, n - 1))


# --------------------------------------------------------------------------- uniform audits


def _tuned(fs: np.ndarray, ys: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Per draw: the (weighted) least-squares slope of y on f, clipped to [0, 1]; 0 when f does not vary."""
    w = np.ones_like(fs) if w is None else w
    total = w.sum(axis=1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    fc = fs - (w * fs).sum(axis=1, keepdims=True) / safe
    yc = ys - (w * ys).sum(axis=1, keepdims=True) / safe
    den = (w * fc * fc).sum(axis=1)
    slope = np.divide((w * fc * yc).sum(axis=1), den, out=np.zeros(len(fs)), where=den > 0)
    return np.clip(slope, 0.0, 1.0)


def audits(f: np.ndarray, y: np.ndarray, n: int, draws: np.ndarray, bounds: tuple[float, float]) -> dict:
    """Coverage, width ratios and effective sample size gain of PPI, PPI++ and human-only over uniform draws."""
    big_n = len(f)
    mu = float(y.mean())
    fs, ys = f[draws], y[draws]
    fpc = 1 - n / big_n
    q_h = float(stats.t.ppf(0.975, n - 1))
    var_h = fpc * ys.var(axis=1, ddof=1) / n
    half_h = q_h * np.sqrt(var_h)
    human = ys.mean(axis=1)
    cover_h = np.abs(human - mu) <= half_h
    tuned = _tuned(fs, ys)
    rho = float(np.corrcoef(f, y)[0, 1]) if f.std() > 0 and y.std() > 0 else None
    out: dict = {
        "true_mean": mu,
        "coverage_human": float(cover_h.mean()),
        "correlation": rho,
        "width_bound": math.sqrt(1 - rho**2) if rho is not None else None,
    }
    # Inside (0, 1) the fitted lambda costs a degree of freedom; at the clip the interval is the fixed lambda's.
    inside = (tuned > 0) & (tuned < 1)
    for key, lam, k in (("ppi", np.ones(len(draws)), np.ones(len(draws), int)), ("ppi++", tuned, 1 + inside)):
        d = lam[:, None] * fs - ys
        est = lam * f.mean() - d.mean(axis=1)
        ok = n > k
        var = np.where(
            ok, fpc * ((d - d.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) / np.maximum(n - k, 1) / n, np.nan
        )
        q = np.array([t975(int(n - j)) for j in k])
        half = q * np.sqrt(np.where(ok, var, 0))
        cover = np.where(ok, np.abs(est - mu) <= half, True)
        both = (var_h > 0) & ok
        # The ratio of the interval widths before clamping (the quantiles differ for PPI++ inside the clip) ...
        ratio = half[both] / half_h[both]
        # ... and after clamping both into the metric's range, as the commands print them.
        lo, hi = np.clip(est - half, *bounds), np.clip(est + half, *bounds)
        lo_h, hi_h = np.clip(human - half_h, *bounds), np.clip(human + half_h, *bounds)
        shown = (hi - lo)[both] / np.maximum((hi_h - lo_h)[both], 1e-300)
        _check_first_draw(key, f, fs[0], ys[0], est[0], var[0])
        out[key] = {
            "coverage": float(cover.mean()),
            "width_ratio": float(ratio.mean()) if ratio.size and np.isfinite(ratio).all() else None,
            "width_ratio_max": float(ratio.max()) if ratio.size and np.isfinite(ratio).all() else None,
            "clamped_width_ratio_max": float(shown.max()) if shown.size else None,
            "ess_gain": float(var_h.mean() / var.mean()) if var.mean() > 0 else None,
            "mse": float(np.mean((est - mu) ** 2)),
            "mean_variance": float(np.nanmean(var)),
            "lambda_mean": float(lam.mean()),
        }
    out["human_mse"] = float(np.mean((human - mu) ** 2))
    return out


def _check_first_draw(key: str, f, f_s, y_s, est: float, var: float) -> None:
    """The vectorised arithmetic must agree with goldenset.bench.ppi.ppi_mean on the first draw."""
    check = ppi_mean(f, f_s, y_s, lam=None if key == "ppi++" else 1.0)
    same_var = math.isclose(check.variance, var, abs_tol=1e-9) or (math.isnan(check.variance) and math.isnan(var))
    if not (math.isclose(check.estimate, est, abs_tol=1e-9) and same_var):
        raise AssertionError(f"the vectorised {key} estimator disagrees with goldenset.bench.ppi.ppi_mean")


# --------------------------------------------------------------------------- active audits


def judge_uncertainty(labels: np.ndarray, truth: np.ndarray, pooled: np.ndarray) -> np.ndarray:
    """u(q) of goldenset.labelling.active_audit for a judge whose grade on each pooled pair is its label (0 or 1),
    with per-grade rates from every pooled pair (the best case: a long history of pairs people labelled too)."""
    q_idx, d_idx = np.nonzero(pooled)
    grades = {(str(q), str(d)): int(labels[q, d]) for q, d in zip(q_idx, d_idx, strict=True)}
    shared = {g: (int((labels[pooled] == g).sum()), int(truth[pooled][labels[pooled] == g].sum())) for g in (0, 1)}
    queries = [str(q) for q in range(pooled.shape[0])]
    u = uncertainty(queries, grades, {str(d): "1" for d in set(d_idx)}, set(), JudgeRates("sim", shared), grades)
    return np.array([u[q] for q in queries])


def _active_estimates(f, mask, ys_full, pi, lam_fixed: float | None):
    """Per Poisson draw (rows of `mask`): the regression estimator with inverse-probability weights and its
    g-weighted variance (contract 12.2), and the degrees of freedom, vectorised."""
    big_n = len(f)
    n = mask.sum(axis=1)
    w = np.where(mask, (1 - pi) / pi**2, 0.0)
    q = np.where(mask, (1 - pi) / pi, 0.0)
    fs = np.where(mask, f, 0.0)
    ys = np.where(mask, ys_full, 0.0)
    if lam_fixed is None:
        lam = np.where(n >= 2, _tuned(fs, ys, w), 1.0)
        k = np.where((lam > 0) & (lam < 1), 2, 1)
    else:
        lam, k = np.full(len(mask), lam_fixed), np.ones(len(mask), int)
    total = w.sum(axis=1)
    r = ys - lam[:, None] * fs
    c = np.divide((w * r).sum(axis=1), total, out=np.zeros(len(mask)), where=total > 0)
    e = np.where(mask, r - c[:, None], 0.0)
    est = lam * f.mean() + c + (e / pi).sum(axis=1) / big_n
    g = _g_factors(f, fs, mask, pi, w, q, k)
    ok = n > k
    var = np.where(ok, n / np.maximum(n - k, 1) * (w * (g * e) ** 2).sum(axis=1) / big_n**2, np.nan)
    return est, var, n - k


def _g_factors(f, fs, mask, pi, w, q, k) -> np.ndarray:
    """goldenset.bench.ppi._g_factors per draw: x = (1, p) for k = 2, x = 1 for k = 1 (2 x 2 solved in closed form)."""
    gap0 = len(f) - np.where(mask, 1 / pi, 0.0).sum(axis=1)
    gap1 = f.sum() - np.where(mask, f / pi, 0.0).sum(axis=1)
    s0, s1, s2 = w.sum(axis=1), (w * fs).sum(axis=1), (w * fs * fs).sum(axis=1)
    one = np.divide(gap0, s0, out=np.zeros_like(s0), where=s0 > 0)
    det = s0 * s2 - s1 * s1
    a = np.divide(s2 * gap0 - s1 * gap1, det, out=np.zeros_like(det), where=det > 0)
    b = np.divide(s0 * gap1 - s1 * gap0, det, out=np.zeros_like(det), where=det > 0)
    two = a[:, None] + b[:, None] * fs
    return 1.0 + np.where((k == 2)[:, None], two, one[:, None]) * q


def active_audits(f: np.ndarray, y: np.ndarray, u: np.ndarray, n: int, numbers: np.ndarray) -> dict:
    """Coverage, drawn sizes and error of PPI++ over active draws (`numbers`: samples x N uniform numbers)."""
    mu = float(y.mean())
    pi = inclusion_probabilities(u, n)
    mask = numbers < pi
    est, var, df = _active_estimates(f, mask, y, pi, None)
    q = np.array([t975(int(d)) for d in df])
    ok = np.isfinite(var)
    cover = np.where(ok, np.abs(est - mu) <= q * np.sqrt(np.where(ok, var, 0)), True)
    first = np.flatnonzero(mask[0])
    check = ppi_mean(f, f[first], y[first], inclusion=pi[first])
    same_var = math.isclose(check.variance, var[0], rel_tol=1e-9) or (math.isnan(check.variance) and np.isnan(var[0]))
    if not (math.isclose(check.estimate, est[0], abs_tol=1e-9) and same_var):
        raise AssertionError("the vectorised active estimator disagrees with goldenset.bench.ppi.ppi_mean")
    return {
        "coverage": float(cover.mean()),
        "drawn_mean": float(mask.sum(axis=1).mean()),
        "mse": float(np.mean((est - mu) ** 2)),
        "mean_variance": float(np.nanmean(var)),
        "pi_min": float(pi.min()),
        "pi_max": float(pi.max()),
    }


def residual(f: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each query's residual t - lambda p - c at the population's PPI++ fit (known only to the simulation)."""
    lam = float(_tuned(f[None, :], y[None, :])[0])
    return y - lam * f - float((y - lam * f).mean())


def uncertainty_correlation(u: np.ndarray, f: np.ndarray, y: np.ndarray) -> float | None:
    """How well the judge's uncertainty u(q) predicts the size of each query's residual: corr(u, |e|)."""
    e = np.abs(residual(f, y))
    return float(np.corrcoef(u, e)[0, 1]) if u.std() > 0 and e.std() > 0 else None


def oracle_ceiling(f: np.ndarray, y: np.ndarray, n: int) -> float | None:
    """Uniform PPI++'s design variance over that of Poisson sampling with pi following |e(q)| (population fit)."""
    big_n = len(f)
    e = residual(f, y)
    if not e.any():
        return None
    uniform = (1 - n / big_n) * float(e.var(ddof=1)) / n
    pi = inclusion_probabilities(np.abs(e), n)
    active = float(np.sum((1 - pi) / pi * e * e)) / big_n**2
    return uniform / active if active > 0 else None


# --------------------------------------------------------------------------- the study


def judges_of(args, truth: np.ndarray, pooled: np.ndarray, scores: dict[str, np.ndarray], rng) -> dict:
    """Every judge's labels on the pooled pairs, and the real judges' cuts."""
    prevalence = float(truth[pooled].mean())
    judges: dict[str, np.ndarray] = {}
    accuracies = [(f"simulated kappa {t:g}", study.accuracy_for_kappa(prevalence, t)) for t in args.kappas]
    for name, acc in [*accuracies, (WRONG_30, 0.7)]:
        flip = rng.random(truth.shape) >= acc
        judges[name] = np.where(pooled, truth ^ flip, 0)
    cuts = {}
    for name, score in scores.items():
        cuts[name] = study.calibrated_cut(score[pooled], truth[pooled])
        judges[f"{name} score >= calibrated cut"] = np.where(pooled, (score >= cuts[name]).astype(np.int8), 0)
    return {"labels": judges, "cuts": cuts}


def run(args: argparse.Namespace) -> dict:
    started = time.monotonic()
    collection, bm25, cosine, top_bm25, top_dense, rel, pooled, truth = study.two_rankers(
        Path(args.collection), args.depth
    )
    n_q, n_d = rel.shape
    rng = np.random.default_rng(args.seed)
    judged = judges_of(args, truth, pooled, {"dense": cosine, "bm25": bm25}, rng)

    y_a, y_b = study.ndcg(top_bm25, truth), study.ndcg(top_dense, truth)
    sizes = [n for n in args.sizes if 2 <= n < n_q] or [max(2, n_q - 1)]
    draws = {n: np.argsort(rng.random((args.samples, n_q)), axis=1)[:, :n] for n in sizes}
    numbers = rng.random((args.samples, n_q))  # the active draws' uniform numbers, shared by every setting
    results = []
    for name, labels in judged["labels"].items():
        f_a, f_b = study.ndcg(top_bm25, labels), study.ndcg(top_dense, labels)
        u = judge_uncertainty(labels, truth, pooled)
        for n in sizes:
            row: dict = {"judge": name, "kappa": study.kappa(labels[pooled], truth[pooled]), "n": n}
            for part, f, y, bounds in (
                ("mean", f_b, y_b, (0.0, 1.0)),
                ("difference", f_b - f_a, y_b - y_a, (-1.0, 1.0)),
            ):
                row[part] = audits(f, y, n, draws[n], bounds)
                row[part]["active"] = active_audits(f, y, u, n, numbers) | {
                    "ceiling": oracle_ceiling(f, y, n),
                    "uncertainty_correlation": uncertainty_correlation(u, f, y),
                }
            results.append(row)
    return {
        "collection": str(args.collection),
        "queries": n_q,
        "documents": n_d,
        "depth": args.depth,
        "metric": f"ndcg@{args.depth} (binary gains), dense; difference dense - bm25",
        "pooled_pairs": int(pooled.sum()),
        "pooled_relevant_share": float(truth[pooled].mean()),
        "cuts": judged["cuts"],
        "samples": args.samples,
        "seed": args.seed,
        "true_means": {"bm25": float(y_a.mean()), "dense": float(y_b.mean())},
        "width_bounds": {str(n): width_bound(n) for n in sizes if n > 2},
        "results": results,
        "seconds": round(time.monotonic() - started, 1),
    }


# --------------------------------------------------------------------------- the report

PARTS = (("mean", "Mean of the dense ranker"), ("difference", "Paired difference dense - BM25"))


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def markdown(out: dict) -> str:
    f, p = study.fmt, study.pct
    lines = [
        f"{out['queries']} queries, {out['documents']} documents, pool depth {out['depth']} "
        f"({out['pooled_pairs']} pooled pairs, {p(out['pooled_relevant_share'], 1)} relevant); "
        f"{out['samples']} audits per row, seed {out['seed']}; metric {out['metric']}. Coverage of the 95% "
        "intervals; width: the interval's width over the human-only one's on the same audit, averaged over the "
        "audits (before clamping); ESS gain: mean human-only variance / mean variance; rho: the correlation of "
        "the judge's per-query metric with the truth's over all queries; floor: sqrt(1 - rho^2). PPI: lambda 1; "
        "PPI++: lambda tuned on the audit (the default).",
        "",
    ]
    for part, title in PARTS:
        lines += [f"**Uniform audits: {title.lower()}**", ""]
        rows = []
        for r in out["results"]:
            m = r[part]
            a, b = m["ppi"], m["ppi++"]
            rows.append(
                [r["judge"], f(r["kappa"], 2), f(m["correlation"], 2), f(m["width_bound"], 2), str(r["n"])]
                + [p(m["coverage_human"], 1), p(a["coverage"], 1), f(a["width_ratio"], 2), f(a["ess_gain"], 2)]
                + [p(b["coverage"], 1), f(b["width_ratio"], 2), f(b["width_ratio_max"], 3), f(b["ess_gain"], 2)]
            )
        header = ["judge", "kappa", "rho", "floor", "n", "coverage human", "coverage PPI", "width PPI"]
        header += ["ESS gain PPI", "coverage PPI++", "width PPI++", "widest PPI++", "ESS gain PPI++"]
        lines += study.table(header, rows) + [""]
    lines += [
        "**Active against uniform audits at the same expected budget (PPI++)**: ESS ratio = the uniform audit's "
        "mean squared error / the active one's over the draws (by mean estimated variance in brackets); ceiling: "
        "the same ratio for probabilities that follow each query's actual residual, which only the simulation "
        "knows; corr(u, abs e): the correlation of the judge's uncertainty u(q) with the size of that residual.",
        "",
    ]
    rows = []
    for r in out["results"]:
        for part, _ in PARTS:
            m = r[part]
            act = m["active"]
            rows.append(
                [r["judge"], part, str(r["n"]), f(act["drawn_mean"], 1), p(act["coverage"], 1)]
                + [
                    f(_ratio(m["ppi++"]["mse"], act["mse"]), 2),
                    f(_ratio(m["ppi++"]["mean_variance"], act["mean_variance"]), 2),
                ]
                + [f(act["ceiling"], 2), f(act["uncertainty_correlation"], 2)]
            )
    header = ["judge", "part", "n", "drawn (mean)", "coverage active", "ESS ratio", "(by variance)", "ceiling"]
    lines += study.table([*header, "corr(u, abs e)"], rows)
    lines += ["", _tolerance_lines(out)]
    return "\n".join(lines) + "\n"


def _tolerance_lines(out: dict) -> str:
    bounds = out["width_bounds"]
    rows = [
        (r["n"], part, r[part]["ppi++"]["width_ratio_max"], r[part]["ppi++"]["clamped_width_ratio_max"])
        for r in out["results"]
        if r["judge"] == WRONG_30
        for part, _ in PARTS
    ]
    if not rows:
        return ""
    parts = "; ".join(
        f"n = {n} {part}: widest {study.fmt(w, 4)} (bound {study.fmt(bounds.get(str(n)), 4)}; clamped {study.fmt(c, 4)})"
        for n, part, w, c in rows
    )
    return f"**Width tolerance, judge {WRONG_30}** (PPI++ / human-only on the same audit, largest over the audits): {parts}."


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--collection", default=str(DEFAULT_COLLECTION), help="folder of cran.all.1400, cran.qry, cranqrel")
    p.add_argument("--samples", type=int, default=1000, help="audits drawn per judge and size")
    p.add_argument("--sizes", default="20,40,80", help="audit sizes, comma-separated")
    p.add_argument("--kappas", default="0.3,0.5,0.7", help="target kappas of the simulated judges")
    p.add_argument("--depth", type=int, default=10, help="pool depth per ranker, and the k of nDCG@k")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="write the JSON here")
    p.add_argument("--markdown", type=Path, help="write the tables here")
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.kappas = [float(s) for s in args.kappas.split(",")]
    return args


def main(argv: list[str] | None = None) -> int:
    return study.simulation_main(parse_args(argv), run, markdown)


if __name__ == "__main__":
    sys.exit(main())
