"""One number per count on every screen (issue 39, contract 15.9, docs/reference/counts.md).

One world, built once per module by one real in-process Dagster run (trace_export, serve_log,
human_labels, corpus_snapshot, golden_set, relabel_queue, labelling_queue), where every count
the issue names is above zero and the counts that could be swapped differ. Each count is then
read from every screen that shows it: `goldenset status` (its table) and `status --json`, the
Dagster metadata of that run (the golden_set materialization, its checks, the day partitions,
the queue assets), the pool's report (`goldenset pool --json` and its lines) and the labelling
page. Every screen must show the number derived by hand below.

The world (corpus: one snapshot; doc_ids with their current version)::

    a v1  b v2  c v1 (superseded by c2)  c2 v1  d v2  e v1  f v1  g v1  h v1  x v1  r v1 retired

    log day 1   s1 Q1 billing  a1 b2 c3 r4 x(always)   verdicts a helped, b helped then noise, c wrong,
                                                        r helped, x helped
                s2 Q2 billing  f1 g2 h3                 f noise, g wrong (h unjudged)
                s3 Q3 support  h1 f2 e3 d4              h helped, f noise, d noise (e unjudged);
                                                        g helped (g not served: an unserved-item verdict)
                s9 never served                         a helped (an orphan verdict)
                bad lines: 3 invalid_json, 1 not_an_object, 1 unknown_event
    log day 2   s4 Q1 (same query, other spacing)  a1 e2   a helped, e noise
                s2 again with another task: a conflicting duplicate serve
                bad lines: 1 missing_field, 1 invalid_field

Filters: judged 12 (s1 5, s2 2, s3 3, s4 2) in 4 serves; always_served drops x (11); retired
drops r (10); repeats drops s1's a (9, 3 queries); no_positive drops Q2's f and g (7, 2 queries).
Log rows: Q1 a helped, b noise (v1, now v2: version_changed), c wrong (superseded), e noise;
Q3 h helped, f noise, d noise (v1, now v2: version_changed).

Labels (rubric support-policies): ana relevant on (Q1, a), replacing the log's helped; ana
and ben on (Q1, e): relevant then partial (a tie, the later line wins: partial), replacing the
log's noise; ana partial on (Q1, g), ana relevant on (Q3, b) at v2, ben irrelevant on (Q3, e):
5 human rows, 2 log rows overridden; ana irrelevant on (Q2, f): unused (Q2 is not golden: a
grade-0 label is no positive under contract v5, which a relevant one would be). Judge `jury`
agrees with the human label on (Q1, g) and (Q3, e) (kappa 1 over 2 pairs: admitted with min
pairs 2) and labels (Q3, f) relevant (replacing the log's noise) and (Q1, h) irrelevant: 2
judge rows, 1 more log row overridden. Judge `wobbly` agrees on one of its 3 shared pairs
(kappa 0): its 3 labels are held back. Bad label lines: 3 rejected at
ingest (invalid_json, missing_field, invalid_field), 2 held back (version v9 no snapshot holds).
Trace export: 4 records rejected (2 invalid_json, 2 not_an_object).

Golden rows: 7 - 3 overridden + 5 human + 2 judge = 11. Stale: b, d (version_changed), c
(superseded). Pool (ranker `tests.helpers:first_documents`, depth 4: a, b, c, c2 for each
golden query): stale (Q1, b) and (Q3, d) at v2; successor (Q1, c2) (Q1 judged c, superseded by
c2); pooled (Q3, a), (Q3, c), (Q3, c2); already labelled (Q1, a), (Q1, c), (Q3, b).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import dagster as dg
import pytest
from starlette.testclient import TestClient

from goldenset.cli.app import main
from goldenset.labelling.page import create_app, open_session
from goldenset.labelling.pool import PoolReport
from goldenset.records import normalise_task, query_id
from goldenset.warehouse import connect
from goldenset_dagster.assets.corpus import corpus_snapshot
from goldenset_dagster.assets.golden_set import golden_set, relabel_queue
from goldenset_dagster.assets.labelling import labelling_queue
from goldenset_dagster.assets.labels import human_labels
from goldenset_dagster.assets.serve_log import serve_log
from goldenset_dagster.assets.trace_export import trace_export
from goldenset_dagster.jobs import build_run_config
from goldenset_dagster.partitions import days as day_partitions
from goldenset_dagster.partitions import range_tags
from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource, TraceExportSource, WarehouseResource
from goldenset_dagster.resources.embedder import EmbedderResource
from tests.helpers import (
    RUBRIC_PATH,
    always,
    dimensions,
    doc,
    isolated_settings,
    label_line,
    ranked,
    serve,
    verdict,
    write_corpus,
    write_labels,
    write_log,
)

pytestmark = pytest.mark.slow

Q1_TASK, Q2_TASK, Q3_TASK = "How long is the refund window?", "When are invoices sent", "Can I cancel my plan"
Q1 = query_id("billing", normalise_task(Q1_TASK))
Q2 = query_id("billing", normalise_task(Q2_TASK))
Q3 = query_id("support", normalise_task(Q3_TASK))
DAY1, DAY2, LABEL_DAY = "2026-11-01", "2026-11-02", "2026-11-03"
DAYS = [DAY1, DAY2, LABEL_DAY]

CORPUS = [
    doc("a"),
    doc("b", "v2"),
    doc("c", superseded_by="c2"),
    doc("c2"),
    doc("d", "v2"),
    doc("e"),
    doc("f"),
    doc("g"),
    doc("h"),
    doc("x"),
    doc("r", status="retired"),
]


def _t(day: str, hh: int, mm: int = 0) -> str:
    return f"{day}T{hh:02d}:{mm:02d}:00Z"


DAY1_LINES = [
    serve("s1", _t(DAY1, 9), Q1_TASK, [ranked("a", 1), ranked("b", 2), ranked("c", 3), ranked("r", 4), always("x")]),
    serve("s2", _t(DAY1, 9, 10), Q2_TASK, [ranked("f", 1), ranked("g", 2), ranked("h", 3)]),
    serve(
        "s3",
        _t(DAY1, 9, 20),
        Q3_TASK,
        [ranked("h", 1), ranked("f", 2), ranked("e", 3), ranked("d", 4)],
        project="support",
    ),
    verdict("s1", "a", "helped", _t(DAY1, 10)),
    verdict("s1", "b", "helped", _t(DAY1, 10, 1)),
    verdict("s1", "b", "noise", _t(DAY1, 10, 2)),
    verdict("s1", "c", "wrong", _t(DAY1, 10, 3)),
    verdict("s1", "r", "helped", _t(DAY1, 10, 4)),
    verdict("s1", "x", "helped", _t(DAY1, 10, 5)),
    verdict("s2", "f", "noise", _t(DAY1, 10, 6)),
    verdict("s2", "g", "wrong", _t(DAY1, 10, 7)),
    verdict("s3", "h", "helped", _t(DAY1, 10, 8)),
    verdict("s3", "f", "noise", _t(DAY1, 10, 9)),
    verdict("s3", "d", "noise", _t(DAY1, 10, 10)),
    verdict("s3", "g", "helped", _t(DAY1, 10, 11)),
    verdict("s9", "a", "helped", _t(DAY1, 10, 12)),
    "not json",
    '{"event": "serve", ',
    "{nope}",
    "[1, 2]",
    '{"event": "click", "serve_id": "s1"}',
]
DAY2_LINES = [
    serve("s4", _t(DAY2, 9), "how long is the  REFUND window?", [ranked("a", 1), ranked("e", 2)]),
    verdict("s4", "a", "helped", _t(DAY2, 10)),
    verdict("s4", "e", "noise", _t(DAY2, 10, 1)),
    serve("s2", _t(DAY1, 9, 10), "When are invoices sent?", [ranked("f", 1), ranked("g", 2), ranked("h", 3)]),
    '{"event": "verdict", "serve_id": "s4", "doc_id": "a", "ts": "2026-11-02T10:00:00Z"}',
    '{"event": "verdict", "serve_id": "s4", "doc_id": "a", "verdict": "meh", "ts": "2026-11-02T10:00:00Z"}',
]


def _label(qid, doc_id, label, ts, annotator, version="v1", kind="human") -> dict:
    fails = {"relevant": (), "partial": ("coverage",), "irrelevant": ("recency",)}[label]
    return label_line(qid, doc_id, label, ts, annotator=annotator, version=version, kind=kind) | {
        "dimensions": dimensions(*fails)
    }


LABEL_LINES = [
    _label(Q1, "a", "relevant", _t(LABEL_DAY, 9, 55), "ana"),
    _label(Q1, "e", "relevant", _t(LABEL_DAY, 10), "ana"),
    _label(Q1, "e", "partial", _t(LABEL_DAY, 10, 5), "ben"),
    _label(Q1, "g", "partial", _t(LABEL_DAY, 10, 6), "ana"),
    _label(Q3, "b", "relevant", _t(LABEL_DAY, 10, 7), "ana", version="v2"),
    _label(Q3, "e", "irrelevant", _t(LABEL_DAY, 10, 8), "ben"),
    # Grade 0: no positive (contract v5), so Q2 stays out and this label is unused.
    _label(Q2, "f", "irrelevant", _t(LABEL_DAY, 10, 9), "ana"),
    _label(Q1, "g", "partial", _t(LABEL_DAY, 11), "jury", kind="judge"),
    _label(Q3, "e", "irrelevant", _t(LABEL_DAY, 11, 1), "jury", kind="judge"),
    _label(Q3, "f", "relevant", _t(LABEL_DAY, 11, 2), "jury", kind="judge"),
    _label(Q1, "h", "irrelevant", _t(LABEL_DAY, 11, 3), "jury", kind="judge"),
    _label(Q1, "g", "irrelevant", _t(LABEL_DAY, 11, 4), "wobbly", kind="judge"),
    _label(Q3, "e", "relevant", _t(LABEL_DAY, 11, 5), "wobbly", kind="judge"),
    _label(Q1, "a", "relevant", _t(LABEL_DAY, 11, 6), "wobbly", kind="judge"),
    # Held back: no snapshot holds version v9.
    _label(Q1, "a", "relevant", _t(LABEL_DAY, 12), "ana", version="v9"),
    _label(Q3, "h", "partial", _t(LABEL_DAY, 12, 1), "ben", version="v9"),
    # Rejected at ingest.
    "{oops",
    {k: v for k, v in _label(Q1, "b", "relevant", _t(LABEL_DAY, 12, 2), "ana").items() if k != "decided_by"},
    _label(Q1, "b", "relevant", _t(LABEL_DAY, 12, 3), "ana") | {"label": "relevent"},
]
TRACE_LINES = ["nope", "{", "[1]", "2"]

# Every count, derived by hand from the world above (the module docstring).
EXPECTED = {
    "log_lines_read": len(DAY1_LINES) + len(DAY2_LINES),
    "log_lines_rejected_at_ingest": 7,
    "conflicting_duplicate_serves": 1,
    "log_lines_rejected": 8,
    "label_lines_read": len(LABEL_LINES),
    "label_lines_rejected_at_ingest": 3,
    "label_lines_held_back": 2,
    "label_lines_rejected": 5,
    "trace_records_rejected": 4,
    "rejected_records": 17,
    "n_queries": 2,
    "n_helped": 1,
    "n_noise": 2,
    "n_wrong": 1,
    "n_human_labels": 5,
    "n_judge_labels": 2,
    "n_stale": 3,
    "unjudged_items": 2,
    "orphan_verdicts": 1,
    "unserved_item_verdicts": 1,
    "human_labels_unused": 1,
    "log_labels_overridden": 3,
    "judge_labels_held_back": 3,
    "golden_rows": 11,
    "relabel_queue": 3,
    "relabel_queue.version_changed": 2,
    "relabel_queue.superseded": 1,
    "labelling_queue": 6,
    "labelling_queue.stale": 2,
    "labelling_queue.successor": 1,
    "labelling_queue.pooled": 3,
}
# The funnel, step by step: (count, left); the line steps have no running total.
FUNNEL = [
    ("log_lines_read", EXPECTED["log_lines_read"], None),
    ("log_lines_rejected", 8, None),
    ("label_lines_read", EXPECTED["label_lines_read"], None),
    ("label_lines_rejected", 5, None),
    ("trace_records_rejected", 4, None),
    ("judged", 12, 12),
    ("always_served", 1, 11),
    ("retired", 1, 10),
    ("repeats", 1, 9),
    ("no_positive", 2, 7),
    ("log_rows_overridden", 3, 4),
    ("human_rows_added", 5, 9),
    ("judge_rows_admitted", 2, 11),
    ("golden_rows", 11, 11),
]


def _write_world(root: Path) -> dict:
    write_log(root / "logs", DAY1, "part-0001.jsonl", DAY1_LINES)
    write_log(root / "logs", DAY2, "part-0001.jsonl", DAY2_LINES)
    write_corpus(root / "corpus.jsonl", CORPUS)
    write_labels(root / "labels", LABEL_DAY, "lines.jsonl", LABEL_LINES)
    (root / "traces").mkdir()
    (root / "traces" / "spans.jsonl").write_text("".join(line + "\n" for line in TRACE_LINES), encoding="utf-8")
    return {
        "warehouse": WarehouseResource(db_path=str(root / "g.duckdb")),
        "logs": LogSource(path=str(root / "logs")),
        "corpus_source": CorpusSource(path=str(root / "corpus.jsonl")),
        "embedder": EmbedderResource(),
        "labels": LabelSource(path=str(root / "labels"), rubric_path=str(RUBRIC_PATH)),
        "trace_export_source": TraceExportSource(
            path=str(root / "traces"), format="openinference", mapping_path=str(root / "no-mapping.yaml")
        ),
    }


class Screens:
    """What each screen shows, read once: status (text and JSON), the run's metadata, the pool report, the page."""

    def __init__(self, root: Path, result: dg.ExecuteInProcessResult, status_text: str, status_json: dict):
        self.root = root
        self.status_text = status_text
        self.status = status_json

        def meta(asset: str) -> dict:
            return {k: v.value for k, v in result.asset_materializations_for_node(asset)[0].metadata.items()}

        self.golden_set = meta("golden_set")
        self.relabel_queue = meta("relabel_queue")
        self.labelling_queue = meta("labelling_queue")
        self.days = {
            (m.asset_key.to_user_string(), m.partition): {k: v.value for k, v in m.metadata.items()}
            for node in ("serve_log", "human_labels")
            for m in result.asset_materializations_for_node(node)
        }
        evaluations = [
            e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
        ]
        self.checks = {e.check_name: {k: v.value for k, v in e.metadata.items()} for e in evaluations}
        self.check_descriptions = {e.check_name: e.description or "" for e in evaluations}
        con = connect(root / "g.duckdb", read_only=True)
        try:
            (report,) = con.execute("SELECT report FROM pool_runs ORDER BY pool_id DESC LIMIT 1").fetchone()
            self.golden_set_rows = con.execute("SELECT count(*) FROM golden_set").fetchone()[0]
        finally:
            con.close()
        self.pool_json = json.loads(report)
        self.pool_lines = PoolReport.from_json(self.pool_json).lines()
        session = open_session("ana", db=root / "g.duckdb", labels=root / "labels", rubric=RUBRIC_PATH)
        with TestClient(create_app(session), base_url="http://127.0.0.1") as client:
            self.page = client.get("/").text
        self.drift_text = ""
        self.drift_json: dict = {}

    def row(self, label: str) -> str:
        """The value cell of the status table's row `label`."""
        for line in self.status_text.splitlines():
            cells = [c.strip() for c in re.split(r"[│|]", line) if c.strip()]
            if len(cells) >= 2 and cells[0] == label:
                return cells[1]
        raise AssertionError(f"no status row {label!r} in:\n{self.status_text}")

    def day_sum(self, asset: str, key: str) -> int:
        return sum(m[key] for (a, _), m in self.days.items() if a == asset and key in m)


