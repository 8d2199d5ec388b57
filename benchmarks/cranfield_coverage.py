"""Coverage on Cranfield: the fifth gate at work, adaptive pooling at three budgets, leave-one-out.

    python benchmarks/cranfield_coverage.py /work/shared/reference/cranfield --workdir /tmp/cranfield-coverage
        [--budgets 5,10,20] [--seed 0] [--loo-depth 10] [--report report.md]

The inputs are those of cranfield_pooling.py: Cranfield's corpus and rubric, and a
serve log in which production served the lexical ranker's top 5 for every question
with the verdicts Cranfield's judgments imply. Then, as a user would, one process per
command under GOLDENSET_HOME=WORKDIR/home:

1. Bias. `build` (the log alone); `bench run` of the hybrid `core` and of its lexical
   side alone; `bench compare LEXICAL CORE --json`: the comparison is BIASED, with the
   coverages. The command it prints (`goldenset pool --from-run ... --depth K`) is
   run as printed; the annotator answers every queued pair from Cranfield's judgments
   (a pair Cranfield never judged: `irrelevant`); `build`; both `bench run` again;
   `bench compare` again: the flag gone, and the verdict set against what all of
   Cranfield's judgments say (computed independently, cranfield_metrics.py).
2. Budgets. From the log-only labels, depth, mtf, bandit and feedback (goldenset's own
   `strategies.plan_round`, the code `pool --strategy` runs; feedback with the packaged
   model's vectors of the golden tasks and the documents, from the home's warehouse)
   draw over the rankings `bench run` stored for lexical, dense and core (depth 100),
   a round's budget being one pair per golden query (depth, mtf and bandit give every
   query one; feedback spends the round's total where its labels paid), Cranfield
   answering between rounds; at mean budgets B judgments per query the relevant
   documents found per query, paired 95% t intervals over queries against depth, and
   the share of Cranfield's relevant documents reached. The seeded strategies run again
   on the next four seeds, to show how far the draws move the ratio.
3. Leave-one-out (`goldenset.bench.reusability`) on the labels a depth-K pool of the
   three rankers would get from Cranfield (plus the log's), for map and ndcg@10.

The report (printed, and written as Markdown; every figure as JSON next to it) is what
docs/concepts/coverage.md quotes.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import sys
import time
from pathlib import Path

import cranfield_collection as cc
import cranfield_metrics as cm
from cranfield_pooling import LEXICAL_ONLY, answer_queue, convert, golden_state
from cranfield_study import (
    Home,
    PipelineError,
    full_qrels,
    mean_interval,
    pct,
    pipeline_arguments,
    prepare_workdir,
    study_main,
)

DENSE_ONLY = "cranfield_retrievers:dense_only"
STRATEGY_NAMES = ("depth", "mtf", "bandit", "feedback")
SEEDED = ("bandit", "feedback")
EXTRA_SEEDS = 4
RANKERS = ("lexical", "dense", "core")


def t_interval(diffs: list[float]) -> tuple[float, float, float]:
    """Mean and 95% Student t interval of paired differences."""
    m = mean_interval(diffs)
    return m["mean"], m["lo"], m["hi"]


def compare_summary(cmp: dict) -> dict:
    by = {m["metric"]: m for m in cmp["metrics"]}
    r5 = by["recall@5"]
    return {
        "coverage": cmp["coverage"],
        "coverage_warning": cmp["coverage_warning"],
        "biased": cmp["biased"],
        "recall@5": {k: r5[k] for k in ("mean_a", "mean_b", "diff", "lo", "hi", "verdict", "incomplete_judgments")},
        "n": r5["n"],
    }


def truth_comparison(a: dict[str, list[str]], b: dict[str, list[str]], truth: cm.Qrels, queries: list[str]) -> dict:
    """B - A on recall@5 against all of Cranfield's judgments, over `queries`, with its verdict."""
    pa, pb = cm.per_query(a, truth)["recall@5"], cm.per_query(b, truth)["recall@5"]
    common = [q for q in queries if q in pa and q in pb]
    mean, lo, hi = t_interval([pb[q] - pa[q] for q in common])
    verdict = "better" if lo > 0 else "worse" if hi < 0 else "indistinguishable"
    return {"n": len(common), "diff": mean, "lo": lo, "hi": hi, "verdict": verdict}


