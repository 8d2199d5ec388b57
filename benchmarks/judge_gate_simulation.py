"""The judge's gate on Cranfield's real judgments: the audit's lower bound against the latest-window rule.

    python benchmarks/judge_gate_simulation.py [--collection DIR] [--samples 1000] [--size 40] \
        [--deltas=-0.15,-0.1,-0.05,-0.025,0.025,0.05,0.1,0.15] [--window 200] [--depth 10] \
        [--resamples 2000] [--seed 0] [--part both|uniform|active] [--out FILE.json] [--markdown FILE.md]

DIR holds cran.all.1400, cran.qry and cranqrel (default: tests/data/cranfield-mini, the
fresh-clone smoke size; the full collection gives the table in docs/concepts/estimates.md).

What it does, in order:

1. The pool of `ppi_simulation.py`, from `cranfield_study`: BM25 and the packaged MiniLM's
   cosine over the 1,400 abstracts, the union of their top `depth` documents per query. The
   **human label** of a pooled pair is Cranfield's judgment, on the two labels relevant (codes
   1-4) and not relevant, as a person labelling the audit would record it.
2. Two **real imperfect judges** label every pooled pair: the dense cosine and the BM25 score,
   each cut at its calibrated threshold (`cranfield_study.calibrated_cut`: the cut minimising
   the false-pass rate plus the false-fail rate over the pooled pairs). A judge's **true
   kappa** is its Cohen's kappa against the human labels over every pooled pair of every query.
3. The **minimum kappa** is put on either side of each judge's true kappa: min = true kappa +
   delta for each `--deltas` value. With delta > 0 the judge is below the minimum, and every
   admission is a false admission; with delta < 0 it is above, and every hold-back is a false
   hold-back. (The judges are not degraded: the minimum moves.)
4. `--samples` audits per judge, each a uniform draw of `--size` queries without replacement;
   people label every pooled pair of a drawn query. On each audit, three rules decide, all with
   min pairs 50:
   - **audit gate** (contract 13.2): the library's own figures
     (`goldenset.labelling.judge_agreement.judge_agreement`: kappa's percentile bootstrap over the
     audit's queries, B = `--resamples`, seed 0, as the build runs it) and decision
     (`goldenset.labelling.judge_gate.admits`: the lower bound >= min);
   - **audit point kappa**: kappa on the audit's pairs >= min (the audit without the interval);
   - **window rule** (contract 13.2 before v5): the judge answers the labelling queue in its
     priority order (contract 7.4: best rank ascending, more rankers first, then query and
     document), so its latest `--window` labels shared with people are the audit's last
     `--window` pairs in that order; kappa on them >= min.
   Reported per judge and delta: how often each rule admits; the false-admission rate (delta >
   0) or the false-hold-back rate (delta < 0); and per judge the mean kappa each rule measured.

5. **Active audits** (`--part active` or `both`): per judge, `--samples` active audits of
   expected size `--size` drawn by that judge's own uncertainty (contract 12.1:
   goldenset.labelling.active_audit's inclusion probabilities from u(q), Poisson draws; the
   judge's per-grade rates from every pooled pair, as ppi_simulation.py takes them). On each,
   the gate's figures as the build computes them now, each query weighted by the design that
   drew it (contract 13.2: `goldenset.labelling.judge_gate.query_weights`, then
   `judge_agreement` with those weights), and as it computed them before (unweighted, the
   drawn queries read as a uniform audit's). Reported per judge: the mean kappa and relevant
   share each way against the true ones, the mean error of kappa with 1.96 standard errors of
   that mean (an error beyond them is a bias, not the repetitions' noise), the root mean
   squared error, how often the 95% interval holds the true kappa, the mean lower bound, and
   each way's error rate at every minimum of step 3.

Sizes at or above the number of queries are cut to one less (the mini collection has 4).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import cranfield_collection as cc  # noqa: E402
import cranfield_study as study  # noqa: E402
from ppi_simulation import judge_uncertainty  # noqa: E402

from goldenset.labelling.active_audit import inclusion_probabilities  # noqa: E402
from goldenset.labelling.audit import ACTIVE  # noqa: E402
from goldenset.labelling.judge_agreement import judge_agreement  # noqa: E402
from goldenset.labelling.judge_gate import JudgeGate, admits, query_weights  # noqa: E402

DEFAULT_COLLECTION = HERE.parent / "tests" / "data" / "cranfield-mini"
MIN_PAIRS = JudgeGate().min_pairs
RULES = ("audit gate", "audit point kappa", "window rule")
ACTIVE_RULES = ("weighted gate", "unweighted gate")


# --------------------------------------------------------------------------- the pool, the judges, the queue


def queue_order(top_bm25: np.ndarray, top_dense: np.ndarray, pooled: np.ndarray, query_ids: list[str]) -> list:
    """The pooled pairs (query index, document index) in the labelling queue's priority order (contract 7.4)."""
    n_q, n_d = pooled.shape
    best = np.full((n_q, n_d), np.iinfo(np.int32).max)
    rankers = np.zeros((n_q, n_d), dtype=int)
    rows = np.arange(n_q)[:, None]
    ranks = np.arange(1, top_bm25.shape[1] + 1)[None, :]
    for t in (top_bm25, top_dense):
        best[rows, t] = np.minimum(best[rows, t], np.broadcast_to(ranks, t.shape))
        rankers[rows, t] += 1
    pairs = list(zip(*np.nonzero(pooled), strict=True))
    return sorted(pairs, key=lambda p: (best[p], -rankers[p], query_ids[p[0]], cc.doc_id(p[1] + 1)))


