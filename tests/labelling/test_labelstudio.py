"""Label Studio out and in: tasks and config from the queue, label lines from an export or JSONL.

The round trip: `pool export --format label-studio` on the hand-made world of pool_rankers.py,
then a Label Studio export, then `labels import`; every line written is checked against the
rubric's own label_line_reason and against lines written out by hand. Two exports: one
recorded from a real Label Studio 1.23.2 (tests/data/label-studio/, its README says how), and
one built here in Label Studio's shape for what a real one does not hold on demand (an older
`completed_by` object, several users, values its editor would never send, broken timestamps).
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from pool_rankers import FIRST, Q1, Q2, SECOND, World  # noqa: E402

from goldenset import warehouse  # noqa: E402
from goldenset.cli.app import main  # noqa: E402
from goldenset.cli.labels import app as labels_app  # noqa: E402
from goldenset.cli.pool import app as pool_app  # noqa: E402
from goldenset.errors import UsageError  # noqa: E402
from goldenset.labelling.labelstudio import (  # noqa: E402
    append_lines,
    check_annotator,
    import_labels,
    label_file,
    label_studio_config,
)
from goldenset.labelling.pool import run_pool  # noqa: E402
from goldenset.labelling.queue_export import export_queue  # noqa: E402
from goldenset.labelling.rubric import load_rubric, parse_rubric  # noqa: E402

RUBRIC_FILE = HERE.parent / "data" / "conformance" / "rubric.yaml"
RUBRIC = load_rubric(RUBRIC_FILE)
DIMS = ("answerability", "authority", "recency", "coverage", "entity")
NOW = datetime(2026, 12, 2, 9, 30)
ANA = {"id": 7, "email": "ana@example.com", "first_name": "Ana", "last_name": ""}


@pytest.fixture
def pooled(tmp_path, pool_worlds) -> World:
    """The hand-made world, pooled with the two fixed rankers (12 queued pairs)."""
    world = pool_worlds(tmp_path / "w")
    con = warehouse.connect(world.db)
    run_pool(con, rankers=(FIRST, SECOND), index_dir=world.index_dir, now=datetime(2026, 11, 30, 8, 0))
    con.close()
    return world


def export(world: World, out: Path, rubric=RUBRIC) -> list[dict]:
    con = warehouse.connect(world.db, read_only=True)
    try:
        export_queue(con, out, rubric, "label-studio")
    finally:
        con.close()
    return json.loads(out.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- export


def test_export_writes_one_task_per_queued_pair_in_priority_order(pooled, tmp_path):
    tasks = export(pooled, tmp_path / "tasks.json")
    assert [set(t) for t in tasks] == [{"data"}] * 12
    assert [t["data"]["priority"] for t in tasks] == list(range(1, 13))
    assert tasks[0]["data"] == {
        "pool_id": 1,
        "priority": 1,
        "reason": "stale",
        "query_id": Q1,
        "project": "billing",
        "task": "How long is the refund window?",
        "doc_id": "b",
        "doc_version": "v2",
        "title": "b",
        "text": "text of b v2",
        "doc_heading": "b (version v2): b",
        "rubric": "support-policies",
        "rubric_task": "A support-agent-facing assistant that answers questions about the policies currently in "
        "force, using only the published policy corpus.\n",
        "test_answerability": "A reader who sees ONLY this passage can state the answer without guessing.",
        "test_authority": "Source is under policies/ or legal/.",
        "test_recency": "Passage is from the version in force on as_of.",
        "test_coverage": "Every clause of the query is addressed.",
        "test_entity": "Any named account, product or plan in the query matches the passage exactly.",
    }


def test_config_has_a_pass_fail_choices_per_dimension_a_decided_by_choices_and_a_note(pooled, tmp_path):
    export(pooled, tmp_path / "tasks.json")
    root = ET.fromstring((tmp_path / "tasks.json.config.xml").read_text(encoding="utf-8"))
    choices = root.findall("Choices")
    assert [c.get("name") for c in choices] == [*DIMS, "decided-by"]
    for c in choices[:-1]:
        assert [x.get("value") for x in c.findall("Choice")] == ["pass", "fail"]
        assert (c.get("choice"), c.get("required")) == ("single-radio", "true")
    assert [x.get("value") for x in choices[-1].findall("Choice")] == list(DIMS)
    notes = root.findall("TextArea")
    assert [n.get("name") for n in notes] == ["annotator-note"]
    objects = {t.get("name") for t in root.findall("Text")}
    assert {c.get("toName") for c in [*choices, *notes]} == {"document-text"}
    assert {"document-text", "query-text", "rubric-task"} <= objects
    names = [e.get("name") for e in root.iter() if e.get("name")]
    assert len(names) == len(set(names))  # Label Studio needs every name once


def test_every_field_the_config_references_is_in_every_task(pooled, tmp_path):
    tasks = export(pooled, tmp_path / "tasks.json")
    root = ET.fromstring((tmp_path / "tasks.json.config.xml").read_text(encoding="utf-8"))
    refs = {e.get("value")[1:] for e in root.iter() if (e.get("value") or "").startswith("$")}
    assert {"task", "text", "doc_heading", "rubric_task", *(f"test_{d}" for d in DIMS)} == refs
    assert tasks and all(refs <= set(t["data"]) for t in tasks)


def test_rubric_text_with_a_dollar_sign_goes_to_the_data_not_the_config(pooled, tmp_path):
    rubric = parse_rubric(
        RUBRIC_FILE.read_text(encoding="utf-8").replace(
            "Every clause of the query is addressed.", "Every clause is addressed, refunds over $100 included."
        )
    )
    tasks = export(pooled, tmp_path / "tasks.json", rubric)
    assert "$100" not in label_studio_config(rubric)
    assert tasks[0]["data"]["test_coverage"] == "Every clause is addressed, refunds over $100 included."


def test_config_says_which_dimensions_may_decide_each_label(pooled):
    root = ET.fromstring(label_studio_config(RUBRIC))
    headers = [h.get("value") for h in root.findall("Header")]
    assert (
        "decided_by (relevant: any dimension, the one closest to failing; partial: one that failed of "
        "coverage; irrelevant: one that failed of answerability, authority, recency, entity)"
    ) in headers
    assert "As of 2026-08-01" in headers


def test_pool_export_command_writes_tasks_and_config(pooled, tmp_path, capsys):
    out = tmp_path / "ls" / "tasks.json"
    code = main(
        ["export", "--out", str(out), "--format", "label-studio", "--db", str(pooled.db), "--rubric", str(RUBRIC_FILE)],
        application=pool_app,
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert printed == f"wrote 12 tasks to {out} and the labelling config to {out}.config.xml\n"
    assert len(json.loads(out.read_text(encoding="utf-8"))) == 12
    ET.fromstring(Path(f"{out}.config.xml").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- a Label Studio export


def result_items(answers: dict[str, str], decided_by: str | None, note: str | None = None) -> list[dict]:
    items = [
        {
            "value": {"choices": [v]},
            "id": f"r-{d}",
            "from_name": d,
            "to_name": "document-text",
            "type": "choices",
            "origin": "manual",
        }
        for d, v in answers.items()
    ]
    if decided_by is not None:
        items.append(
            {
                "value": {"choices": [decided_by]},
                "id": "r-dec",
                "from_name": "decided-by",
                "to_name": "document-text",
                "type": "choices",
                "origin": "manual",
            }
        )
    if note is not None:
        items.append(
            {
                "value": {"text": [note]},
                "id": "r-note",
                "from_name": "annotator-note",
                "to_name": "document-text",
                "type": "textarea",
                "origin": "manual",
            }
        )
    return items


def passing(**fails: str) -> dict[str, str]:
    return {d: fails.get(d, "pass") for d in DIMS}


def annotation(
    ann_id: int,
    task_id: int,
    results: list[dict],
    user=ANA,
    *,
    created="2026-12-01T09:00:00.000001Z",
    updated: str | None = "2026-12-01T10:00:00.123456Z",
    cancelled=False,
) -> dict:
    ann = {
        "id": ann_id,
        "completed_by": user,
        "result": results,
        "was_cancelled": cancelled,
        "ground_truth": False,
        "created_at": created,
        "lead_time": 12.5,
        "prediction": {},
        "result_count": 0,
        "task": task_id,
        "project": 3,
        "parent_prediction": None,
        "parent_annotation": None,
    }
    if updated is not None:
        ann["updated_at"] = updated
    return ann


def ls_task(task_id: int, data: dict, annotations: list[dict]) -> dict:
    return {
        "id": task_id,
        "annotations": annotations,
        "drafts": [],
        "predictions": [],
        "data": data,
        "meta": {},
        "created_at": "2026-11-30T09:00:00.000000Z",
        "updated_at": "2026-12-01T10:00:00.000000Z",
        "inner_id": task_id,
        "total_annotations": len(annotations),
        "cancelled_annotations": 0,
        "total_predictions": 0,
        "comment_count": 0,
        "unresolved_comment_count": 0,
        "last_comment_updated_at": None,
        "project": 3,
        "updated_by": None,
        "comment_authors": [],
    }


def label_studio_export(tasks: list[dict]) -> list[dict]:
    """What Label Studio's JSON export holds after annotating the exported tasks (by hand)."""
    d = [t["data"] for t in tasks]
    ben = 12  # newer exports give completed_by as the bare user id
    return [
        ls_task(101, d[0], [annotation(1001, 101, result_items(passing(), "coverage", "states 14 days"))]),
        ls_task(
            102,
            d[1],
            [
                annotation(
                    1002,
                    102,
                    result_items(passing(coverage="fail"), "coverage"),
                    created="2026-12-01T11:00:00+01:00",
                    updated=None,
                )
            ],
        ),
        ls_task(
            103,
            d[2],
            [annotation(1003, 103, result_items(passing(authority="fail", recency="fail"), "recency"), user=ben)],
        ),
        ls_task(104, d[3], []),
        ls_task(
            105,
            d[4],
            [annotation(1005, 105, result_items({k: v for k, v in passing().items() if k != "entity"}, "coverage"))],
        ),
        ls_task(
            106,
            d[5],
            [
                annotation(1006, 106, result_items(passing(authority="fail"), "coverage")),
                annotation(1007, 106, [], cancelled=True),
                annotation(1008, 106, result_items(passing(authority="fail"), "answerability")),
            ],
        ),
        ls_task(107, d[6], [annotation(1009, 107, result_items(passing(coverage="maybe"), "coverage"))]),
        ls_task(
            108,
            d[7],
            [
                annotation(
                    1010,
                    108,
                    result_items(passing(), "coverage")
                    + [
                        {
                            "value": {"choices": ["Positive"]},
                            "from_name": "sentiment",
                            "to_name": "document-text",
                            "type": "choices",
                        }
                    ],
                )
            ],
        ),
        ls_task(
            109,
            {k: v for k, v in d[8].items() if k != "query_id"},
            [annotation(1011, 109, result_items(passing(), "coverage"))],
        ),
        ls_task(110, d[9], [annotation(1012, 110, result_items(passing(), None))]),
        ls_task(
            111, d[10], [annotation(1013, 111, result_items(passing(), "coverage"), created="yesterday", updated=None)]
        ),
    ]