@pytest.fixture(scope="module")
def screens(tmp_path_factory) -> Screens:
    root = tmp_path_factory.mktemp("counts")
    with isolated_settings(root / "home"), dg.instance_for_test() as instance:
        resources = _write_world(root)
        instance.add_dynamic_partitions(day_partitions.name, DAYS)
        run_config = build_run_config("manual", judge_min_pairs=2, judge_min_kappa=0.6, block_rejected_share=0.5)
        run_config["ops"]["labelling_queue"] = {
            "config": {"rankers": "tests.helpers:first_documents", "depth": 4, "index_dir": str(root / "index")}
        }
        result = dg.materialize(
            [trace_export, serve_log, human_labels, corpus_snapshot, golden_set, relabel_queue, labelling_queue],
            instance=instance,
            resources=resources,
            run_config=run_config,
            tags=range_tags(DAYS),
        )
        assert result.success
        args = ["--db", str(root / "g.duckdb"), "--corpus", str(root / "corpus.jsonl")]
        text = _run(["status", *args])
        as_json = json.loads(_run(["status", "--json", *args]))
        screens = Screens(root, result, text, as_json)
        # The corpus file moved on since the build: 1 of its 10 active documents at a new version.
        moved = write_corpus(root / "moved.jsonl", [doc("a", "v2"), *CORPUS[1:]])
        moved_args = ["--db", str(root / "g.duckdb"), "--corpus", str(moved)]
        screens.drift_text = _run(["status", *moved_args])
        screens.drift_json = json.loads(_run(["status", "--json", *moved_args]))
        return screens