def calibrated_judge(scores: np.ndarray, truth: np.ndarray, pooled: np.ndarray) -> tuple[np.ndarray, float]:
    """A real score cut at its calibrated threshold (cranfield_study.calibrated_cut) over the pooled pairs."""
    cut = study.calibrated_cut(scores[pooled], truth[pooled])
    return np.where(pooled, (scores >= cut).astype(np.int8), 0), cut


# --------------------------------------------------------------------------- the audits


def measure(judge: np.ndarray, truth: np.ndarray, queue: list, draws: np.ndarray, args) -> dict:
    """Per audit: the gate's lower bound, the audit's kappa and the window's kappa (and their n)."""
    position = {p: i for i, p in enumerate(queue)}
    by_query: dict[int, list] = {}
    for p in queue:
        by_query.setdefault(int(p[0]), []).append(p)
    out: dict[str, list] = {"lower": [], "audit_kappa": [], "audit_n": [], "window_kappa": [], "window_n": []}
    for draw in draws:
        pairs = [p for q in draw for p in by_query.get(int(q), [])]
        rows = [(f"{p[0]:04d}", int(judge[p]), int(truth[p]), bool(truth[p])) for p in pairs]
        a = judge_agreement(rows, args.resamples, 0)
        out["lower"].append(a.kappa_lo)
        out["audit_kappa"].append(None if a.kappa is None else float(a.kappa))
        out["audit_n"].append(a.n)
        window = sorted(pairs, key=position.__getitem__)[-args.window :]
        w = study.kappa(np.array([judge[p] for p in window]), np.array([truth[p] for p in window]))
        out["window_kappa"].append(None if np.isnan(w) else w)
        out["window_n"].append(len(window))
    return out


def measure_active(judge: np.ndarray, truth: np.ndarray, pooled: np.ndarray, pi: np.ndarray, mask: np.ndarray, args):
    """Per active audit (rows of `mask`: the queries drawn with chances `pi`): the gate's figures weighted (13.2)
    and unweighted."""
    n_q = pooled.shape[0]
    names = [f"{q:04d}" for q in range(n_q)]
    # The build's own weights: one active audit of expected size `size` over the n_q queries.
    weight = query_weights((names[q], ACTIVE, args.size, n_q, float(pi[q]), 1) for q in range(n_q))
    rows_of = {
        q: [(names[q], int(judge[q, d]), int(truth[q, d]), bool(truth[q, d])) for d in np.flatnonzero(pooled[q])]
        for q in range(n_q)
    }
    out: dict[str, list] = {k: [] for k in ("drawn", "n", *(f"{r} {x}" for r in ACTIVE_RULES for x in FIGURES))}
    for drawn in mask:
        queries = np.flatnonzero(drawn)
        rows = [r for q in queries for r in rows_of[int(q)]]
        out["drawn"].append(len(queries))
        out["n"].append(len(rows))
        for rule, weights in (
            ("weighted gate", {names[q]: weight[names[q]] for q in queries}),
            ("unweighted gate", None),
        ):
            a = judge_agreement(rows, args.resamples, 0, weights=weights)
            for x, value in zip(FIGURES, (a.kappa, a.kappa_lo, a.kappa_hi, a.prevalence), strict=True):
                out[f"{rule} {x}"].append(None if value is None else float(value))
    return {**out, "pi_min": float(pi.min()), "pi_max": float(pi.max())}


