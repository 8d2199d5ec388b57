"""A small hand-made golden build with human labels, made by the real pipeline (the CLI tests of scoring).

    project  query  log (serve: verdicts)                      documents
    billing  Q1     s1: r1 helped, r2 noise                    r1 r2 d1 .. d4, p1 .. p3, d9, b1 .. b8
    billing  Q3     s3: r3 helped                              r3
    auth     Q2     s2: a1 helped, a2 wrong                    a1 a2 d5 .. d8

Every document is active at v1 with the text TEXT[doc]. Accepted serves per
project (the traffic weights): billing 2, auth 1. Human labels are label lines
under LABELS written by `append_labels`; `SEVEN` is the set of the calibration
unit tests (scores 0.1 .. 0.7, acceptable as below) on seven human-labelled pairs,
and `SCORES` gives every document's score for the `score_plugins:table` scorer
(d8 has none: scoring it raises KeyError, an error pair).
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

from helpers import World, copy_built_folder, doc, ranked, serve, verdict, write_corpus, write_log  # noqa: E402

from goldenset.records import normalise_task, query_id  # noqa: E402

RUBRIC = TESTS / "data" / "conformance" / "rubric.yaml"
# The keys of `calibrate --json` without options, in contract 8.5's order, written out by hand.
CONTRACT_KEYS = [
    "scorer",
    "version",
    "against",
    "pairs",
    "acceptable",
    "unacceptable",
    "errors",
    "error_pairs",
    "cutoffs",
    "single",
    "band",
    "band_note",
]
RUBRIC_NAME = "support-policies"
Q1_TASK = "How long is the refund window?"
Q2_TASK = "When do API tokens expire?"
Q3_TASK = "Can I pay by invoice?"
Q1 = query_id("billing", normalise_task(Q1_TASK))
Q2 = query_id("auth", normalise_task(Q2_TASK))
Q3 = query_id("billing", normalise_task(Q3_TASK))
DAY = "2026-11-28"
BUILT_AT = datetime(2026, 11, 29, 2, 0, 0)

DOCS = (
    "r1",
    "r2",
    "r3",
    "a1",
    "a2",
    "d1",
    "d2",
    "d3",
    "d4",
    "d5",
    "d6",
    "d7",
    "d8",
    "d9",
    "p1",
    "p2",
    "p3",
    "b1",
    "b2",
    "b3",
    "b4",
    "b5",
    "b6",
    "b7",
    "b8",
)
TEXT = {
    d: f"Policy text of {d}: refunds within {10 + i} days; tokens expire after {30 + i} days."
    for i, d in enumerate(DOCS)
}

# (query, doc, label, score): the seven pairs of the unit tests' SEVEN, scores 0.1 .. 0.7.
SEVEN = (
    (Q1, "d1", "irrelevant", 0.1),
    (Q1, "d2", "relevant", 0.2),
    (Q1, "d3", "irrelevant", 0.3),
    (Q1, "d4", "partial", 0.4),
    (Q2, "d5", "relevant", 0.5),
    (Q2, "d6", "irrelevant", 0.6),
    (Q2, "d7", "relevant", 0.7),
)
SCORES = {"r1": 0.9, "r2": 0.15, "r3": 0.55, "a1": 0.45, "a2": 0.65, "d9": 0.8, **{d: s for _, d, _, s in SEVEN}}
ADMISSIBLE = {"relevant": "answerability", "partial": "coverage", "irrelevant": "authority"}
# The audit tests' 15 pairs of Q1-Q3 (test_gate_audit, test_gate_weights): ana's labels, and the judge's,
# which calls Q2's d6 and four of Q3's pairs irrelevant.
AUDIT_ANA = {
    (Q1, "r1"): "relevant",
    (Q1, "d1"): "relevant",
    (Q1, "d2"): "relevant",
    (Q1, "d3"): "irrelevant",
    (Q1, "d4"): "irrelevant",
    (Q2, "a1"): "relevant",
    (Q2, "d5"): "relevant",
    (Q2, "d6"): "partial",
    (Q2, "d7"): "irrelevant",
    (Q2, "d8"): "irrelevant",
    (Q3, "r3"): "relevant",
    (Q3, "d9"): "relevant",
    (Q3, "p1"): "relevant",
    (Q3, "p2"): "partial",
    (Q3, "p3"): "relevant",
}
AUDIT_JUDGE = {**AUDIT_ANA, (Q2, "d6"): "irrelevant", **{(Q3, d): "irrelevant" for d in ("d9", "p1", "p2", "p3")}}


DOC_OF = {text: d for d, text in TEXT.items()}  # a passage the judge stub was sent -> its doc_id
GRADE = {"relevant": 2, "partial": 1, "irrelevant": 0}

# The judge tests' labels on the 12 pooled pairs (pool_world): ana labels five, the judge all
# twelve, agreeing with ana on four (test_judge_gate.py works the kappa out by hand).
ANA = {
    (Q1, "d1"): "relevant",
    (Q1, "d2"): "relevant",
    (Q1, "d3"): "partial",
    (Q2, "d5"): "irrelevant",
    (Q2, "d6"): "irrelevant",
}
JUDGE_ONLY = {
    (Q1, "d4"): "relevant",
    (Q2, "d7"): "partial",
    (Q2, "d8"): "irrelevant",
    (Q3, "d9"): "relevant",
    (Q3, "p1"): "irrelevant",
    (Q3, "p2"): "partial",
    (Q3, "p3"): "relevant",
}
JUDGE = {**ANA, (Q2, "d6"): "relevant", **JUDGE_ONLY}


def judge_label(world, url: str, *args: str, annotator="qwen", rubric=RUBRIC, timeout: str | None = None) -> int:
    """`goldenset judge label` in this process, against the judge stub at `url` (model stub-model);
    `timeout` is the per-request --timeout (else the command's default). The library's program:
    what the judge does, not its Dagster run (tests/test_command_runs.py)."""
    from goldenset.cli.app import main

    argv = ["judge", "label", "--annotator", annotator, "--judge-url", url, "--judge-model", "stub-model"]
    if timeout is not None:
        argv += ["--timeout", timeout]
    return main([*argv, "--labels", str(world.labels), "--rubric", str(rubric), *world.args(), *args])


def status_json(world, capsys) -> dict:
    """`goldenset status --json` of the world's warehouse, parsed."""
    from goldenset_dagster.cli import main

    capsys.readouterr()
    assert main(["status", "--db", str(world.db), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def scorer_config(scores: dict[str, float | list[float]] | None = None) -> str:
    """--scorer-config for score_plugins:table: each document's text mapped to its score(s)."""
    table = SCORES if scores is None else scores
    return json.dumps({"scores": {TEXT[d]: s for d, s in table.items()}})


def write_world_logs(logs: Path) -> None:
    write_log(
        logs,
        DAY,
        "part-0001.jsonl",
        [
            serve("s1", f"{DAY}T10:00:00Z", Q1_TASK, [ranked("r1", 1), ranked("r2", 2)], project="billing"),
            serve("s2", f"{DAY}T10:01:00Z", Q2_TASK, [ranked("a1", 1), ranked("a2", 2)], project="auth"),
            serve("s3", f"{DAY}T10:02:00Z", Q3_TASK, [ranked("r3", 1)], project="billing"),
            verdict("s1", "r1", "helped", f"{DAY}T11:00:00Z"),
            verdict("s1", "r2", "noise", f"{DAY}T11:00:01Z"),
            verdict("s2", "a1", "helped", f"{DAY}T11:00:02Z"),
            verdict("s2", "a2", "wrong", f"{DAY}T11:00:03Z"),
            verdict("s3", "r3", "helped", f"{DAY}T11:00:04Z"),
        ],
    )


def label_line(
    query: str, doc_id: str, label: str, ts: str, annotator: str = "ana", kind: str | None = None, version: str = "v1"
) -> dict:
    line = {
        "event": "label",
        "query_id": query,
        "doc_id": doc_id,
        "doc_version": version,
        "label": label,
        "decided_by": ADMISSIBLE[label],
        "annotator": annotator,
        "rubric": RUBRIC_NAME,
        "ts": ts,
    }
    if kind is not None:
        line["kind"] = kind
    return line


def append_labels(labels: Path, lines: list[dict], name: str = "page-ana.jsonl", dt: str = "2026-11-29") -> Path:
    """Append label lines to one file of LABELS (the page and the judge append to the day's file)."""
    folder = labels / f"dt={dt}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with open(path, "a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(line) + "\n" for line in lines)
    return path


def seven_lines(ts_of=None) -> list[dict]:
    """ana's labels of SEVEN; ts_of(i) gives line i's ts (default 2026-11-29T09:00:0iZ)."""
    return [
        label_line(q, d, lab, ts_of(i) if ts_of else f"2026-11-29T09:00:0{i}Z")
        for i, (q, d, lab, _) in enumerate(SEVEN)
    ]


def build_world(tmp: Path, lines: list[dict] | None = None) -> World:
    """Ingest the log, snapshot the corpus and build; with label lines, ingest them and build again."""
    from goldenset.build import build_golden_set
    from goldenset.corpus import read_corpus
    from goldenset.ingest import ingest_all
    from goldenset.snapshots import store_snapshot
    from goldenset.warehouse import connect

    tmp.mkdir(parents=True, exist_ok=True)
    world = World(tmp)
    write_world_logs(world.logs)
    write_corpus(world.corpus, [doc(d, text=TEXT[d], title=None) for d in DOCS])
    con = connect(world.db)
    try:
        ingest_all(con, world.logs)
        store_snapshot(con, read_corpus(world.corpus), now=BUILT_AT)
        build_golden_set(con, now=BUILT_AT)
    finally:
        con.close()
    if lines:
        append_labels(world.labels, lines)
        rebuild(world)
    return world


def pool_world(world: World, audit: tuple[int, int] | None = None) -> None:
    """`goldenset pool` with fixed_rankers.py: the queue holds its 12 pairs (checked here); with
    `audit` (N, seed), `pool --audit N --seed seed` (contract 12.1), which also asks the log-labelled
    pair of each drawn query (r1, a1, r3)."""
    import contextlib
    import io

    from goldenset.cli.app import main  # the pool, not its Dagster run

    out = io.StringIO()
    extra = ["--audit", str(audit[0]), "--seed", str(audit[1])] if audit else []
    with contextlib.redirect_stdout(out):
        assert main(["pool", "--rankers", "fixed_rankers:ranker", *world.args(), *extra, "--json"]) == 0
    report = json.loads(out.getvalue())
    assert report["queue"]["total"] == 12 + (report["audit"]["sample_size"] if audit else 0)


def copy_world(template: World, root: Path) -> World:
    """The world build_world would have made at `root`, copied from `template` in milliseconds."""
    world = World(root)
    copy_built_folder(template.root, root, world.db, template.corpus, world.corpus)
    return world


def rebuild(world: World, **build_kwargs) -> None:
    """Ingest LABELS again and build (the library's build, as `goldenset build` runs it)."""
    from goldenset.build import build_golden_set
    from goldenset.labelling.ingest import ingest_labels
    from goldenset.labelling.rubric import load_rubric
    from goldenset.warehouse import connect

    rubric = load_rubric(RUBRIC)
    con = connect(world.db)
    try:
        ingest_labels(con, world.labels, rubric)
        build_golden_set(con, rubric_sha256=rubric.content_sha256, **build_kwargs)
    finally:
        con.close()