def _run(argv: list[str]) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0
    return buf.getvalue()


# --------------------------------------------------------------------------- reading each screen


def _ints(pattern: str, text: str) -> tuple[int, ...]:
    m = re.search(pattern, text)
    assert m is not None, f"{pattern!r} not in {text!r}"
    return tuple(int(g) for g in m.groups())


def _status_table(s: Screens) -> dict[str, int]:
    """The counts `goldenset status` prints, each read from the row a person reads it in."""
    got: dict[str, int] = {}
    (got["rejected_records"], got["log_lines_rejected"], got["label_lines_rejected"], got["trace_records_rejected"]) = (
        _ints(r"^(\d+) = log (\d+) \+ label (\d+) \+ trace (\d+)", s.row("rejected lines"))
    )
    log_row, label_row = s.row("log lines rejected"), s.row("label lines rejected")
    got["log_lines_read"] = _ints(r"^\d+ of (\d+) read", log_row)[0]
    (got["conflicting_duplicate_serves"],) = _ints(r"conflicting_duplicate_serve (\d+)", log_row)
    got["label_lines_read"] = _ints(r"^\d+ of (\d+) read", label_row)[0]
    (got["label_lines_held_back"],) = _ints(r"; (\d+) held back", label_row)
    (got["n_queries"],) = _ints(r"^(\d+) /", s.row("queries / projects"))
    (got["golden_rows"],) = _ints(r"^(\d+)$", s.row("golden rows"))
    got["n_helped"], got["n_noise"], got["n_wrong"] = _ints(
        r"^(\d+) / (\d+) / (\d+)$", s.row("log labels helped / noise / wrong")
    )
    got["n_human_labels"], got["human_labels_unused"], got["log_labels_overridden"] = _ints(
        r"^(\d+) \((\d+) / (\d+)\)$", s.row("human labels (unused / overriding a log label)")
    )
    got["n_judge_labels"], got["judge_labels_held_back"] = _ints(
        r"^(\d+) \((\d+)\)$", s.row("judge labels (held back)")
    )
    for key, label in (
        ("orphan_verdicts", "orphan verdicts"),
        ("unserved_item_verdicts", "verdicts on unserved items"),
        ("unjudged_items", "unjudged items"),
    ):
        (got[key],) = _ints(r"^(\d+)$", s.row(label))
    for queue, label in (("relabel_queue", "relabel queue"), ("labelling_queue", "labelling queue")):
        text = s.row(label)
        (got[queue],) = _ints(r"^(\d+)", text)
        for reason, n in re.findall(r"(\w+) (\d+)", text.split("(", 1)[1]):
            got[f"{queue}.{reason}"] = int(n)
    got.update({f"funnel {step}": n for step, n in _funnel_rows(s.status_text).items()})
    return got