FIGURES = ("kappa", "lower", "upper", "prevalence")


def active_summary(m: dict, true_kappa: float, deltas: list[float]) -> dict:
    """Means, error of kappa, and each rule's error rate at each minimum, over the active audits."""
    rows = []
    for delta in deltas:
        gate = JudgeGate(min_pairs=MIN_PAIRS, min_kappa=round(true_kappa + delta, 4))
        side = "below" if delta > 0 else "above"
        admitted = {
            r: float(np.mean([admits(n, lo, gate) for n, lo in zip(m["n"], m[f"{r} lower"], strict=True)]))
            for r in ACTIVE_RULES
        }
        errors = {r: admitted[r] if side == "below" else 1 - admitted[r] for r in ACTIVE_RULES}
        rows.append(
            {"delta": delta, "min_kappa": gate.min_kappa, "judge_is": side, "admitted": admitted, "error": errors}
        )
    kappas = {r: [k for k in m[f"{r} kappa"] if k is not None] for r in ACTIVE_RULES}
    return {
        "drawn_mean": float(np.mean(m["drawn"])),
        "pairs_mean": float(np.mean(m["n"])),
        "pi_min": m["pi_min"],
        "pi_max": m["pi_max"],
        "mean_kappa": {r: _mean(m[f"{r} kappa"]) for r in ACTIVE_RULES},
        "mean_error_kappa": {r: float(np.mean(kappas[r]) - true_kappa) for r in ACTIVE_RULES},
        # The mean's own standard error over the repetitions: an error beyond 1.96 of it is a bias, not noise.
        "se_mean_kappa": {r: float(np.std(kappas[r], ddof=1) / np.sqrt(len(kappas[r]))) for r in ACTIVE_RULES},
        "coverage": {r: _coverage(m[f"{r} lower"], m[f"{r} upper"], true_kappa) for r in ACTIVE_RULES},
        "rmse_kappa": {r: float(np.sqrt(np.mean((np.array(kappas[r]) - true_kappa) ** 2))) for r in ACTIVE_RULES},
        "mean_lower_bound": {r: _mean(m[f"{r} lower"]) for r in ACTIVE_RULES},
        "mean_relevant_share": {r: _mean(m[f"{r} prevalence"]) for r in ACTIVE_RULES},
        "rows": rows,
    }


def _coverage(lower: list, upper: list, true_kappa: float) -> float:
    """The share of audits whose interval holds the true kappa (a null interval holds nothing)."""
    return float(np.mean([lo is not None and lo <= true_kappa <= hi for lo, hi in zip(lower, upper, strict=True)]))


def decisions(m: dict, min_kappa: float) -> dict[str, float]:
    """The share of audits each rule admits at this minimum."""
    gate = JudgeGate(min_pairs=MIN_PAIRS, min_kappa=min_kappa)

    def share(flags: list[bool]) -> float:
        return float(np.mean(flags))

    return {
        "audit gate": share([admits(n, lo, gate) for n, lo in zip(m["audit_n"], m["lower"], strict=True)]),
        "audit point kappa": share([admits(n, k, gate) for n, k in zip(m["audit_n"], m["audit_kappa"], strict=True)]),
        "window rule": share([admits(n, k, gate) for n, k in zip(m["window_n"], m["window_kappa"], strict=True)]),
    }


