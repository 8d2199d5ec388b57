"""Pooling on Cranfield: what the labelling loop finds that a one-ranker serve log never had.

    python benchmarks/cranfield_pooling.py /work/shared/reference/cranfield --workdir /tmp/cranfield-pooling
        [--report report.md] [--rankers lexical,dense,core --rankers dense ...] [--depths 5,10]

The Cranfield collection (1,400 abstracts, 225 questions, graded human
judgments) is turned into goldenset's inputs (cranfield_collection.py): a corpus,
a rubric whose labels are Cranfield's grades, and a serve log in which
production served the lexical ranker's top 5 for every question, each item with
the agent verdict Cranfield's judgment implies. Then the real pipeline runs as a
user would run it, one process per command, under GOLDENSET_HOME=WORKDIR/...:

1. `rubric check`, `build` (the log alone), `bench run` of the reference retriever
   (core) and of its lexical side alone (the ranker that built the log).
2. For every set of rankers and depth: `pool --rankers R --depth K --json` and
   `pool export --format jsonl`.
3. For each of them, on a copy of that home (so the pools do not mix): the
   annotator answers every queued pair from Cranfield's judgments with label
   lines (unjudged pairs: `irrelevant`), `build` again, `bench run` both
   retrievers again, `bench compare` before/after and core against lexical.

The report (printed, and written as Markdown; every figure also as JSON next to
it) gives per pool the pairs queued, relevant documents found that the log
never had, judgments spent per relevant document found; then how the deciding
row's numbers, their 95% intervals and the minimum detectable effect move once
the labels are in, against what Cranfield's full judgments say.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import cranfield_collection as cc
import cranfield_metrics as cm
import cranfield_report as report
from cranfield_study import (
    Home,
    Inputs,
    PipelineError,
    full_qrels,
    pipeline_arguments,
    prepare_workdir,
    study_main,
)

HERE = Path(__file__).resolve().parent
DEFAULT_RANKERS = ["lexical,dense,core", "lexical,dense", "lexical", "dense", "core"]
LEXICAL_ONLY = "cranfield_retrievers:lexical_only"
LOG_START = datetime(2026, 11, 23, 15, 0, tzinfo=UTC)
LOG_DAYS = 3
LABEL_TS = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


# ---------------------------------------------------------------------- steps
def convert(collection: cc.Collection, root: Path, served_depth: int) -> tuple[Inputs, dict, dict]:
    """Corpus, rubric, full qrels, and the serve log of what the lexical ranker served."""
    from goldenset.corpus import read_corpus
    from goldenset.retrieval.reference import HybridRetriever
    from goldenset.retrieval.retriever import RetrieverContext

    root.mkdir(parents=True)
    inputs = Inputs(root, root / "corpus.jsonl", root / "rubric.yaml", root / "logs", root / "cranfield-qrels.trec")
    cc.write_corpus(collection, inputs.corpus)
    cc.write_rubric(inputs.rubric)
    judgments = cc.write_full_qrels(collection, inputs.full_qrels)
    # Production is simulated by the reference retriever's own lexical component, so the log
    # holds exactly what the pool's `lexical` ranker returns at the served depth.
    ctx = RetrieverContext(read_corpus(inputs.corpus), None, None, root / "served-index")
    lexical = HybridRetriever(ctx)
    served = {q.number: lexical.search_component("lexical", q.text, served_depth) for q in collection.queries}
    counts = cc.write_serve_log(collection, served, inputs.logs, LOG_START, LOG_DAYS)
    counts["judgments"] = judgments
    counts["served_depth"] = served_depth
    counts["days"] = len(list(inputs.logs.iterdir()))
    return inputs, counts, served


def golden_state(home: Home) -> dict:
    """What the latest build holds, read from the public tables."""
    rows = home.query("SELECT source, relevance, grade, count(*) FROM golden_set GROUP BY ALL")
    by = {(s, r, g): n for s, r, g, n in rows}
    build = home.query(
        "SELECT build_id, n_queries, n_helped, n_noise, n_wrong, n_human_labels, "
        "human_labels_unused, log_labels_overridden, label_lines_rejected FROM golden_builds ORDER BY build_id DESC LIMIT 1"
    )[0]
    queries_relevant = home.query("SELECT count(DISTINCT query_id) FROM golden_set WHERE relevance = 1")[0][0]
    golden_ids = sorted(q for (q,) in home.query("SELECT DISTINCT query_id FROM golden_set"))
    return {
        "build_id": build[0],
        "n_queries": build[1],
        "n_helped": build[2],
        "n_noise": build[3],
        "n_wrong": build[4],
        "n_human_labels": build[5],
        "human_labels_unused": build[6],
        "log_labels_overridden": build[7],
        "label_lines_rejected": build[8] or 0,
        "queries_with_relevant": queries_relevant,
        "human_relevant": sum(n for (s, r, _), n in by.items() if s == "human" and r == 1),
        "human_grade2": sum(n for (s, _, g), n in by.items() if s == "human" and g == 2),
        "query_ids": golden_ids,
    }


def per_query(home: Home, run_id: str) -> dict[str, dict[str, float]]:
    rows = home.query(
        "SELECT metric, query_id, value FROM benchmark_results "
        "WHERE run_id = ? AND row_name = 'core' AND query_id <> 'all'",
        [run_id],
    )
    out: dict[str, dict[str, float]] = {}
    for metric, qid, value in rows:
        out.setdefault(metric, {})[qid] = value
    return out


def answer_queue(collection: cc.Collection, queue: list[dict], labels: Path | None) -> dict:
    """Act as the annotator: one label line per queued pair, from Cranfield's judgments (None: count only)."""
    by_id = {q.query_id: q for q in collection.queries}
    lines, relevant, grade2 = [], 0, 0
    for i, task in enumerate(queue):
        query = by_id.get(task["query_id"])
        if query is None:
            raise PipelineError(
                f"the queue names query_id {task['query_id']} ({task['task']!r}), which is no "
                "Cranfield query's id by contract section 3"
            )
        line = cc.label_line(collection, query, task, LABEL_TS + timedelta(seconds=i))
        grade = collection.grade(query.number, cc.doc_number(task["doc_id"]))
        relevant += grade >= 1
        grade2 += grade == 2
        lines.append(json.dumps(line))
    if lines and labels is not None:
        day = labels / f"dt={LABEL_TS.date().isoformat()}"
        day.mkdir(parents=True, exist_ok=True)
        (day / f"{cc.ANNOTATOR}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    reasons: dict[str, int] = {}
    for task in queue:
        reasons[task["reason"]] = reasons.get(task["reason"], 0) + 1
    return {"queued": len(queue), "relevant": relevant, "grade2": grade2, "reasons": reasons}


def measure(home: Home, label: str, qrels: cm.Qrels) -> dict:
    """Bench run core and lexical alone, compare them, and recompute both runs against `qrels`."""
    core = home.bench_run()
    lexical = home.bench_run(LEXICAL_ONLY)
    runs = {
        name: cm.read_run(home.path / "reports" / run_id / "core.run")
        for name, run_id in (("core", core), ("lexical", lexical))
    }
    return {
        "label": label,
        "core": core,
        "lexical": lexical,
        "core_values": per_query(home, core),
        "lexical_values": per_query(home, lexical),
        "lexical_vs_core": home.compare(lexical, core),
        "recomputed": {name: cm.means(run, qrels) for name, run in runs.items()},
        "run_files": runs,
    }


def log_qrels(collection: cc.Collection, served: dict, golden_ids: list[str]) -> cm.Qrels:
    """What the golden set must hold from the log alone: each served document, grade 1 if relevant."""
    by_id = {q.query_id: q for q in collection.queries}
    out: cm.Qrels = {}
    for qid in golden_ids:
        q = by_id[qid]
        out[qid] = {doc: int(collection.grade(q.number, cc.doc_number(doc)) >= 1) for doc, _ in served[q.number]}
    return out


def with_answers(collection: cc.Collection, qrels: cm.Qrels, queue: list[dict]) -> cm.Qrels:
    by_id = {q.query_id: q for q in collection.queries}
    out = {q: dict(v) for q, v in qrels.items()}
    for task in queue:
        grade = collection.grade(by_id[task["query_id"]].number, cc.doc_number(task["doc_id"]))
        out.setdefault(task["query_id"], {})[task["doc_id"]] = grade
    return out


def config_name(rankers: str, depth: int) -> str:
    return f"{rankers.replace(',', '+')}@{depth}"


def run(args: argparse.Namespace) -> dict:
    started = time.monotonic()
    collection = cc.read_collection(Path(args.collection))
    workdir = Path(args.workdir).resolve()
    prepare_workdir(workdir, __file__)
    inputs, log_counts, served = convert(collection, workdir / "input", args.served_depth)

    base = Home(workdir / "base", inputs, in_process=args.in_process)
    base.path.mkdir()
    rubric = base.rubric_check()
    base.build()
    before_state = golden_state(base)
    before_qrels = log_qrels(collection, served, before_state["query_ids"])
    before = measure(base, "log only", before_qrels)
    before["truth_core"] = base.eval_full(before["core"])
    before["truth_lexical"] = base.eval_full(before["lexical"])
    truth = full_qrels(collection)
    for name in ("core", "lexical"):
        before["recomputed"][f"truth_{name}"] = cm.means(before["run_files"][name], truth)
        before[f"truth_{name}_values"] = cm.per_query(before["run_files"][name], truth)

    configs = [(r, d) for r in args.rankers for d in args.depths]
    pools: dict[str, dict] = {}
    for rankers, depth in configs:
        name = config_name(rankers, depth)
        folder = workdir / "pools" / name.replace("+", "-").replace("@", "-d")
        folder.mkdir(parents=True)
        pool_report = base.pool(rankers, depth)
        queue = base.pool_export(folder / "queue.jsonl")
        (folder / "pool.json").write_text(json.dumps(pool_report, indent=1), encoding="utf-8")
        pools[name] = {"rankers": rankers, "depth": depth, "folder": folder, "report": pool_report, "queue": queue}

    results = []
    for name, pool in pools.items():
        if args.measure == "main" and name != args.main:
            results.append(
                {
                    "name": name,
                    "rankers": pool["rankers"].split(","),
                    "depth": pool["depth"],
                    "pool": pool["report"],
                    "answers": answer_queue(collection, pool["queue"], None),
                    "state": None,
                    "after": None,
                    "commands": [],
                }
            )
            continue
        home = Home(pool["folder"] / "home", inputs, in_process=args.in_process)
        # A copy of the log-only home: the warehouse with its embeddings, indexes and the
        # runs before labels, so that every pool is judged alone and compared with the same runs.
        shutil.copytree(base.path, home.path)
        answers = answer_queue(collection, pool["queue"], home.labels)
        home.build()
        state = golden_state(home)
        after = measure(home, f"after {name}", with_answers(collection, before_qrels, pool["queue"]))
        after["before_vs_after"] = home.compare(before["core"], after["core"])
        after["lexical_before_vs_after"] = home.compare(before["lexical"], after["lexical"])
        results.append(
            {
                "name": name,
                "rankers": pool["rankers"].split(","),
                "depth": pool["depth"],
                "pool": pool["report"],
                "answers": answers,
                "state": state,
                "after": after,
                "commands": home.commands,
            }
        )

    figures = report.figures(collection, log_counts, rubric, before_state, before, results, args.main)
    figures["seconds"] = round(time.monotonic() - started, 1)
    figures["commands"] = base.commands + [c for r in results for c in r["commands"]]
    figures["rerun"] = "python benchmarks/cranfield_pooling.py " + shlex.join(args.argv)
    return figures


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    pipeline_arguments(p, __file__)
    p.add_argument(
        "--rankers",
        action="append",
        help=f"a comma-separated ranker set to pool with; repeat (default {' '.join(DEFAULT_RANKERS)})",
    )
    p.add_argument("--depths", default="5,10", help="pool depths, comma-separated (default 5,10)")
    p.add_argument("--served-depth", type=int, default=5, help="documents production served per query (default 5)")
    p.add_argument(
        "--main",
        help="the pool whose before/after is reported in full (default: the first ranker set "
        "at the largest depth), e.g. lexical+dense+core@10",
    )
    p.add_argument(
        "--measure",
        choices=["all", "main"],
        default="all",
        help="label, rebuild and benchmark after every pool (all, the default) or only the main one; "
        "the others are then counted from their queue and cranqrel",
    )
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.rankers = args.rankers or DEFAULT_RANKERS
    try:
        args.depths = [int(d) for d in args.depths.split(",")]
    except ValueError:
        p.error(f"--depths {args.depths!r}: give integers separated by commas, e.g. 5,10")
    if any(d < 1 for d in args.depths) or args.served_depth < 1:
        p.error("depths must be at least 1")
    args.main = args.main or config_name(args.rankers[0], max(args.depths))
    if args.main not in {config_name(r, d) for r in args.rankers for d in args.depths}:
        p.error(f"--main {args.main!r} is not one of the pools asked for")
    return args


def main(argv: list[str] | None = None) -> int:
    return study_main(parse_args(argv), __file__, run, report.markdown)


if __name__ == "__main__":
    sys.exit(main())
