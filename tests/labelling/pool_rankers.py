"""Plug-in rankers with fixed output, and the hand-made golden build they rank (pool tests).

The rankers are `module:factory` retrievers (`pool_rankers:first`, `pool_rankers:second`,
`pool_rankers:failing`); each answers from a fixed table keyed by the query text, so every
queue row, priority and count of the tests is worked out by hand below.

The world (`build_world`): one real ingest, snapshot and build of a tiny log over this corpus

    doc  version  status   superseded_by  in the log
    a    v1       active   -              Q1 ranked, helped at v1        -> golden, fresh
    b    v2       active   -              Q1 ranked, helped at v1        -> golden, stale version_changed
    c    v1       active   c2             Q1 ranked, noise at v1         -> golden, stale superseded
    c2   v1       active   -
    d    v1       retired  d2             Q1 ranked, helped; Q3 noise    -> dropped (retired)
    d2   v3       active   -
    e    v1       retired  e2             (a current label of ana on Q2)
    e2   v1       active   -
    f    v1       active   f2             Q2 always, helped              -> dropped (always_served)
                                          (and a current judge label on Q1)
    f2   v1       active   -
    g    v1       active   -              Q1 always, helped              -> dropped (always_served)
    h    v1       active   -              Q3 ranked, wrong               -> dropped (no_positive)
    i j  v1       active   -
    k    v1       active   -              Q2 ranked, noise at v1         -> golden, fresh
    m    v2       active   m2             Q1 ranked, wrong at v1         -> golden, stale superseded
    m2   v1       active   -
    n    v1       active   -              Q2 ranked, helped at v1        -> golden, fresh
    p    v1       retired  a              (a current label of ana on Q1: a is golden already)

Q1 and Q2 are golden; Q3 has no helped judgment and is not.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
for folder in (HERE, TESTS):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from helpers import World, always, copy_built_folder, doc, ranked, serve, verdict, write_corpus, write_log  # noqa: E402

from goldenset.records import normalise_task, query_id  # noqa: E402

PROJECT = "billing"
Q1_TASK = "How long is the refund window?"
Q2_TASK = "When are invoices sent"
Q3_TASK = "Reset my password"
Q1 = query_id(PROJECT, normalise_task(Q1_TASK))
Q2 = query_id(PROJECT, normalise_task(Q2_TASK))
Q3 = query_id(PROJECT, normalise_task(Q3_TASK))

FIRST = "pool_rankers:first"
SECOND = "pool_rankers:second"
FAILING = "pool_rankers:failing"

# Each ranker's answer, best first; `zz` is not in the snapshot, `h` repeats in second's Q1 list.
ANSWERS = {
    "first": {Q1_TASK: ["a", "g", "h", "c2", "b", "j"], Q2_TASK: ["k", "i", "zz", "f2", "n"]},
    "second": {Q1_TASK: ["h", "h", "m", "a", "j", "d2"], Q2_TASK: ["f2", "i", "e2", "k"]},
}

CORPUS = [
    doc("a"),
    doc("b", "v2"),
    doc("c", superseded_by="c2"),
    doc("c2"),
    doc("d", status="retired", superseded_by="d2"),
    doc("d2", "v3"),
    doc("e", status="retired", superseded_by="e2"),
    doc("e2"),
    doc("f", superseded_by="f2"),
    doc("f2"),
    doc("g"),
    doc("h"),
    doc("i"),
    doc("j"),
    doc("k"),
    doc("m", "v2", superseded_by="m2"),
    doc("m2"),
    doc("n"),
    doc("p", status="retired", superseded_by="a"),
]

DAY = "2026-11-28"
BUILT_AT = datetime(2026, 11, 29, 2, 0, 0)


class FixedRanker:
    """A retriever that answers from ANSWERS[name]; unknown queries find nothing."""

    def __init__(self, name: str):
        self.name = name
        self.calls: list[tuple[str, int]] = []

    def components(self) -> list[str]:
        return ["fixed"]

    def search_component(self, name: str, query: str, k: int) -> list[tuple[str, float]]:
        return self.search(query, k)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        self.calls.append((query, k))
        docs = ANSWERS[self.name].get(query, [])
        # Scores fall with the place, so the list is best first; more than k may come back.
        return [(d, 1.0 / r) for r, d in enumerate(docs, start=1)]


class FailingRanker(FixedRanker):
    """A retriever whose search raises, as an index that is down would."""

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        raise RuntimeError("index offline: connection refused")


def first(ctx) -> FixedRanker:
    return FixedRanker("first")


def second(ctx) -> FixedRanker:
    return FixedRanker("second")


def third(ctx) -> FixedRanker:
    """Answers exactly what `first` answers."""
    return FixedRanker("first")


def failing(ctx) -> FailingRanker:
    return FailingRanker("first")


def write_world_logs(logs: Path) -> Path:
    """The serve log of the world: Q1, Q2 and Q3 with their verdicts."""
    write_log(
        logs,
        DAY,
        "part-0001.jsonl",
        [
            serve(
                "s1",
                f"{DAY}T10:00:00Z",
                Q1_TASK,
                [ranked("a", 1), ranked("b", 2), ranked("c", 3), ranked("d", 4), ranked("m", 5), always("g")],
                project=PROJECT,
            ),
            serve("s2", f"{DAY}T10:05:00Z", Q2_TASK, [ranked("n", 1), ranked("k", 2), always("f")], project=PROJECT),
            serve("s3", f"{DAY}T10:10:00Z", Q3_TASK, [ranked("d", 1), ranked("h", 2)], project=PROJECT),
            verdict("s1", "a", "helped", f"{DAY}T11:00:00Z"),
            verdict("s1", "b", "helped", f"{DAY}T11:00:01Z"),
            verdict("s1", "c", "noise", f"{DAY}T11:00:02Z"),
            verdict("s1", "d", "helped", f"{DAY}T11:00:03Z"),
            verdict("s1", "m", "wrong", f"{DAY}T11:00:04Z"),
            verdict("s1", "g", "helped", f"{DAY}T11:00:05Z"),
            verdict("s2", "n", "helped", f"{DAY}T11:05:00Z"),
            verdict("s2", "k", "noise", f"{DAY}T11:05:01Z"),
            verdict("s2", "f", "helped", f"{DAY}T11:05:02Z"),
            verdict("s3", "d", "noise", f"{DAY}T11:10:00Z"),
            verdict("s3", "h", "wrong", f"{DAY}T11:10:01Z"),
        ],
    )
    return logs


def add_current_label(
    con,
    query: str,
    doc_id: str,
    doc_version: str,
    *,
    annotator: str = "ana",
    label: str = "relevant",
    grade: int = 2,
    kind: str = "human",
    line: int = 1,
) -> None:
    """One accepted label line, as the label ingestion would store it (human_labels is public)."""
    con.execute(
        "INSERT INTO human_labels BY NAME SELECT ? AS source_file, ? AS dt, ? AS file_name, ? AS line, "
        "? AS query_id, ? AS doc_id, ? AS doc_version, ? AS label, ? AS grade, 'answerability' AS decided_by, "
        "? AS annotator, ? AS kind, 'support-policies' AS rubric, ? AS ts, NULL AS dimensions, NULL AS note, "
        "'{}' AS raw",
        [
            f"dt={DAY}/page-{annotator}.jsonl",
            DAY,
            f"page-{annotator}.jsonl",
            line,
            query,
            doc_id,
            doc_version,
            label,
            grade,
            annotator,
            kind,
            datetime(2026, 11, 29, 9, 0, line),
        ],
    )


def build_world(tmp: Path, *, labels: bool = True) -> World:
    """Run the real ingest, snapshot and build on the world's files; add ana's current labels."""
    from goldenset import warehouse
    from goldenset.build import build_golden_set
    from goldenset.corpus import read_corpus
    from goldenset.ingest import ingest_all
    from goldenset.snapshots import store_snapshot

    world = World(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    write_world_logs(world.logs)
    write_corpus(world.corpus, CORPUS)
    con = warehouse.connect(world.db)
    try:
        ingest_all(con, world.logs)
        store_snapshot(con, read_corpus(world.corpus), now=BUILT_AT)
        build_golden_set(con, now=BUILT_AT)
        if labels:
            add_current_label(con, Q2, "e", "v1")  # e is retired, superseded by e2: a successor via a label
            add_current_label(con, Q3, "e", "v1", line=2)  # Q3 is not golden: no successor
            add_current_label(con, Q1, "f", "v1", kind="judge", line=3)  # any kind counts: f2 succeeds f on Q1
            add_current_label(con, Q1, "p", "v1", line=4)  # p -> a, and (Q1, a) is golden: no successor
    finally:
        con.close()
    return world


def copy_world(template: World, tmp: Path) -> World:
    """The World build_world would have made at `tmp`, copied from `template` in milliseconds."""
    world = World(tmp)
    copy_built_folder(template.db.parent, tmp, world.db, template.corpus, world.corpus)
    return world


def dumps(value) -> str:
    return json.dumps(value, sort_keys=True)