def expected_lines(tasks: list[dict]) -> dict[str, list[dict]]:
    """The label lines the valid annotations above make, written out by hand."""
    d = [t["data"] for t in tasks]
    return {
        "ana_example.com": [
            {
                "event": "label",
                "query_id": Q1,
                "doc_id": "b",
                "doc_version": "v2",
                "label": "relevant",
                "decided_by": "coverage",
                "annotator": "ana_example.com",
                "rubric": "support-policies",
                "ts": "2026-12-01T10:00:00.123456Z",
                "dimensions": passing(),
                "note": "states 14 days",
                "kind": "human",
                "origin": {"tool": "label-studio", "task": 101, "annotation": 1001},
            },
            {
                "event": "label",
                "query_id": Q2,
                "doc_id": "e2",
                "doc_version": "v1",
                "label": "partial",
                "decided_by": "coverage",
                "annotator": "ana_example.com",
                "rubric": "support-policies",
                "ts": "2026-12-01T10:00:00Z",
                "dimensions": passing(coverage="fail"),
                "kind": "human",
                "origin": {"tool": "label-studio", "task": 102, "annotation": 1002},
            },
        ],
        "label-studio-user-12": [
            {
                "event": "label",
                "query_id": d[2]["query_id"],
                "doc_id": d[2]["doc_id"],
                "doc_version": d[2]["doc_version"],
                "label": "irrelevant",
                "decided_by": "recency",
                "annotator": "label-studio-user-12",
                "rubric": "support-policies",
                "ts": "2026-12-01T10:00:00.123456Z",
                "dimensions": passing(authority="fail", recency="fail"),
                "kind": "human",
                "origin": {"tool": "label-studio", "task": 103, "annotation": 1003},
            },
        ],
    }