def bias_section(home: Home, collection: cc.Collection, truth: cm.Qrels) -> dict:
    home.rubric_check()
    home.build()
    golden = golden_state(home)["query_ids"]
    core, lexical, dense = home.bench_run(), home.bench_run(LEXICAL_ONLY), home.bench_run(DENSE_ONLY)
    before = compare_summary(home.compare(lexical, core))
    warning = before["coverage_warning"] or ""
    found = re.search(r"`(goldenset pool [^`]*)`", warning)
    if not found:
        raise PipelineError(f"bench compare printed no command to close the gap: {warning!r}")
    command = found.group(1)
    pool = json.loads(home.run(*shlex.split(command)[1:], "--json"))
    queue = home.pool_export(home.path / "from-run-queue.jsonl")
    answers = answer_queue(collection, queue, home.labels)
    home.build()
    core2, lexical2 = home.bench_run(), home.bench_run(LEXICAL_ONLY)
    after = compare_summary(home.compare(lexical2, core2))
    runs = {"core": home.rankings(core), "lexical": home.rankings(lexical), "dense": home.rankings(dense)}
    truth_cmp = truth_comparison(runs["lexical"], runs["core"], truth, golden)
    return {
        "runs": {"core": core, "lexical": lexical, "dense": dense, "core_after": core2, "lexical_after": lexical2},
        "before": before,
        "command": command,
        "pool": {k: pool[k] for k in ("returned_distinct", "already_labelled", "pooled", "queue")},
        "answers": answers,
        "after": after,
        "truth": truth_cmp,
        "agrees": after["recall@5"]["verdict"] == truth_cmp["verdict"],
        "golden_queries": golden,
        "_rankings": runs,
    }


def log_labels(collection: cc.Collection, served: dict, golden: list[str]) -> dict[tuple[str, str], int]:
    by_id = {q.query_id: q for q in collection.queries}
    return {
        (qid, doc): collection.grade(by_id[qid].number, cc.doc_number(doc))
        for qid in golden
        for doc, _ in served[by_id[qid].number]
    }


def vectors_of(home: Home, golden: list[str]):
    """The packaged model's vectors of the golden tasks and the corpus, as `pool --strategy feedback` embeds them."""
    from goldenset import warehouse
    from goldenset.corpus import read_corpus
    from goldenset.embeddings import Embedder
    from goldenset.labelling.strategies import query_vectors

    tasks = dict(home.query("SELECT DISTINCT query_id, task FROM golden_set"))
    con = warehouse.connect(home.db)
    try:
        return query_vectors(con, Embedder(), {q: tasks[q] for q in golden}, read_corpus(home.inputs.corpus).active)
    finally:
        con.close()


def simulate(
    collection: cc.Collection, lists: dict, labels0: dict, golden: list[str], name: str, rounds: int, seed: int, vectors
) -> dict[int, dict[str, int]]:
    """Rounds of `name` with a budget of one pair per golden query; relevant found per query after each round."""
    from goldenset.labelling.strategies import plan_round

    by_id = {q.query_id: q for q in collection.queries}
    labels = dict(labels0)
    state = None
    counts = dict.fromkeys(golden, 0)
    out: dict[int, dict[str, int]] = {}
    for rnd in range(1, rounds + 1):
        plan = plan_round(name, lists, RANKERS, labels, budget=len(golden), seed=seed, previous=state, vectors=vectors)
        state = plan.state
        for q, d, _ in plan.picks:
            grade = collection.grade(by_id[q].number, cc.doc_number(d))
            labels[(q, d)] = grade
            counts[q] += grade >= 1
        out[rnd] = dict(counts)
    return out