def _mean(values: list) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def run(args: argparse.Namespace) -> dict:
    started = time.monotonic()
    collection, bm25, cosine, top_bm25, top_dense, rel, pooled, truth = study.two_rankers(
        Path(args.collection), args.depth
    )
    n_q = rel.shape[0]
    queue = queue_order(top_bm25, top_dense, pooled, [q.query_id for q in collection.queries])
    size = min(args.size, n_q - 1)
    args.size = size
    rng = np.random.default_rng(args.seed)
    draws = np.argsort(rng.random((args.samples, n_q)), axis=1)[:, :size]
    numbers = rng.random((args.samples, n_q))  # the active audits' uniform numbers, shared by both judges
    judges, active = {}, {}
    for name, scores in (("dense cosine >= calibrated cut", cosine), ("bm25 score >= calibrated cut", bm25)):
        labels, cut = calibrated_judge(scores, truth, pooled)
        true_kappa = study.kappa(labels[pooled], truth[pooled])
        if args.part != "uniform":
            pi = inclusion_probabilities(judge_uncertainty(labels, truth, pooled), size)
            m_active = measure_active(labels, truth, pooled, pi, numbers < pi, args)
            active[name] = {"true_kappa": true_kappa} | active_summary(m_active, true_kappa, args.deltas)
        if args.part == "active":
            continue
        m = measure(labels, truth, queue, draws, args)
        rows = []
        for delta in args.deltas:
            min_kappa = round(true_kappa + delta, 4)
            admitted = decisions(m, min_kappa)
            side = "below" if delta > 0 else "above"
            errors = {r: admitted[r] if side == "below" else 1 - admitted[r] for r in RULES}
            rows.append(
                {"delta": delta, "min_kappa": min_kappa, "judge_is": side, "admitted": admitted, "error": errors}
            )
        judges[name] = {
            "cut": cut,
            "true_kappa": true_kappa,
            "mean_kappa": {
                "audit": _mean(m["audit_kappa"]),
                "audit lower bound": _mean(m["lower"]),
                "window": _mean(m["window_kappa"]),
            },
            "mean_pairs": {"audit": float(np.mean(m["audit_n"])), "window": float(np.mean(m["window_n"]))},
            "window_relevant_share": _window_prevalence(truth, queue, draws, args.window),
            "rows": rows,
        }
    return {
        "collection": str(args.collection),
        "queries": n_q,
        "documents": rel.shape[1],
        "depth": args.depth,
        "pooled_pairs": int(pooled.sum()),
        "pooled_relevant_share": float(truth[pooled].mean()),
        "part": args.part,
        "audit_size": size,
        "window": args.window,
        "min_pairs": MIN_PAIRS,
        "samples": args.samples,
        "resamples": args.resamples,
        "seed": args.seed,
        "judges": judges,
        "active": active,
        "seconds": round(time.monotonic() - started, 1),
    }


def _window_prevalence(truth: np.ndarray, queue: list, draws: np.ndarray, window: int) -> float:
    """The mean share of relevant pairs in the window the old rule read (the audit's share is the pool's)."""
    drawn_sets = [set(int(q) for q in d) for d in draws]
    shares = []
    for drawn in drawn_sets:
        tail = [p for p in queue if int(p[0]) in drawn][-window:]
        shares.append(float(np.mean([truth[p] for p in tail])) if tail else 0.0)
    return float(np.mean(shares))


# --------------------------------------------------------------------------- report


def markdown(out: dict) -> str:
    """The tables of the parts that ran: the uniform audits' rules, then the active audits' gates."""
    text = _uniform_markdown(out) if out["judges"] else ""
    if out["active"]:
        text += ("\n" if text else "") + _active_markdown(out)
    return text


def _uniform_markdown(out: dict) -> str:
    lines = [
        f"{out['queries']} queries, {out['documents']} documents, pool depth {out['depth']} "
        f"({out['pooled_pairs']} pooled pairs, {study.pct(out['pooled_relevant_share'], 1)} relevant); "
        f"{out['samples']} audits of {out['audit_size']} queries per judge, seed {out['seed']}; the gate's "
        f"bootstrap B = {out['resamples']}; min pairs {out['min_pairs']}; the window rule reads the audit's "
        f"last {out['window']} pairs in queue order. Error: for a judge below the minimum, the share of audits "
        "that admit it; above, the share that hold it back.",
        "",
    ]
    header = ["judge", "true kappa", "min kappa", "judge is", *(f"{r}: error" for r in RULES)]
    rows = []
    for name, j in out["judges"].items():
        for r in j["rows"]:
            rows.append(
                [
                    name,
                    study.fmt(j["true_kappa"], 3),
                    f"{r['min_kappa']:.3f} ({r['delta']:+g})",
                    f"{r['judge_is']} the minimum",
                    *(study.pct(r["error"][rule], 1) for rule in RULES),
                ]
            )
    lines += study.table(header, rows) + [""]
    header = [
        "judge",
        "true kappa",
        "mean kappa on the audit",
        "mean lower bound",
        "mean kappa on the window",
        "relevant share in the window",
        "pairs: audit / window",
    ]
    rows = [
        [
            name,
            study.fmt(j["true_kappa"], 3),
            study.fmt(j["mean_kappa"]["audit"], 3),
            study.fmt(j["mean_kappa"]["audit lower bound"], 3),
            study.fmt(j["mean_kappa"]["window"], 3),
            study.pct(j["window_relevant_share"], 1),
            f"{j['mean_pairs']['audit']:.0f} / {j['mean_pairs']['window']:.0f}",
        ]
        for name, j in out["judges"].items()
    ]
    lines += study.table(header, rows)
    return "\n".join(lines) + "\n"


