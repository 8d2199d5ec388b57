"""Figures and the Markdown report of `cranfield_pooling.py`.

`figures()` turns what the pipeline printed and stored into one JSON-ready dict;
`markdown()` writes it out. Every interval is a 95% one: of a run's mean, Student's
t on its per-query values (mean +- t(0.975, n-1) sd / sqrt(n)); of a change, what
`goldenset bench compare` printed (paired t on the per-query differences). The
minimum detectable effect is `bench compare`'s: (t(0.975, n-1) + t(0.80, n-1)) x
sd of the differences / sqrt(n), for core against the lexical ranker alone.
"""

from __future__ import annotations

import cranfield_collection as cc
from cranfield_study import fmt as _f
from cranfield_study import mean_interval, paired_t
from cranfield_study import table as _table

METRICS = ["recall@5", "ndcg@10", "mrr", "map"]


def _compared(comparison: dict) -> dict[str, dict]:
    return {m["metric"]: m for m in comparison["metrics"] if m["metric"] in METRICS}


def _run_figures(values: dict[str, dict[str, float]]) -> dict[str, dict]:
    return {m: mean_interval(list(values.get(m, {}).values())) for m in METRICS}


def figures(
    collection: cc.Collection, log: dict, rubric: str, before_state: dict, before: dict, results: list[dict], main: str
) -> dict:
    by_id = {q.query_id: q for q in collection.queries}
    golden = [by_id[qid] for qid in before_state["query_ids"]]
    golden_numbers = {q.number for q in golden}
    relevant_golden = sum(len(collection.relevant(q)) for q in golden_numbers)
    relevant_all = sum(len(collection.relevant(q.number)) for q in collection.queries)
    codes: dict[str, int] = {}
    for c in collection.codes.values():
        codes[str(c)] = codes.get(str(c), 0) + 1
    summary = {
        "documents": len(collection.docs),
        "queries": len(collection.queries),
        "judgments": len(collection.codes),
        "codes": dict(sorted(codes.items())),
        "relevant_pairs": relevant_all,
        "golden_queries": before_state["n_queries"],
        "dropped_no_positive": log["serves"] - before_state["n_queries"],
        "relevant_of_golden_queries": relevant_golden,
        "relevant_of_dropped_queries": relevant_all - relevant_golden,
        "log_relevant": before_state["n_helped"],
        "log_unlogged_relevant": relevant_golden - before_state["n_helped"],
        "rubric_check": rubric,
        "served_depth": log["served_depth"],
    }
    before_fig = {
        "n_queries": before_state["queries_with_relevant"],
        "core": _run_figures(before["core_values"]),
        "lexical": _run_figures(before["lexical_values"]),
        "truth_core": {m: before["truth_core"].get(m) for m in METRICS},
        "truth_lexical": {m: before["truth_lexical"].get(m) for m in METRICS},
        "lexical_vs_core": _compared(before["lexical_vs_core"]),
        "truth_lexical_vs_core": {
            m: paired_t(before["truth_lexical_values"][m], before["truth_core_values"][m]) for m in METRICS
        },
        "runs": {"core": before["core"], "lexical": before["lexical"]},
        "recomputed": before["recomputed"],
    }
    pools = []
    for r in results:
        found = r["answers"]["relevant"]
        queued = r["answers"]["queued"]
        pool = {
            "name": r["name"],
            "rankers": r["rankers"],
            "depth": r["depth"],
            "returned_distinct": r["pool"]["returned_distinct"],
            "already_labelled": r["pool"]["already_labelled"],
            "queued": queued,
            "queue_by_reason": r["answers"]["reasons"],
            "pooled_never_judged": r["pool"]["pooled_never_judged"],
            "relevant_found": found,
            "relevant_found_grade2": r["answers"]["grade2"],
            "judgments_per_relevant": (queued / found) if found else None,
            "relevant_labelled": summary["log_relevant"] + found,
            "relevant_labelled_share": (summary["log_relevant"] + found) / relevant_golden if relevant_golden else None,
            "measured": r["after"] is not None,
        }
        after = r["after"]
        if after is not None:
            pool.update(
                {
                    "build": {k: v for k, v in r["state"].items() if k != "query_ids"},
                    "n_queries": r["state"]["queries_with_relevant"],
                    "core": _run_figures(after["core_values"]),
                    "lexical": _run_figures(after["lexical_values"]),
                    "before_vs_after": _compared(after["before_vs_after"]),
                    "lexical_before_vs_after": _compared(after["lexical_before_vs_after"]),
                    "lexical_vs_core": _compared(after["lexical_vs_core"]),
                    "runs": {"core": after["core"], "lexical": after["lexical"]},
                    "recomputed": after["recomputed"],
                }
            )
        pools.append(pool)
    checks = _checks(summary, before_state, before_fig, pools)
    return {
        "collection": summary,
        "log": log,
        "before": before_fig,
        "pools": pools,
        "main": main,
        "metrics": METRICS,
        "checks": checks,
    }