def budget_section(
    collection: cc.Collection,
    lists: dict,
    labels0: dict,
    golden: list[str],
    budgets: list[int],
    seed: int,
    vectors=None,
) -> dict:
    """Rounds of one pair per query on average; Cranfield answers between rounds; found per query at each budget."""
    per_query_lists = {q: {r: lists[r].get(q, []) for r in RANKERS} for q in golden}
    number_of = {q.query_id: q.number for q in collection.queries}
    wanted = {number_of[q] for q in golden}
    relevant_total = sum(1 for (qn, dn) in collection.codes if qn in wanted and collection.grade(qn, dn) >= 1)
    log_relevant = sum(1 for g in labels0.values() if g >= 1)
    out: dict = {"queries": len(golden), "cranfield_relevant": relevant_total, "log_relevant": log_relevant}
    names = [n for n in STRATEGY_NAMES if n != "feedback" or vectors is not None]
    found = {n: simulate(collection, per_query_lists, labels0, golden, n, max(budgets), seed, vectors) for n in names}
    for b in budgets:
        row: dict = {}
        base = found["depth"][b]
        for name in names:
            f = found[name][b]
            total = sum(f.values())
            row[name] = {
                "found": total,
                "per_query": total / len(golden),
                "share_reached": (log_relevant + total) / relevant_total,
            }
            if name != "depth":
                mean, lo, hi = t_interval([f[q] - base[q] for q in golden])
                row[name]["vs_depth"] = {"diff": mean, "lo": lo, "hi": hi}
                row[name]["ratio"] = total / sum(base.values()) if sum(base.values()) else math.nan
        out[str(b)] = row
    seeds = list(range(seed + 1, seed + 1 + EXTRA_SEEDS))
    out["seeds"] = {"seeds": [seed, *seeds], "ratio": {}}
    for name in (n for n in SEEDED if n in names):
        runs = [found[name]] + [
            simulate(collection, per_query_lists, labels0, golden, name, max(budgets), s, vectors) for s in seeds
        ]
        out["seeds"]["ratio"][name] = {
            str(b): [sum(r[b].values()) / sum(found["depth"][b].values()) for r in runs] for b in budgets
        }
    return out


def loo_section(collection: cc.Collection, lists: dict, labels0: dict, golden: list[str], depth: int) -> dict:
    from goldenset.bench.reusability import leave_one_out

    by_id = {q.query_id: q for q in collection.queries}
    qrels: dict[str, dict[str, int]] = {}
    for (q, d), g in labels0.items():
        qrels.setdefault(q, {})[d] = g
    for r in RANKERS:
        for q in golden:
            for d in lists[r].get(q, [])[:depth]:
                qrels.setdefault(q, {})[d] = collection.grade(by_id[q].number, cc.doc_number(d))
    rankings = {r: {q: lists[r].get(q, []) for q in golden} for r in RANKERS}
    return {m: leave_one_out(rankings, qrels, depth=depth, metric=m).to_json() for m in ("map", "ndcg@10", "recall@24")}