EXPECTED_REJECTS = [
    ("task 105 annotation 1005", "missing_field"),
    ("task 106 annotation 1006", "label_contradicts_rubric"),
    ("task 106 annotation 1007", "cancelled"),
    ("task 106 annotation 1008", "label_contradicts_rubric"),
    ("task 107 annotation 1009", "invalid_field"),
    ("task 108 annotation 1010", "invalid_field"),
    ("task 109", "missing_field"),
    ("task 110 annotation 1012", "missing_field"),
    ("task 111 annotation 1013", "invalid_field"),
]


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def exported(pooled, tmp_path) -> tuple[list[dict], Path]:
    """The exported tasks, and a Label Studio export of them with good and bad annotations."""
    tasks = export(pooled, tmp_path / "tasks.json")
    path = tmp_path / "project-3-at-2026-12-02.json"
    path.write_text(json.dumps(label_studio_export(tasks), indent=2), encoding="utf-8")
    return tasks, path


def test_round_trip_turns_each_valid_annotation_into_a_label_line(exported, tmp_path):
    tasks, path = exported
    labels = tmp_path / "labels"
    result = import_labels(path, rubric=RUBRIC, labels_dir=labels, now=NOW)
    expected = expected_lines(tasks)
    for name, lines in expected.items():
        assert read_lines(labels / "dt=2026-12-02" / f"import-{name}.jsonl") == lines
    assert sorted(p.name for p in (labels / "dt=2026-12-02").iterdir()) == [
        "import-ana_example.com.jsonl",
        "import-label-studio-user-12.jsonl",
    ]
    assert (result.n_written, result.already_imported, result.unannotated) == (3, 0, 1)