def _funnel_rows(text: str) -> dict[str, int]:
    """The funnel table of the status text: step -> its count column."""
    rows = {}
    for line in text.split("funnel: lines read to golden rows", 1)[1].splitlines():
        cells = [c.strip() for c in re.split(r"[│┃|]", line) if c.strip()]
        if len(cells) >= 3 and cells[2].isdigit():
            rows[cells[0]] = int(cells[2])
    return rows


def _status_json(s: Screens) -> dict[str, int]:
    j = s.status
    got = {k: v for k, v in j["counts"].items() if not k.endswith("_by_reason")}
    got.update({f"relabel_queue.{r}": n for r, n in j["counts"]["relabel_queue_by_reason"].items()})
    got.update({f"labelling_queue.{r}": n for r, n in j["counts"]["labelling_queue_by_reason"].items()})
    got.update({f"funnel {row['step']}": row["count"] for row in j["full_funnel"]})
    return got


def _status_json_parts(s: Screens) -> dict[str, int]:
    """The by-source and by-reason objects of `status --json`, added up."""
    by = s.status["rejected_by_source"]
    return {
        "rejected_records": s.status["rejected_records"],
        "log_lines_rejected": sum(by["log"].values()),
        "conflicting_duplicate_serves": by["log"]["conflicting_duplicate_serve"],
        "label_lines_rejected": sum(by["label"].values()),
        "label_lines_held_back": by["label"]["unknown_document_version"],
        "trace_records_rejected": sum(by["trace"].values()),
    }