def markdown(f: dict) -> str:
    b = f["bias"]
    lines = [
        "# Coverage on Cranfield",
        "",
        f"Repeat: `{f['rerun']}` ({f['seconds']:.0f} s).",
        "",
        "## The fifth gate: lexical (A) against the hybrid core (B), recall@5",
        "",
        "| | judged@5 A | judged@5 B | judged@24 A | judged@24 B | B - A | 95% CI | verdict |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for label, side in (("log only", b["before"]), ("after --from-run", b["after"])):
        c, r = side["coverage"], side["recall@5"]
        lines.append(
            f"| {label} | {pct(c['a'].get('judged@5', math.nan))} | {pct(c['b'].get('judged@5', math.nan))} | "
            f"{pct(c['a'].get('judged@24', math.nan))} | {pct(c['b'].get('judged@24', math.nan))} | "
            f"{r['diff']:+.4f} | [{r['lo']:+.4f}, {r['hi']:+.4f}] | {r['verdict']}"
            + (" (incomplete judgments)" if r["incomplete_judgments"] else "")
            + " |"
        )
    t = b["truth"]
    lines += [
        f"| all of Cranfield's judgments | 100% | 100% | 100% | 100% | {t['diff']:+.4f} | "
        f"[{t['lo']:+.4f}, {t['hi']:+.4f}] | {t['verdict']} |",
        "",
        "Before: " + (b["before"]["coverage_warning"] or "no warning").replace("\n", " "),
        "",
        f"Closed with `{b['command']}`: {b['pool']['queue']['total']} pairs queued "
        f"({b['pool']['pooled']} pooled), {b['answers']['relevant']} of them relevant by Cranfield.",
        "",
        "After: "
        + (b["after"]["coverage_warning"] or "no BIASED line")
        + f"; the verdict {'agrees' if b['agrees'] else 'does NOT agree'} with all of Cranfield's judgments.",
        "",
        "## Pooling at a budget: relevant documents found beyond the log",
        "",
        f"{f['budgets']['queries']} golden queries; Cranfield holds {f['budgets']['cranfield_relevant']} relevant "
        f"documents for them, the log found {f['budgets']['log_relevant']}. A round's budget is one pair "
        "per golden query: depth, mtf and bandit give each query one, feedback spends the total where its "
        "labels paid; Cranfield answers between rounds; rankers lexical, dense, core (depth 100).",
        "",
        "| budget / query | strategy | found | per query | vs depth: mean diff per query [95% CI] | ratio | share of Cranfield's relevant reached |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for bud in f["budget_list"]:
        row = f["budgets"][str(bud)]
        for name in (n for n in STRATEGY_NAMES if n in row):
            s = row[name]
            vs = s.get("vs_depth")
            lines.append(
                f"| {bud} | {name} | {s['found']} | {s['per_query']:.2f} | "
                + (f"{vs['diff']:+.3f} [{vs['lo']:+.3f}, {vs['hi']:+.3f}]" if vs else "-")
                + f" | {s.get('ratio', 1.0):.2f} | {pct(s['share_reached'])} |"
            )
    seeds = f["budgets"].get("seeds", {})
    for name, by_budget in seeds.get("ratio", {}).items():
        lines += [
            "",
            f"{name}, ratio to depth over seeds {', '.join(map(str, seeds['seeds']))}: "
            + "; ".join(
                f"budget {b}: {min(v):.2f} to {max(v):.2f} (mean {sum(v) / len(v):.2f})" for b, v in by_budget.items()
            ),
        ]
    lines += ["", f"## Leave-one-out (pool of lexical, dense, core at depth {f['loo_depth']})", ""]
    for metric, loo in f["loo"].items():
        lines += [
            f"### {metric}",
            "",
            "| left out | unique relevant | its own before | after | largest change (ranker) | Kendall's tau |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in loo["rows"]:
            lines.append(
                f"| {r['ranker']} | {r['unique_relevant']} | {r['own_before']:.4f} | {r['own_after']:.4f} | "
                f"{r['largest_change']:+.4f} ({r['largest_change_ranker']}) | {r['kendall_tau']:.2f} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> dict:
    started = time.monotonic()
    collection = cc.read_collection(Path(args.collection))
    workdir = Path(args.workdir).resolve()
    prepare_workdir(workdir, __file__)
    inputs, _, served = convert(collection, workdir / "input", 5)
    home = Home(workdir / "home", inputs, in_process=args.in_process)
    home.path.mkdir()
    truth = full_qrels(collection)
    bias = bias_section(home, collection, truth)
    lists = bias.pop("_rankings")
    golden = bias.pop("golden_queries")
    labels0 = log_labels(collection, served, golden)
    budgets = budget_section(collection, lists, labels0, golden, args.budgets, args.seed, vectors_of(home, golden))
    loo = loo_section(collection, lists, labels0, golden, args.loo_depth)
    return {
        "bias": bias,
        "budgets": budgets,
        "budget_list": args.budgets,
        "loo": loo,
        "loo_depth": args.loo_depth,
        "seed": args.seed,
        "commands": home.commands,
        "seconds": round(time.monotonic() - started, 1),
        "rerun": "python benchmarks/cranfield_coverage.py " + shlex.join(args.argv),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pipeline_arguments(p, __file__)
    p.add_argument("--budgets", default="5,10,20", help="mean judgments per query, comma-separated (default 5,10,20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bandit and feedback (default 0)")
    p.add_argument("--loo-depth", type=int, default=10, help="pool depth of the leave-one-out study (default 10)")
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args.budgets = sorted({int(b) for b in args.budgets.split(",")})
    except ValueError:
        p.error(f"--budgets {args.budgets!r}: give integers separated by commas, e.g. 5,10,20")
    if any(b < 1 for b in args.budgets) or args.loo_depth < 1:
        p.error("budgets and --loo-depth must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    return study_main(parse_args(argv), __file__, run, markdown)


if __name__ == "__main__":
    sys.exit(main())