def test_every_imported_line_passes_the_rubrics_label_line_rules(exported, tmp_path):
    _, path = exported
    import_labels(path, rubric=RUBRIC, labels_dir=tmp_path / "labels", now=NOW)
    for file in sorted((tmp_path / "labels").rglob("*.jsonl")):
        for line in read_lines(file):
            assert (
                RUBRIC.label_line_reason(
                    rubric=line["rubric"],
                    label=line["label"],
                    decided_by=line["decided_by"],
                    dimensions=line["dimensions"],
                )
                is None
            )
            assert set(line) >= {
                "event",
                "query_id",
                "doc_id",
                "doc_version",
                "label",
                "decided_by",
                "annotator",
                "rubric",
                "ts",
                "kind",
            }


def test_imported_lines_are_what_the_builds_label_ingestion_accepts(exported, pooled, tmp_path):
    from goldenset.labelling.ingest import ingest_labels

    tasks, path = exported
    labels = tmp_path / "labels"
    import_labels(path, rubric=RUBRIC, labels_dir=labels, now=NOW)
    con = warehouse.connect(pooled.db)
    try:
        ingest_labels(con, labels, RUBRIC)
        rows = con.execute(
            "SELECT annotator, query_id, doc_id, doc_version, label, decided_by, kind, note "
            "FROM current_labels ORDER BY annotator, doc_id"
        ).fetchall()
        rejected = con.execute("SELECT count(*) FROM rejected_records WHERE source_file LIKE 'labels/%'").fetchone()
    finally:
        con.close()
    d = [t["data"] for t in tasks]
    assert rejected == (0,)
    # The queue's first three: the stale b, then the successors of relevant documents e2 and d2 (7.4).
    assert (d[0]["doc_id"], d[1]["doc_id"], d[2]["doc_id"]) == ("b", "e2", "d2")
    assert [r for r in rows if r[0] != "ana"] == [
        ("ana_example.com", Q1, "b", "v2", "relevant", "coverage", "human", "states 14 days"),
        ("ana_example.com", Q2, "e2", "v1", "partial", "coverage", "human", None),
        ("label-studio-user-12", Q1, "d2", "v3", "irrelevant", "recency", "human", None),
    ]