def _active_markdown(out: dict) -> str:
    lines = [
        f"Active audits (contract 12.1) of {out['audit_size']} queries expected, drawn by each judge's own "
        f"uncertainty: {out['samples']} per judge, seed {out['seed']}; B = {out['resamples']}; min pairs "
        f"{out['min_pairs']}. The weighted gate weighs each query by its design (contract 13.2); the unweighted "
        "one reads the drawn queries as a uniform audit's (the gate before weights). Error as above.",
        "",
    ]
    header = ["judge", "true kappa", "min kappa", "judge is", *(f"{r}: error" for r in ACTIVE_RULES)]
    rows = [
        [
            name,
            study.fmt(j["true_kappa"], 3),
            f"{r['min_kappa']:.3f} ({r['delta']:+g})",
            f"{r['judge_is']} the minimum",
            *(study.pct(r["error"][rule], 1) for rule in ACTIVE_RULES),
        ]
        for name, j in out["active"].items()
        for r in j["rows"]
    ]
    lines += study.table(header, rows) + [""]
    header = [
        "judge",
        "true kappa",
        "mean kappa: weighted / unweighted",
        "mean error of kappa (+- 1.96 SE): weighted / unweighted",
        "RMSE of kappa: weighted / unweighted",
        "interval holds the true kappa: weighted / unweighted",
        "mean lower bound: weighted / unweighted",
        "true relevant share",
        "mean relevant share: weighted / unweighted",
        "queries drawn, pairs (mean)",
        "pi: min .. max",
    ]
    rows = []
    for name, j in out["active"].items():

        def both(key: str, fmt) -> str:
            return " / ".join(fmt(j[key][r]) for r in ACTIVE_RULES)  # noqa: B023 - used at once

        rows.append(
            [
                name,
                study.fmt(j["true_kappa"], 3),
                both("mean_kappa", lambda x: study.fmt(x, 3)),
                " / ".join(
                    f"{j['mean_error_kappa'][r]:+.4f} +- {1.96 * j['se_mean_kappa'][r]:.4f}" for r in ACTIVE_RULES
                ),
                both("rmse_kappa", lambda x: study.fmt(x, 3)),
                both("coverage", lambda x: study.pct(x, 1)),
                both("mean_lower_bound", lambda x: study.fmt(x, 3)),
                study.pct(out["pooled_relevant_share"], 1),
                both("mean_relevant_share", lambda x: study.pct(x, 1)),
                f"{j['drawn_mean']:.1f}, {j['pairs_mean']:.0f}",
                f"{j['pi_min']:.3f} .. {j['pi_max']:.3f}",
            ]
        )
    lines += study.table(header, rows)
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--collection", default=str(DEFAULT_COLLECTION), help="folder of cran.all.1400, cran.qry, cranqrel")
    p.add_argument("--samples", type=int, default=1000, help="audits drawn per judge")
    p.add_argument("--size", type=int, default=40, help="queries per audit")
    p.add_argument("--deltas", default="-0.15,-0.1,-0.05,-0.025,0.025,0.05,0.1,0.15", help="min kappa - true kappa")
    p.add_argument("--window", type=int, default=200, help="the old rule's window: the judge's latest shared pairs")
    p.add_argument("--depth", type=int, default=10, help="pool depth per ranker")
    p.add_argument("--resamples", type=int, default=JudgeGate().resamples, help="the gate's bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="seed of the audits' draws")
    p.add_argument("--part", choices=("both", "uniform", "active"), default="both", help="which audits to draw")
    p.add_argument("--out", type=Path, help="write the JSON here")
    p.add_argument("--markdown", type=Path, help="write the table here")
    args = p.parse_args(argv)
    args.deltas = [float(s) for s in args.deltas.split(",")]
    if any(d == 0 for d in args.deltas):
        p.error("--deltas: 0 puts the judge at the minimum, on neither side")
    return args


def main(argv: list[str] | None = None) -> int:
    return study.simulation_main(parse_args(argv), run, markdown)


if __name__ == "__main__":
    sys.exit(main())