def _checks(summary: dict, before_state: dict, before: dict, pools: list[dict]) -> list[dict]:
    """What must hold if the pipeline and this script agree; a failed one is a finding, not a crash."""
    out = []

    def check(what: str, ok: bool, detail: str) -> None:
        out.append({"check": what, "ok": bool(ok), "detail": detail})

    def same_means(where: str, side: dict, recomputed: dict, tolerance: float = 1e-9) -> None:
        got = {m: side[m]["mean"] if isinstance(side[m], dict) else side[m] for m in METRICS}
        ok = bool(recomputed) and all(abs(got[m] - recomputed[m]) <= tolerance for m in METRICS)
        check(
            f"{where}: the pipeline's means = this script's recomputation from the run file",
            ok,
            "; ".join(f"{m} {_f(got[m], 6)} vs {_f(recomputed.get(m), 6)}" for m in METRICS),
        )

    for name in ("core", "lexical"):
        same_means(f"log only, {name}", before[name], before["recomputed"][name])
        # bench eval prints 4 decimals
        same_means(
            f"all Cranfield judgments, {name} (bench eval)",
            before[f"truth_{name}"],
            before["recomputed"][f"truth_{name}"],
            5e-5,
        )
    for p in pools:
        check(
            f"{p['name']}: every queued pair is one the log never judged",
            p["pooled_never_judged"] == p["queued"],
            f"{p['pooled_never_judged']} never judged of {p['queued']} queued",
        )
        if not p["measured"]:
            continue
        for name in ("core", "lexical"):
            same_means(f"{p['name']}, {name}", p[name], p["recomputed"][name])
        b = p["build"]
        check(
            f"{p['name']}: every label line accepted",
            b["label_lines_rejected"] == 0 and b["n_human_labels"] == p["queued"],
            f"{p['queued']} lines written, {b['n_human_labels']} human labels in the golden set, "
            f"{b['label_lines_rejected']} rejected, {b['human_labels_unused']} unused",
        )
        check(
            f"{p['name']}: relevant found = human rows with relevance 1",
            b["human_relevant"] == p["relevant_found"],
            f"from the queue and cranqrel {p['relevant_found']}, golden_set {b['human_relevant']}",
        )
        check(
            f"{p['name']}: golden queries unchanged",
            b["n_queries"] == before_state["n_queries"],
            f"{before_state['n_queries']} before, {b['n_queries']} after",
        )
        check(
            f"{p['name']}: no log label overridden",
            b["log_labels_overridden"] == 0,
            f"{b['log_labels_overridden']} overridden",
        )
        if p["rankers"] == ["lexical"] and p["depth"] <= summary["served_depth"]:
            check(
                f"{p['name']}: the lexical ranker re-finds exactly what the log served",
                p["queued"] == 0 and p["already_labelled"] == p["returned_distinct"],
                f"{p['returned_distinct']} returned, {p['already_labelled']} already labelled, {p['queued']} queued",
            )
    return out