def test_bad_annotations_are_rejected_with_their_reasons(exported, tmp_path):
    _, path = exported
    result = import_labels(path, rubric=RUBRIC, labels_dir=tmp_path / "labels", now=NOW)
    assert [(r.where, r.reason) for r in result.rejects] == EXPECTED_REJECTS
    details = {r.where: r.detail for r in result.rejects}
    assert details["task 105 annotation 1005"] == "dimension entity is not answered"
    # Rubric contradictions carry the build's own wording (goldenset.labelling.lines).
    assert details["task 106 annotation 1006"] == (
        "coverage cannot decide irrelevant; it is decided by one of answerability, authority, recency, entity"
    )
    assert details["task 106 annotation 1008"] == (
        "answerability passes in the dimensions given, so it cannot be what decided irrelevant"
    )
    assert details["task 107 annotation 1009"] == "coverage: expected one choice of pass, fail, got ['maybe']"
    assert details["task 108 annotation 1010"].startswith("result from_name 'sentiment' is not a control")
    assert details["task 110 annotation 1012"] == "decided-by is not chosen"


def test_importing_the_same_export_again_appends_nothing(exported, tmp_path):
    _, path = exported
    labels = tmp_path / "labels"
    import_labels(path, rubric=RUBRIC, labels_dir=labels, now=NOW)
    before = {p: p.read_bytes() for p in labels.rglob("*.jsonl")}
    again = import_labels(path, rubric=RUBRIC, labels_dir=labels, now=datetime(2026, 12, 3, 1, 0))
    assert (again.n_written, again.already_imported) == (0, 3)
    assert {p: p.read_bytes() for p in labels.rglob("*.jsonl")} == before
    assert again.ok


def test_annotator_option_names_every_line_of_a_one_user_export(pooled, tmp_path):
    tasks = export(pooled, tmp_path / "tasks.json")
    path = tmp_path / "export.json"
    path.write_text(json.dumps(label_studio_export(tasks)[:2]), encoding="utf-8")
    import_labels(path, rubric=RUBRIC, labels_dir=tmp_path / "labels", annotator="ana", now=NOW)
    lines = read_lines(tmp_path / "labels" / "dt=2026-12-02" / "import-ana.jsonl")
    assert [line["annotator"] for line in lines] == ["ana", "ana"]


def test_annotator_option_is_refused_for_an_export_by_several_users(exported, tmp_path):
    _, path = exported
    with pytest.raises(
        UsageError,
        match="holds annotations by 2 Label Studio users "
        r"\(ana_example.com, label-studio-user-12\)",
    ):
        import_labels(path, rubric=RUBRIC, labels_dir=tmp_path / "labels", annotator="ana", now=NOW)
    assert not (tmp_path / "labels").exists()


@pytest.mark.parametrize("name", ["../outside", "a/b", "", "ana smith", "/tmp/x", "é", "a" * 65])
def test_annotator_names_that_could_leave_labels_are_refused(name, tmp_path):
    with pytest.raises(UsageError, match=r"must match \[A-Za-z0-9._-\]\{1,64\}"):
        check_annotator(name)
    with pytest.raises(UsageError):
        label_file(tmp_path / "labels", name, NOW.date())