def _golden_set_metadata(s: Screens) -> dict[str, int]:
    m = s.golden_set
    got = {k: v for k, v in m.items() if isinstance(v, int) and not isinstance(v, bool) and k in EXPECTED}
    got["golden_rows (dagster/row_count)"] = m["dagster/row_count"]
    got.update({f"relabel_queue.{r}": n for r, n in m["relabel_queue_by_reason"].items()})
    got.update({f"funnel {r.data['step']}": r.data["count"] for r in m["full_funnel"].records})
    by = m["rejected_by_source"]
    got["log_lines_rejected (by source)"] = sum(by["log"].values())
    got["label_lines_rejected (by source)"] = sum(by["label"].values())
    return got


def _checks(s: Screens) -> dict[str, int]:
    c = s.checks
    return {
        "log_lines_rejected_at_ingest": c["rejected_share"]["log_lines_rejected_at_ingest"],
        "log_lines_read": c["rejected_share_warning"]["log_lines_read"],
        "label_lines_rejected": c["label_lines_rejected"]["label_lines_rejected"],
        "label_lines_rejected (contract 9.4: rejected)": c["label_lines_rejected"]["rejected"],
        "label_lines_read": c["label_lines_rejected"]["label_lines_read"],
        "label_lines_held_back": c["label_lines_rejected"]["label_lines_held_back"],
        "golden_rows": c["golden_set_not_empty"]["golden_rows"],
        "n_queries": c["golden_set_not_empty"]["n_queries"],
    }


