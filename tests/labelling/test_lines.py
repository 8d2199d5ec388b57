"""Label lines (contract 7.2): each rule and the order of the reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldenset.labelling.lines import parse_label_line
from goldenset.labelling.rubric import load_rubric
from goldenset.records import Rejected

RUBRIC = load_rubric(Path(__file__).parents[1] / "data" / "conformance" / "rubric.yaml")
GOOD = {
    "event": "label",
    "query_id": "07c6b23f1023f387",
    "doc_id": "d1",
    "doc_version": "v1",
    "label": "relevant",
    "decided_by": "answerability",
    "annotator": "ana",
    "rubric": "support-policies",
    "ts": "2026-11-03T10:00:00Z",
}
ALL_PASS = {d: "pass" for d in ("answerability", "authority", "recency", "coverage", "entity")}


def reason(line) -> str | None:
    raw = line if isinstance(line, bytes) else (line if isinstance(line, str) else json.dumps(line)).encode()
    try:
        parse_label_line(raw, RUBRIC)
    except Rejected as exc:
        return exc.reason
    return None


def with_(**changes) -> dict:
    rec = dict(GOOD)
    for k, v in changes.items():
        if v is ...:
            rec.pop(k, None)
        else:
            rec[k] = v
    return rec


def test_a_good_line_is_a_label_with_kind_human_by_default():
    rec = parse_label_line(json.dumps(GOOD).encode(), RUBRIC)
    assert (rec.kind, rec.label, rec.decided_by, rec.ts.isoformat()) == (
        "human",
        "relevant",
        "answerability",
        "2026-11-03T10:00:00",
    )


@pytest.mark.parametrize(
    "line, expected",
    [
        (b'{"event": "label", ', "invalid_json"),
        (b'{"event": "label", "event": "label"}', "invalid_json"),  # a duplicate key
        (b"\xff\xfe", "invalid_json"),
        (b'["label"]', "not_an_object"),
        (with_(event=...), "unknown_event"),
        (with_(event=7), "unknown_event"),
        (with_(event="lable"), "unknown_event"),
    ],
)
def test_the_first_three_reasons(line, expected):
    assert reason(line) == expected


@pytest.mark.parametrize(
    "field", ["query_id", "doc_id", "doc_version", "label", "decided_by", "annotator", "rubric", "ts"]
)
def test_every_required_field_missing_or_null_is_missing_field(field):
    assert reason(with_(**{field: ...})) == "missing_field"
    assert reason(with_(**{field: None})) == "missing_field"


@pytest.mark.parametrize(
    "changes",
    [
        {"query_id": "07C6B23F1023F387"},
        {"query_id": "07c6b23f1023f38"},
        {"query_id": 7},
        {"doc_id": ""},
        {"doc_version": ""},
        {"annotator": ""},
        {"annotator": 3},
        {"ts": "2026-11-03T10:00:00"},
        {"ts": "2026-11-03T24:00:00Z"},
        {"kind": "robot"},
        {"rubric": "another-rubric"},
        {"label": "maybe"},
        {"decided_by": "tone"},
        {"dimensions": {**ALL_PASS, "tone": "pass"}},
        {"dimensions": {"answerability": "pass"}},
        {"dimensions": {**ALL_PASS, "recency": "yes"}},
        {"dimensions": ["pass"]},
    ],
)
def test_invalid_fields(changes):
    assert reason(with_(**changes)) == "invalid_field"


def test_missing_field_outranks_invalid_field():
    assert reason(with_(query_id="BAD", annotator=...)) == "missing_field"


@pytest.mark.parametrize(
    "changes",
    [
        {"label": "irrelevant", "decided_by": "coverage"},  # coverage is in no clause of irrelevant
        {"label": "partial", "decided_by": "coverage", "dimensions": ALL_PASS},  # all pass makes relevant
        # recency passes here while authority, named in irrelevant's any_fail, fails: recency did not decide it.
        {"label": "irrelevant", "decided_by": "recency", "dimensions": {**ALL_PASS, "authority": "fail"}},
    ],
)
def test_labels_that_contradict_the_rubric(changes):
    assert reason(with_(**changes)) == "label_contradicts_rubric"


def test_a_label_whose_dimensions_agree_is_accepted_and_kept_as_json():
    rec = parse_label_line(
        json.dumps(
            with_(label="irrelevant", decided_by="authority", dimensions={**ALL_PASS, "authority": "fail"})
        ).encode(),
        RUBRIC,
    )
    assert json.loads(rec.dimensions) == {**ALL_PASS, "authority": "fail"}


def test_note_and_unknown_fields_are_never_checked():
    assert reason(with_(note=["not", "a", "string"], origin={"x": 1})) is None
    assert reason(with_(kind="judge")) is None