def test_an_export_of_another_rubric_is_rejected(pooled, tmp_path):
    tasks = export(pooled, tmp_path / "tasks.json")
    data = dict(tasks[0]["data"], rubric="other-rubric")
    path = tmp_path / "export.json"
    path.write_text(
        json.dumps([ls_task(1, data, [annotation(1, 1, result_items(passing(), "coverage"))])]), encoding="utf-8"
    )
    result = import_labels(path, rubric=RUBRIC, labels_dir=tmp_path / "labels", now=NOW)
    assert [(r.reason, r.detail) for r in result.rejects] == [
        (
            "invalid_field",
            "the task was exported for rubric 'other-rubric', not 'support-policies'; import it with that rubric",
        )
    ]
    assert not result.ok


def test_a_file_that_is_not_json_is_an_input_error(tmp_path):
    from goldenset.errors import InputError

    path = tmp_path / "export.json"
    path.write_text('[{"id": 1,', encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        import_labels(path, rubric=RUBRIC, labels_dir=tmp_path / "labels", now=NOW)


# --------------------------------------------------------------------------- JSONL of label lines


def good_line(**over) -> dict:
    line = {
        "event": "label",
        "query_id": Q1,
        "doc_id": "b",
        "doc_version": "v2",
        "label": "partial",
        "decided_by": "coverage",
        "annotator": "ben",
        "rubric": "support-policies",
        "ts": "2026-12-01T10:00:00+02:00",
        "dimensions": passing(coverage="fail"),
        "note": "half of it",
    }
    line.update(over)
    return {k: v for k, v in line.items() if v is not None}


def test_jsonl_lines_are_checked_and_the_valid_ones_appended(tmp_path):
    path = tmp_path / "lines.jsonl"
    raw = [
        json.dumps(good_line()),
        "{not json",
        json.dumps(good_line(event="verdict")),
        json.dumps(good_line(ts=None)),
        json.dumps(good_line(query_id="3F9A0C1D2B4E5F60")),
        json.dumps(good_line(label="relevant")),
        "",
        json.dumps(good_line(annotator="../ben")),
        json.dumps(good_line(doc_id="c2", note=None, dimensions=None, kind="judge")),
    ]
    path.write_text("\ufeff" + "\r\n".join(raw) + "\n", encoding="utf-8")
    result = import_labels(path, rubric=RUBRIC, labels_dir=tmp_path / "labels", now=NOW)
    assert [(r.where, r.reason) for r in result.rejects] == [
        ("line 2", "invalid_json"),
        ("line 3", "unknown_event"),
        ("line 4", "missing_field"),
        ("line 5", "invalid_field"),
        ("line 6", "label_contradicts_rubric"),
        ("line 8", "invalid_field"),
    ]
    assert read_lines(tmp_path / "labels" / "dt=2026-12-02" / "import-ben.jsonl") == [
        good_line(),
        good_line(doc_id="c2", note=None, dimensions=None, kind="judge"),
    ]
    assert not list(tmp_path.glob("*ben*"))  # nothing written outside LABELS


def test_jsonl_annotator_option_fills_missing_annotators_and_rejects_others(tmp_path):
    path = tmp_path / "lines.jsonl"
    path.write_text(json.dumps(good_line(annotator=None)) + "\n" + json.dumps(good_line()) + "\n", encoding="utf-8")
    result = import_labels(path, rubric=RUBRIC, labels_dir=tmp_path / "labels", annotator="cy", now=NOW)
    assert [(r.where, r.reason, r.detail) for r in result.rejects] == [
        ("line 2", "invalid_field", "annotator 'ben' is not --annotator 'cy'")
    ]
    assert read_lines(tmp_path / "labels" / "dt=2026-12-02" / "import-cy.jsonl") == [good_line(annotator="cy")]


def test_appending_after_a_cut_short_line_starts_a_new_line(tmp_path):
    path = label_file(tmp_path, "ana", NOW.date())
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"event": "label", "query_id"')  # a writer died mid-line
    append_lines(tmp_path, "ana", ['{"a": 1}', '{"b": 2}'], NOW.date())
    assert path.read_bytes() == b'{"event": "label", "query_id"\n{"a": 1}\n{"b": 2}\n'


# --------------------------------------------------------------------------- `goldenset labels import`


def run_labels(argv, capsys) -> tuple[int, str, str]:
    code = main(argv, application=labels_app)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_labels_import_prints_each_reject_then_what_it_wrote(exported, tmp_path, capsys):
    _, path = exported
    labels = tmp_path / "labels"
    code, out, err = run_labels(["import", str(path), "--labels", str(labels), "--rubric", str(RUBRIC_FILE)], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines[:9]] == [f"rejected {where}" for where, _ in EXPECTED_REJECTS]
    assert lines[0] == "rejected task 105 annotation 1005: missing_field: dimension entity is not answered"
    [day] = list(labels.iterdir())
    assert lines[9:] == [
        f"wrote 2 label lines to {day / 'import-ana_example.com.jsonl'}",
        f"wrote 1 label line to {day / 'import-label-studio-user-12.jsonl'}",
        f"{path} (label-studio): 3 written, 0 already imported, 9 rejected, 1 task without annotations",
    ]


def test_labels_import_with_nothing_valid_exits_1(tmp_path, capsys):
    path = tmp_path / "lines.jsonl"
    path.write_text("{not json\n", encoding="utf-8")
    code, out, err = run_labels(
        ["import", str(path), "--labels", str(tmp_path / "labels"), "--rubric", str(RUBRIC_FILE)], capsys
    )
    assert code == 1
    assert out.splitlines()[0].startswith("rejected line 1: invalid_json: ")
    assert (
        err
        == f"Error: {path}: no valid label in it (1 rejected); nothing written. Fix the rejected items and import again\n"
    )
    assert not (tmp_path / "labels").exists()


def test_labels_import_of_lines_without_annotators_prints_one_line_with_the_hint(tmp_path, capsys):
    path = tmp_path / "lines.jsonl"
    unnamed = [good_line(annotator=None, doc_id=f"c{i}") for i in range(7)]
    bad = {"event": "label"}  # a line with another fault keeps its own report
    path.write_text("\n".join(json.dumps(x) for x in [*unnamed[:3], bad, *unnamed[3:]]) + "\n", encoding="utf-8")
    code, out, err = run_labels(
        ["import", str(path), "--labels", str(tmp_path / "labels"), "--rubric", str(RUBRIC_FILE)], capsys
    )
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("rejected line 4: ")
    assert lines[1] == (
        "rejected 7 lines (1, 2, 3, 5, 6, ...): missing_field: no annotator named in the line; "
        "give one with --annotator NAME"
    )
    assert lines[2] == f"{path} (jsonl): 0 written, 0 already imported, 8 rejected"
    assert "(8 rejected)" in err


def test_labels_import_refuses_an_open_rubric(tmp_path, capsys):
    path = tmp_path / "lines.jsonl"
    path.write_text(json.dumps(good_line()) + "\n", encoding="utf-8")
    rubric = HERE.parents[1] / "goldenset" / "data" / "open-rubric.yaml"
    code, _, err = run_labels(
        ["import", str(path), "--labels", str(tmp_path / "labels"), "--rubric", str(rubric)], capsys
    )
    assert code == 1
    assert err.startswith(f"Error: {rubric}: rubric ")


def test_labels_import_with_a_bad_annotator_name_exits_2(tmp_path, capsys):
    path = tmp_path / "lines.jsonl"
    path.write_text(json.dumps(good_line()) + "\n", encoding="utf-8")
    code, _, err = run_labels(
        [
            "import",
            str(path),
            "--annotator",
            "../x",
            "--labels",
            str(tmp_path / "labels"),
            "--rubric",
            str(RUBRIC_FILE),
        ],
        capsys,
    )
    assert code == 2
    assert err.startswith("Error: annotator '../x' must match [A-Za-z0-9._-]{1,64}")


def test_labels_import_reads_labels_and_rubric_from_the_environment(tmp_path, capsys, monkeypatch):
    path = tmp_path / "lines.jsonl"
    path.write_text(json.dumps(good_line()) + "\n", encoding="utf-8")
    monkeypatch.setenv("GOLDENSET_LABELS", str(tmp_path / "env-labels"))
    monkeypatch.setenv("GOLDENSET_RUBRIC", str(RUBRIC_FILE))
    code, _, _ = run_labels(["import", str(path)], capsys)
    assert code == 0
    assert [p.name for p in (tmp_path / "env-labels").rglob("*.jsonl")] == ["import-ben.jsonl"]


def test_labels_is_a_group_that_lists_import(capsys):
    code, out, _ = run_labels(["--help"], capsys)
    assert code == 0
    assert "import" in out


# --------------------------------------------------------------------------- a REAL Label Studio's export

RECORDED = Path(__file__).resolve().parents[1] / "data" / "label-studio" / "export.json"


def test_the_recorded_export_holds_the_tasks_this_export_writes_today(pooled, tmp_path):
    # tests/data/label-studio/export.json came from Label Studio 1.23.2 (see its README): if the
    # task export changes, the recording no longer matches and must be made again.
    tasks = export(pooled, tmp_path / "tasks.json")
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert [t["data"] for t in recorded] == [t["data"] for t in tasks]


def test_a_real_label_studio_export_gives_the_label_lines_worked_out_by_hand(tmp_path):
    labels = tmp_path / "labels"
    result = import_labels(RECORDED, rubric=RUBRIC, labels_dir=labels, now=NOW)
    # Label Studio 1.23 gives completed_by as the bare user id (1, the one user of the recording);
    # ts is the annotation's updated_at. Tasks 1-3 were annotated all-pass / coverage failing /
    # authority and recency failing.
    user = "label-studio-user-1"
    common = {"annotator": user, "rubric": "support-policies", "kind": "human", "event": "label"}
    assert read_lines(labels / "dt=2026-12-02" / f"import-{user}.jsonl") == [
        {
            **common,
            "query_id": Q1,
            "doc_id": "b",
            "doc_version": "v2",
            "label": "relevant",
            "decided_by": "coverage",
            "ts": "2026-12-05T08:04:48.954614Z",
            "dimensions": passing(),
            "note": "states 14 days",
            "origin": {"tool": "label-studio", "task": 1, "annotation": 1},
        },
        {
            **common,
            "query_id": Q2,
            "doc_id": "e2",
            "doc_version": "v1",
            "label": "partial",
            "decided_by": "coverage",
            "ts": "2026-12-05T08:04:49.385909Z",
            "dimensions": passing(coverage="fail"),
            "origin": {"tool": "label-studio", "task": 2, "annotation": 2},
        },
        {
            **common,
            "query_id": Q1,
            "doc_id": "d2",
            "doc_version": "v3",
            "label": "irrelevant",
            "decided_by": "recency",
            "ts": "2026-12-05T08:04:49.791500Z",
            "dimensions": passing(authority="fail", recency="fail"),
            "origin": {"tool": "label-studio", "task": 3, "annotation": 3},
        },
    ]
    # Task 5 left entity unanswered; task 6 holds two contradicting annotations and a skipped
    # (cancelled) one; task 7 chose no decided-by. Six tasks (4, 8-12) were not annotated.
    assert [(r.where, r.reason) for r in result.rejects] == [
        ("task 5 annotation 4", "missing_field"),
        ("task 6 annotation 5", "label_contradicts_rubric"),
        ("task 6 annotation 6", "cancelled"),
        ("task 6 annotation 7", "label_contradicts_rubric"),
        ("task 7 annotation 8", "missing_field"),
    ]
    assert (result.n_written, result.already_imported, result.unannotated) == (3, 0, 6)