def _days(s: Screens) -> dict[str, int]:
    """The day partitions' counts, summed over the days."""
    return {
        "log_lines_read": s.day_sum("serve_log", "log_lines_read"),
        "log_lines_rejected_at_ingest": s.day_sum("serve_log", "log_lines_rejected_at_ingest"),
        "label_lines_read": s.day_sum("human_labels", "label_lines_read"),
        "label_lines_rejected": s.day_sum("human_labels", "label_lines_rejected"),
        "label_lines_rejected_at_ingest": s.day_sum("human_labels", "label_lines_rejected_at_ingest"),
        "label_lines_held_back": s.day_sum("human_labels", "label_lines_held_back"),
    }


def _queue_assets(s: Screens) -> dict[str, int]:
    got = {"relabel_queue": s.relabel_queue["relabel_queue"], "labelling_queue": s.labelling_queue["labelling_queue"]}
    got.update({f"relabel_queue.{r}": n for r, n in s.relabel_queue["relabel_queue_by_reason"].items()})
    got.update({f"labelling_queue.{r}": n for r, n in s.labelling_queue["labelling_queue_by_reason"].items()})
    got["labelling_queue (dagster/row_count)"] = s.labelling_queue["dagster/row_count"]
    got["relabel_queue (dagster/row_count)"] = s.relabel_queue["dagster/row_count"]
    return got


