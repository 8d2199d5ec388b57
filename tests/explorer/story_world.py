"""The story world: queries that join and leave the golden set for every reason, built once.

Three builds through the library (no Dagster), two benchmark runs with the small retrievers
below, and a pool from the second run with an audit of two queries. Each query is there for
a rule (the contract's sections 3 and 7.3, as changed in v5):

| query (project)                        | build 1                 | build 2                         | build 3            |
| -------------------------------------- | ----------------------- | ------------------------------- | ------------------ |
| RESET  How do I reset my password?     | in (log), repeats fold  | in                              | in                 |
| RULES  Which rules apply here?         | out: always_served      | out                             | out                |
| HANDBOOK  Where is the old handbook?   | out: retired            | out                             | out                |
| GDB  ... GNU Debugger? (debian)        | in (log)                | in (human: the verdict flipped) | in (human)         |
| REFUND  What is the refund window?     | out: grade 0 only       | in (human: partial, grade 1)    | out: irrelevant 2:1|
| EXPENSES  How do I file expenses?      | in (log)                | out: its document retired       | out                |
| VPN  Where is the VPN guide?           | in (human, v1 current)  | out: label at v1, now v2 (a     | out                |
|                                        |                         | judge's v2 positive not counted)|                    |

RESET's serves carry four raw texts: three fold to the display text "How do I reset my
password?" (one of them full-width, the latest served), one ("HOW DO I RESET MY PASSWORD?")
keeps its capitals and loses, 1 serve to 3.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from goldenset.bench.runner import BenchConfig, run_benchmark
from goldenset.bench.runs import store_run
from goldenset.build import build_golden_set
from goldenset.corpus import read_corpus
from goldenset.ingest import ingest_all
from goldenset.labelling.ingest import ingest_labels
from goldenset.labelling.pool import run_pool
from goldenset.labelling.rubric import load_rubric
from goldenset.records import normalise_task, query_id
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from tests.helpers import (
    LENIENT,
    RUBRIC_PATH,
    World,
    always,
    doc,
    label_line,
    ranked,
    serve,
    verdict,
    write_corpus,
    write_labels,
    write_log,
)

TASKS = {
    "RESET": ("support", "How do I reset my password?"),
    "RULES": ("support", "Which rules apply here?"),
    "HANDBOOK": ("support", "Where is the old handbook?"),
    "GDB": ("debian", "Is there something installed for GNU Debugger?"),
    "REFUND": ("support", "What is the refund window?"),
    "EXPENSES": ("support", "How do I file expenses?"),
    "VPN": ("support", "Where is the VPN guide?"),
}
QID = {name: query_id(p, normalise_task(t)) for name, (p, t) in TASKS.items()}
DAY1, DAY2 = "2026-11-01", "2026-11-02"


def _docs(build: int) -> list[dict]:
    """Build 1's corpus; build 2 on retire d-expenses and move d-vpn to v2."""
    later = build >= 2
    return [
        doc("d-reset", text="Reset your password from the sign-in page with the emailed link."),
        doc("d-2fa", text="Two-factor authentication codes come from the authenticator app."),
        doc("deb/gdb", text="gdb, the GNU Debugger, is installed in the debian image."),
        doc("deb/lldb", text="lldb is the LLVM debugger."),
        doc("d-refund", text="Refunds are accepted within 14 days of purchase."),
        doc("d-old", status="retired", text="The old handbook."),
        doc("d-expenses", status="retired" if later else "active", text="File expenses in the expenses tool."),
        doc("d-vpn", version="v2" if later else "v1", text="The VPN guide explains how to connect to the VPN."),
        doc("rule-1", text="Answer from the handbook only."),
    ]


def _task(name: str) -> str:
    return TASKS[name][1]


def _day1() -> list[dict]:
    r, sp = _task("RESET"), "support"
    return [
        serve("sR0", "2026-11-01T08:00:00Z", "HOW DO I RESET MY PASSWORD?", [ranked("d-reset", 1)], project=sp),
        serve("sR1", "2026-11-01T09:00:00Z", r, [ranked("d-reset", 1), ranked("d-2fa", 2)], project=sp),
        verdict("sR1", "d-reset", "helped", "2026-11-01T09:01:00Z"),
        verdict("sR1", "d-2fa", "noise", "2026-11-01T09:01:00Z"),
        serve("sR2", "2026-11-01T10:00:00Z", r.replace("reset", "reset "), [ranked("d-reset", 1)], project=sp),
        verdict("sR2", "d-reset", "helped", "2026-11-01T10:01:00Z"),
        serve("sR3", "2026-11-01T11:00:00Z", "\uff28" + r[1:], [always("rule-1"), ranked("d-2fa", 1)], project=sp),
        verdict("sR3", "rule-1", "helped", "2026-11-01T11:01:00Z"),
        serve("sA1", "2026-11-01T09:00:00Z", _task("RULES"), [always("rule-1")], project=sp),
        verdict("sA1", "rule-1", "helped", "2026-11-01T09:01:00Z"),
        serve("sH1", "2026-11-01T09:00:00Z", _task("HANDBOOK"), [ranked("d-old", 1)], project=sp),
        verdict("sH1", "d-old", "helped", "2026-11-01T09:01:00Z"),
        serve("sG1", "2026-11-01T09:00:00Z", _task("GDB"), [ranked("deb/gdb", 1), ranked("deb/lldb", 2)], "debian"),
        verdict("sG1", "deb/gdb", "helped", "2026-11-01T09:01:00Z"),
        verdict("sG1", "deb/lldb", "noise", "2026-11-01T09:01:00Z"),
        serve("sF1", "2026-11-01T09:00:00Z", _task("REFUND"), [ranked("d-refund", 1)], project=sp),
        verdict("sF1", "d-refund", "noise", "2026-11-01T09:01:00Z"),
        serve("sE1", "2026-11-01T09:00:00Z", _task("EXPENSES"), [ranked("d-expenses", 1)], project=sp),
        verdict("sE1", "d-expenses", "helped", "2026-11-01T09:01:00Z"),
        serve("sV1", "2026-11-01T09:00:00Z", _task("VPN"), [ranked("d-vpn", 1)], project=sp),
        verdict("sV1", "d-vpn", "noise", "2026-11-01T09:01:00Z"),
    ]