# ---------------------------------------------------------------------- Markdown
def _n(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _ci(fig: dict) -> str:
    return f"{_f(fig['mean'])} [{_f(fig['lo'])}, {_f(fig['hi'])}]"


def _diff(fig: dict | None) -> str:
    if not fig:
        return "n/a"
    return f"{fig['diff']:+.4f} [{fig['lo']:+.4f}, {fig['hi']:+.4f}] {fig['verdict']}"


def _before_after(fig: dict, m: dict, ranker: str, change: str) -> list[str]:
    """The table of one ranker's means before and after the pool's labels, the change, and the truth."""
    before = fig["before"]
    rows = [
        [
            metric,
            _ci(before[ranker][metric]),
            _ci(m[ranker][metric]),
            _diff(m[change].get(metric)),
            _f(before[f"truth_{ranker}"][metric]),
        ]
        for metric in fig["metrics"]
    ]
    return _table(["metric", "log only", "with the labels", "change (95% CI)", "all Cranfield judgments"], rows)


def markdown(fig: dict) -> str:
    c, log, before = fig["collection"], fig["log"], fig["before"]
    main = next(p for p in fig["pools"] if p["name"] == fig["main"])
    out = ["# Pooling on Cranfield", ""]
    out += [
        f"Collection: {c['documents']} documents, {c['queries']} queries, {c['judgments']} judgments "
        f"(codes {', '.join(f'{k}: {v}' for k, v in c['codes'].items())}); {c['relevant_pairs']} relevant pairs "
        "(codes 1-4; grade 2 for codes 1-2, grade 1 for 3-4, 0 for -1 and unjudged). "
        f"Rubric: `{c['rubric_check']}`.",
        "",
    ]
    out += [
        f"Serve log: the lexical ranker's top {log['served_depth']} for every query, {log['serves']} serves over "
        f"{log['days']} days, {log['items']} ranked items, verdicts {log['helped']} helped / {log['noise']} noise "
        f"(unjudged in Cranfield) / {log['wrong']} wrong (code -1). Golden set: **{c['golden_queries']} queries** "
        f"with a relevant served document; {c['dropped_no_positive']} dropped by `no_positive` (their "
        f"{c['relevant_of_dropped_queries']} relevant documents are out of the loop's reach: contract 7.3 never "
        f"brings a dropped query back). The golden queries have {c['relevant_of_golden_queries']} relevant "
        f"documents in Cranfield; the log holds {c['log_relevant']} of them and misses "
        f"{c['log_unlogged_relevant']}.",
        "",
    ]

    out += [
        "## Pools",
        "",
        "Every pool asks its rankers over the log-only build; the annotator answers every queued pair from "
        "cranqrel (an unjudged pair is `irrelevant`).",
        "",
    ]
    rows = []
    for p in fig["pools"]:
        rows.append(
            [
                p["name"],
                str(p["returned_distinct"]),
                str(p["already_labelled"]),
                str(p["queued"]),
                f"{p['relevant_found']} ({p['relevant_found_grade2']})",
                _f(p["judgments_per_relevant"], 1),
                f"{p['relevant_labelled']} / {c['relevant_of_golden_queries']} ({_f(p['relevant_labelled_share'], 3)})",
            ]
        )
    out += _table(
        [
            "pool (rankers@depth)",
            "pairs returned (distinct)",
            "already labelled",
            "pairs queued",
            "relevant found, never in the log (grade 2)",
            "judgments per relevant found",
            "relevant labelled now / in Cranfield",
        ],
        rows,
    )
    out += [""]

    m = main
    out += [
        f"## Benchmark before and after the labels of {m['name']}",
        "",
        f"Deciding row core (the reference retriever), {before['n_queries']} queries with a relevant label before, "
        f"{m['n_queries']} after. Means with the 95% interval of the mean; the change is `bench compare` "
        "(paired t); the last column measures the same run against all of Cranfield's judgments "
        "(`bench eval`).",
        "",
    ]
    out += _before_after(fig, m, "core", "before_vs_after")
    out += [
        "",
        f"Labels from the log weigh grade 1 whatever Cranfield's grade (contract 7.3: a `helped` is grade 1), "
        f"labels from the pool weigh their rubric grade: {log['helped_grade2']} of the log's {log['helped']} "
        "helped pairs are grade 2 in Cranfield, so nDCG with the labels differs from nDCG against Cranfield's "
        "judgments even where every relevant document is labelled.",
        "",
        f"The same for the lexical ranker alone (the ranker that served the log), {m['name']}:",
        "",
    ]
    out += _before_after(fig, m, "lexical", "lexical_before_vs_after")
    out += [""]

    out += [
        "## Minimum detectable effect",
        "",
        "Core against the lexical ranker alone, paired on the same queries (`bench compare`, lexical = A, core = "
        "B): the difference, its 95% interval and verdict, and the smallest true difference detectable with "
        "80% power at 5%.",
        "",
    ]
    rows = []
    for metric in fig["metrics"]:
        b, a = before["lexical_vs_core"].get(metric), m["lexical_vs_core"].get(metric)
        t = before["truth_lexical_vs_core"][metric]
        rows.append(
            [
                metric,
                str(b["n"]) if b else "n/a",
                _diff(b),
                _f(b["mde"]) if b else "n/a",
                str(a["n"]) if a else "n/a",
                _diff(a),
                _f(a["mde"]) if a else "n/a",
                _diff(t),
            ]
        )
    out += _table(
        [
            "metric",
            "n before",
            "core - lexical before",
            "MDE before",
            "n after",
            "core - lexical after",
            "MDE after",
            "core - lexical, all Cranfield judgments",
        ],
        rows,
    )
    out += [
        "",
        "The last column is this script's paired t on the same two runs scored against every Cranfield "
        "judgment (the same queries): the answer the golden set should give.",
    ]
    out += [
        "",
        f"Queries with a relevant label: {before['n_queries']} before, {m['n_queries']} after. Pooling adds "
        "documents to the golden queries, never queries: the "
        f"{_n(c['dropped_no_positive'], 'query', 'queries')} dropped by `no_positive` stay out (contract 7.3), "
        "so the minimum detectable effect moves only with the spread of the per-query differences.",
        "",
    ]

    out += [
        "## Every pool, after its labels",
        "",
        "Core means, the lexical ranker's recall@5, and the MDE of core against lexical.",
        "",
    ]
    rows = [
        ["(log only)", str(before["n_queries"])]
        + [_f(before["core"][x]["mean"]) for x in fig["metrics"]]
        + [_f(before["lexical"]["recall@5"]["mean"]), _f((before["lexical_vs_core"].get("ndcg@10") or {}).get("mde"))]
    ]
    for p in fig["pools"]:
        if not p["measured"]:
            rows.append([p["name"], "not measured (--measure main)"] + [""] * (len(fig["metrics"]) + 2))
            continue
        rows.append(
            [p["name"], str(p["n_queries"])]
            + [_f(p["core"][x]["mean"]) for x in fig["metrics"]]
            + [_f(p["lexical"]["recall@5"]["mean"]), _f((p["lexical_vs_core"].get("ndcg@10") or {}).get("mde"))]
        )
    out += _table(
        ["pool", "queries"] + [f"core {x}" for x in fig["metrics"]] + ["lexical recall@5", "MDE ndcg@10"], rows
    )
    out += [""]

    r5 = "recall@5"
    out += [
        "## Caveat: recall against a pool one ranker built is optimistic",
        "",
        f"Measured against the log alone, the lexical ranker that served it scores recall@5 = "
        f"{_f(before['lexical'][r5]['mean'])} and core {_f(before['core'][r5]['mean'])}; with the labels of "
        f"{m['name']} they score {_f(m['lexical'][r5]['mean'])} and {_f(m['core'][r5]['mean'])}; against all of "
        f"Cranfield's judgments (on the same {before['n_queries']} queries) {_f(before['truth_lexical'][r5])} and "
        f"{_f(before['truth_core'][r5])}. A pool built by one ranker only holds what that ranker found, so its "
        "recall is close to 1 by construction and a ranker that finds other relevant documents is penalised. "
        "Even the grown pool stays optimistic: it holds "
        f"{m['relevant_labelled']} of the {c['relevant_of_golden_queries']} relevant documents of these queries, "
        f"and what the lexical ranker failed on entirely is not measured at all: "
        f"{_n(c['dropped_no_positive'], 'query', 'queries')} with {c['relevant_of_dropped_queries']} relevant "
        "documents.",
        "",
    ]

    failed = [x for x in fig["checks"] if not x["ok"]]
    out += ["## Checks", "", f"{len(fig['checks']) - len(failed)} of {len(fig['checks'])} checks hold."]
    out += [f"- FAILED {x['check']}: {x['detail']}" for x in failed]
    out += [
        "",
        "## Rerun",
        "",
        "```bash",
        fig.get("rerun", ""),
        "```",
        "",
        f"{len(fig.get('commands', []))} goldenset commands in {fig.get('seconds', 0):.0f} s.",
        "",
    ]
    return "\n".join(out)