def _pool_report(s: Screens) -> dict[str, int]:
    queue = s.pool_json["queue"]
    got = {"labelling_queue": queue["total"], **{f"labelling_queue.{r}": n for r, n in queue.items() if r != "total"}}
    line = next(x for x in s.pool_lines if x.startswith("queue: "))
    stale, successor, pooled, total = _ints(
        r"^queue: (\d+) stale .*\+ (\d+) successor .*\+ (\d+) pooled = (\d+) pairs$", line
    )
    got.update(
        {
            "labelling_queue.stale (line)": stale,
            "labelling_queue.successor (line)": successor,
            "labelling_queue.pooled (line)": pooled,
            "labelling_queue (line)": total,
        }
    )
    return got


def _page(s: Screens) -> dict[str, int]:
    got = {"labelling_queue": _ints(r'id="labelling-queue">(\d+)<', s.page)[0]}
    for reason in ("stale", "successor", "pooled"):
        got[f"labelling_queue.{reason}"] = _ints(rf'id="labelling-queue-{reason}">(\d+)<', s.page)[0]
    return got


READERS = {
    "status": _status_table,
    "status --json counts": _status_json,
    "status --json by source": _status_json_parts,
    "golden_set metadata": _golden_set_metadata,
    "golden_set checks": _checks,
    "day partitions": _days,
    "queue assets": _queue_assets,
    "pool report": _pool_report,
    "labelling page": _page,
}


def _shown(s: Screens, name: str) -> dict[str, int]:
    """Every place a screen shows count `name`: {"screen: key": value}."""
    found = {}
    for screen, read in READERS.items():
        for key, value in read(s).items():
            base = key.removeprefix("funnel ").split(" (", 1)[0]
            if base == name:
                found[f"{screen}: {key}"] = value
    return found


# --------------------------------------------------------------------------- one number per count


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_screen_shows_the_one_number_of_the_count(screens, name):
    found = _shown(screens, name)
    # Each count is on status (table or JSON) and in the Dagster metadata at least.
    assert any(k.startswith("status") for k in found) and any(
        k.startswith(("golden_set", "day", "queue")) for k in found
    ), found
    assert set(found.values()) == {EXPECTED[name]}, found


def test_the_world_makes_every_count_non_zero_and_those_that_could_be_swapped_differ():
    assert all(EXPECTED.values())
    rejected = [k for k in EXPECTED if "rejected" in k or "held_back" in k and "judge" not in k]
    for group in (
        rejected,
        [k for k in EXPECTED if k.startswith("labelling_queue")],
        [k for k in EXPECTED if k.startswith("relabel_queue.")],
        ["log_labels_overridden", "n_human_labels", "n_judge_labels", "golden_rows"],
    ):
        values = [EXPECTED[k] for k in group]
        assert len(set(values)) == len(values), {k: EXPECTED[k] for k in group}


def test_the_funnel_runs_from_lines_read_to_the_rows_of_golden_set(screens):
    expected = [(step, count, left) for step, count, left in FUNNEL]
    as_json = [(r["step"], r["count"], r["left"]) for r in screens.status["full_funnel"]]
    in_metadata = [(r.data["step"], r.data["count"], r.data["left"]) for r in screens.golden_set["full_funnel"].records]
    assert as_json == in_metadata == expected
    assert {step: count for step, count, _ in expected} == _funnel_rows(screens.status_text)
    # The last number is the table's row count, counted here by SQL of our own.
    assert expected[-1][2] == screens.golden_set_rows == 11
    # The filter steps are filter_funnel's, untouched (contract 3-4).
    steps = [r["step"] for r in screens.status["funnel"]]
    assert steps == ["judged", "always_served", "retired", "repeats", "no_positive"]
    assert [(r["judgments_dropped"], r["judgments_left"]) for r in screens.status["funnel"]] == [
        (0, 12),
        (1, 11),
        (1, 10),
        (1, 9),
        (2, 7),
    ]