def _labels(build: int) -> list[tuple[str, list[dict]]]:
    """The label files of each build: (dt, lines)."""
    files = [
        (
            DAY1,
            [
                label_line(QID["GDB"], "deb/gdb", "relevant", "2026-11-01T12:00:00Z"),
                label_line(QID["REFUND"], "d-refund", "irrelevant", "2026-11-01T12:00:00Z"),
                label_line(QID["VPN"], "d-vpn", "partial", "2026-11-01T12:00:00Z"),
            ],
        )
    ]
    if build >= 2:
        refund = label_line(QID["REFUND"], "d-refund", "partial", "2026-11-02T12:00:00Z", annotator="ben")
        # A judge's positive at the current version never keeps a query (contract v5): VPN still leaves.
        judge = label_line(QID["VPN"], "d-vpn", "relevant", "2026-11-02T12:00:00Z", annotator="judge-x", version="v2")
        files.append((DAY2, [refund, {**judge, "kind": "judge"}]))
    if build >= 3:
        files.append(
            (
                "2026-11-03",
                [label_line(QID["REFUND"], "d-refund", "irrelevant", "2026-11-03T12:00:00Z", annotator="cy")],
            )
        )
    return files


@dataclass
class StoryWorld(World):
    """The story world's folder: logs, labels, corpus, warehouse; `runs` the two benchmark runs' ids."""

    runs: tuple[str, ...] = ()


def _build(con, world: StoryWorld, n: int) -> None:
    write_corpus(world.corpus, _docs(n))
    for dt, lines in _labels(n):
        write_labels(world.labels, dt, "ana.jsonl", lines)
    if n == 2:
        # The agent's verdict on deb/gdb flips to noise, a day later.
        write_log(world.logs, DAY2, "part-0001.jsonl", [verdict("sG1", "deb/gdb", "noise", "2026-11-02T09:00:00Z")])
    ingest_all(con, world.logs)
    ingest_labels(con, world.labels, load_rubric(RUBRIC_PATH))
    store_snapshot(con, read_corpus(world.corpus))
    build_golden_set(con, checks=LENIENT)


def build_story(root: Path) -> StoryWorld:
    """Make the story world under `root` (about a second): three builds, two runs, a pool with an audit."""
    world = StoryWorld(root)
    root.mkdir(parents=True, exist_ok=True)
    write_log(world.logs, DAY1, "part-0001.jsonl", _day1())
    con = connect(world.db)
    try:
        for n in (1, 2, 3):
            _build(con, world, n)
        runs = []
        for i, name in enumerate(("words", "reverse")):
            config = BenchConfig(retriever=f"story_world:{name}", index_dir=root / "index", k_values=(1, 3))
            run = run_benchmark(con, read_corpus(world.corpus), None, config)  # type: ignore[arg-type]
            run.run_id = f"run-{i + 1}-{name}"
            store_run(con, run)
            runs.append(run.run_id)
        run_pool(con, rankers=None, from_run=runs[1], depth=3, index_dir=root / "index", audit=2, seed=0)
    finally:
        con.close()
    world.runs = tuple(runs)
    return world


def copy_story(template: StoryWorld, root: Path) -> StoryWorld:
    """A test's own copy of the story world."""
    shutil.copytree(template.root, root)
    return StoryWorld(root, template.runs)


# --------------------------------------------------------------------------- retrievers of the runs


class _Words:
    """Score = words shared by the query and the document's text (a tiny honest retriever)."""

    def __init__(self, ctx, reverse: bool = False):
        self.docs = {d.doc_id: set(d.text.lower().split()) for d in ctx.corpus.active.values()}
        self.reverse = reverse

    def components(self):
        return ["words"]

    def search_component(self, name, query, k):
        return self.search(query, k)

    def search(self, query, k):
        q = set(query.lower().split())
        scored = sorted(((d, float(len(q & w))) for d, w in self.docs.items()), key=lambda p: (-p[1], p[0]))
        if self.reverse:
            scored = [(d, float(len(scored) - i)) for i, (d, _) in enumerate(reversed(scored))]
            scored.sort(key=lambda p: (-p[1], p[0]))
        return scored[:k]


def words(ctx):
    return _Words(ctx)


def reverse(ctx):
    return _Words(ctx, reverse=True)
