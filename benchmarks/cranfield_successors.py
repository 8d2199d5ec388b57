"""Successors on Cranfield: does queueing the successors of not-relevant documents last cost relevant finds?

    python benchmarks/cranfield_successors.py /work/shared/reference/cranfield --workdir /tmp/cranfield-successors
        [--share 0.25] [--seed 0] [--rankers lexical,dense,core] [--depth 5] [--budgets 100,200,300,400]

Cranfield has no superseded document, so the pooling study's queue holds no `successor` row and
contract 7.4's successor rule (changed in v5, issue 38) cannot move it. This study gives the
collection a reindex: the inputs of cranfield_pooling.py (the log of the lexical ranker's top 5,
Cranfield's verdicts), then a corpus in which a seeded share of the documents the log served is
superseded by a copy (`cran-0042` gets `superseded_by` `cran-0042-r`, a new document with the same
title and text; the copy's Cranfield grade is its original's). One process per command, under
GOLDENSET_HOME=WORKDIR/home: `rubric check`, `build` (the log), `build --corpus` (the reindex),
`pool --rankers R --depth K`.

The queue is the one the code writes (successors of a document judged relevant for the query
first, the others after every pooled pair). The rule it replaces is the same rows in v4's order
(every successor before every pooled pair; then best rank, more rankers, query_id, doc_id),
re-sorted here from the queue's own columns. An annotator labels each queue from the top; for
each budget B the report gives the relevant pairs (Cranfield grade >= 1) among the first B
rows under each order and the relevant found per judgment, and the share of relevant pairs
among the successors of relevant and of not-relevant documents.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import cranfield_collection as cc
from cranfield_pooling import convert
from cranfield_study import Home, pipeline_arguments, prepare_workdir, study_main, table

V4_REASONS = ("stale", "successor", "audit", "pooled")
SUFFIX = "-r"


def reindexed_corpus(collection: cc.Collection, served: dict, share: float, seed: int, path: Path) -> dict[str, str]:
    """Write the corpus with a seeded share of the served documents superseded by a copy; copy -> original."""
    served_docs = sorted({doc for hits in served.values() for doc, _ in hits})
    chosen = set(random.Random(seed).sample(served_docs, round(share * len(served_docs))))
    copies: dict[str, str] = {}
    by_id = {d.doc_id: d for d in collection.docs}
    with open(path, "w", encoding="utf-8") as fh:
        for d in collection.docs:
            row = {"doc_id": d.doc_id, "version": cc.DOC_VERSION, "status": "active", "title": d.title, "text": d.text}
            if d.doc_id in chosen:
                copies[d.doc_id + SUFFIX] = d.doc_id
                row["superseded_by"] = d.doc_id + SUFFIX
            fh.write(json.dumps(row) + "\n")
        for copy, original in sorted(copies.items()):
            d = by_id[original]
            row = {"doc_id": copy, "version": cc.DOC_VERSION, "status": "active", "title": d.title, "text": d.text}
            fh.write(json.dumps(row) + "\n")
    return copies


def v4_order(rows: list[tuple]) -> list[tuple]:
    """The queue in contract 7.4's order before v5: reason, best rank (nulls last), more rankers, ids."""
    return sorted(rows, key=lambda r: (V4_REASONS.index(r[2]), r[4] is None, r[4] or 0, -len(r[3] or []), r[0], r[1]))


def run(args: argparse.Namespace) -> dict:
    workdir = Path(args.workdir)
    prepare_workdir(workdir, __file__)
    collection = cc.read_collection(Path(args.collection))
    inputs, counts, served = convert(collection, workdir / "input", 5)
    home = Home(workdir / "home", inputs, in_process=args.in_process)
    home.path.mkdir(parents=True)
    home.rubric_check()
    home.build()
    reindex = workdir / "input" / "corpus-reindexed.jsonl"
    copies = reindexed_corpus(collection, served, args.share, args.seed, reindex)
    home.run("build", "--logs", inputs.logs, "--corpus", reindex, "--rubric", inputs.rubric)
    home.pool(args.rankers, args.depth)
    rows = home.query("SELECT query_id, doc_id, reason, rankers, best_rank FROM labelling_queue ORDER BY priority")
    by_id = {q.query_id: q.number for q in collection.queries}

    def relevant(row: tuple) -> bool:
        doc = copies.get(row[1], row[1])
        return collection.grade(by_id[row[0]], cc.doc_number(doc)) >= 1

    first_pooled = next((i for i, r in enumerate(rows) if r[2] == "pooled"), len(rows))
    early = [r for r in rows[:first_pooled] if r[2] == "successor"]
    late = [r for r in rows[first_pooled:] if r[2] == "successor"]
    orders = {"v5 (queued)": rows, "v4": v4_order(rows)}
    budgets = [b for b in args.budgets if b <= len(rows)] + [len(rows)]
    found = {name: {b: sum(relevant(r) for r in order[:b]) for b in budgets} for name, order in orders.items()}
    return {
        "share": args.share,
        "seed": args.seed,
        "rankers": args.rankers,
        "depth": args.depth,
        "log": counts,
        "superseded": len(copies),
        "queue": {reason: sum(1 for r in rows if r[2] == reason) for reason in V4_REASONS},
        "successors": {
            "of_relevant": {"rows": len(early), "relevant": sum(map(relevant, early))},
            "of_not_relevant": {"rows": len(late), "relevant": sum(map(relevant, late))},
        },
        "pooled_relevant": sum(relevant(r) for r in rows if r[2] == "pooled"),
        "found": found,
        "commands": home.commands,
    }


def markdown(f: dict) -> str:
    s = f["successors"]
    rows = []
    for b in f["found"]["v4"]:
        new, old = f["found"]["v5 (queued)"][b], f["found"]["v4"][b]
        rows.append([str(b), str(old), f"{old / b:.3f}", str(new), f"{new / b:.3f}", f"{new - old:+d}"])
    lines = [
        "# Successors on Cranfield",
        "",
        f"{f['superseded']} documents the log served superseded by copies (share {f['share']}, seed {f['seed']}); "
        f"pool {f['rankers']} at depth {f['depth']}: queue {f['queue']}.",
        "",
        f"Successors of a document judged relevant: {s['of_relevant']['rows']}, of which "
        f"{s['of_relevant']['relevant']} relevant; of a document judged not relevant: {s['of_not_relevant']['rows']}, "
        f"of which {s['of_not_relevant']['relevant']} relevant. Pooled pairs relevant: {f['pooled_relevant']}.",
        "",
        *table(
            [
                "judgments (first B rows)",
                "v4: relevant found",
                "per judgment",
                "v5: relevant found",
                "per judgment",
                "v5 - v4",
            ],
            rows,
        ),
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pipeline_arguments(p, __file__)
    p.add_argument("--share", type=float, default=0.25, help="share of the served documents superseded (0.25)")
    p.add_argument("--seed", type=int, default=0, help="seed of the documents chosen (0)")
    p.add_argument("--rankers", default="lexical,dense,core", help="the pool's rankers (lexical,dense,core)")
    p.add_argument("--depth", type=int, default=5, help="the pool's depth (5)")
    p.add_argument(
        "--budgets", type=lambda t: [int(x) for x in t.split(",")], default=[100, 200, 300, 400],
        help="judgments from the top of the queue to count at (100,200,300,400; the whole queue is added)",
    )  # fmt: skip
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return study_main(parse_args(argv), __file__, run, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