def test_the_running_total_adds_up_step_by_step(screens):
    rows = screens.status["full_funnel"]
    totals = [r for r in rows if r["left"] is not None]
    for before, after in zip(totals, totals[1:], strict=False):
        sign = (
            -1 if after["step"] in ("always_served", "retired", "repeats", "no_positive", "log_rows_overridden") else 1
        )
        if after["step"] != "golden_rows":
            assert after["left"] == before["left"] + sign * after["count"], after


def test_status_json_holds_each_queue_count_once_in_counts(screens):
    counts = screens.status["counts"]
    assert list(counts["labelling_queue_by_reason"].items()) == [("stale", 2), ("successor", 1), ("pooled", 3)]
    assert counts["relabel_queue_by_reason"] == {"superseded": 1, "version_changed": 2}
    queue_keys = {"relabel_queue", "relabel_queue_by_reason", "labelling_queue", "labelling_queue_by_reason"}
    assert queue_keys <= set(counts) and not queue_keys & set(screens.status)
    # The golden_set metadata holds all but the labelling queue's, which the pool makes after the build.
    assert screens.golden_set["relabel_queue_by_reason"] == counts["relabel_queue_by_reason"]
    assert "labelling_queue" not in screens.golden_set and "labelling_queue_by_reason" not in screens.golden_set


def test_the_funnel_metadata_has_the_filter_steps_units_left_and_no_positive_split(screens):
    rows = {r.data["step"]: r.data for r in screens.golden_set["full_funnel"].records}
    as_json = {r["step"]: r for r in screens.status["full_funnel"]}
    # no_positive left 2 queries (Q1, Q3), both kept by a log helped: no human positive was needed.
    assert [rows[s]["units_left"] for s in ("judged", "always_served", "retired", "repeats", "no_positive")] == [
        as_json[s]["units_left"] for s in ("judged", "always_served", "retired", "repeats", "no_positive")
    ]
    assert rows["no_positive"]["units_left"] == 2 and rows["log_lines_read"]["units_left"] is None
    assert rows["no_positive"]["queries_kept_by"] == "log_helped 2, human_positive 0"
    assert as_json["no_positive"]["queries_kept_by"] == {"log_helped": 2, "human_positive": 0}


def test_rejected_records_are_the_rows_goldenset_rejects_lists(screens):
    con = connect(screens.root / "g.duckdb", read_only=True)
    try:
        by_prefix = dict(
            con.execute(
                "SELECT CASE WHEN source_file LIKE 'labels/%' THEN 'label' WHEN source_file LIKE 'traces/%' "
                "THEN 'trace' ELSE 'log' END, count(*) FROM rejected_records GROUP BY 1"
            ).fetchall()
        )
    finally:
        con.close()
    assert by_prefix == {"log": 8, "label": 5, "trace": 4}


# --------------------------------------------------------------------------- one unit convention


def test_shares_are_fractions_in_data_and_percentages_where_a_person_reads_them(screens):
    # Data: every metadata key of the run, and no key in percent.
    metadata = [
        screens.golden_set,
        screens.relabel_queue,
        screens.labelling_queue,
        *screens.days.values(),
        *screens.checks.values(),
    ]
    assert not [k for m in metadata for k in m if k.endswith("_pct")]
    # 7 of the 27 log lines were rejected at ingest: the share is 7/27, the same on every screen.
    share = 7 / 27
    assert screens.golden_set["rejected_share"] == screens.checks["rejected_share"]["rejected_share"] == share
    assert screens.checks["rejected_share"]["block_above"] == 0.5
    assert screens.checks["rejected_share_warning"]["warn_above"] == 0.01
    # Prose: the percentage of that fraction.
    assert "7 of 27 log lines rejected at ingest (25.93%)" in _check_description(screens, "rejected_share")
    # Drift: 1 of 10 active documents changed is 0.1 in JSON and 10.0% in the status table.
    assert screens.drift_json["corpus"]["drift_since_build"] == 0.1
    assert re.search(r"drift since build\W+10\.0%\s+above 5%", screens.drift_text)


def _check_description(screens: Screens, name: str) -> str:
    return screens.check_descriptions[name]
