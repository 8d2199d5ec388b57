"""One label line in, one label or a reject reason out (contract 7.2).

Reasons are checked in the contract's order, so the first rule a line breaks is
the one reported: invalid_json, not_an_object, unknown_event, missing_field,
invalid_field, label_contradicts_rubric. With a set of rubrics (contract 9.5) a line is
checked against the rubric it names, and, when the caller knows its query's project,
refused as invalid_field when that rubric does not judge the project. `unknown_document_version` depends on
the corpus snapshots the builds recorded, so it is decided at build time (see
`current_labels` and `rejected_records` in goldenset/schema.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from goldenset.labelling.rubric import Rubric
from goldenset.labelling.rubric_set import RubricSet
from goldenset.records import Rejected, json_object, parse_ts

KINDS = ("human", "judge")
REQUIRED = ("query_id", "doc_id", "doc_version", "label", "decided_by", "annotator", "rubric", "ts")
_QUERY_ID = re.compile(r"[0-9a-f]{16}")


@dataclass(frozen=True, slots=True)
class LabelRecord:
    """A label line that passed every line and rubric rule."""

    query_id: str
    doc_id: str
    doc_version: str
    label: str
    decided_by: str
    annotator: str
    kind: str
    rubric: str
    ts: datetime  # UTC, naive
    dimensions: str | None  # the pass/fail answers as JSON, when given
    note: str | None
    grade: int  # the label's grade in the rubric the line names


def _nonempty_str(v: object) -> bool:
    return isinstance(v, str) and v != ""


def parse_label_line(
    raw: bytes, rubrics: Rubric | RubricSet, project_of: Mapping[str, str] | None = None
) -> LabelRecord:
    """Validate one non-blank label line against the rubric; raise Rejected with the first reason.

    With a RubricSet the line is checked against the rubric it names; `project_of`
    (query_id -> project) adds the check that this rubric judges the query's project.
    """
    rec = json_object(raw)
    event = rec.get("event")
    if event != "label":
        raise Rejected("unknown_event", f"event {event!r} is not 'label'")
    missing = [n for n in REQUIRED if rec.get(n) is None]
    if missing:
        raise Rejected("missing_field", f"label lacks {', '.join(missing)}")
    qid = rec["query_id"]
    if not isinstance(qid, str) or not _QUERY_ID.fullmatch(qid):
        raise Rejected("invalid_field", f"query_id must be 16 lowercase hex digits, got {qid!r}")
    for name in ("doc_id", "doc_version", "annotator"):
        if not _nonempty_str(rec[name]):
            raise Rejected("invalid_field", f"{name} must be a non-empty string, got {rec[name]!r}")
    try:
        ts = parse_ts(rec["ts"])
    except ValueError as exc:
        raise Rejected("invalid_field", str(exc)) from None
    kind = rec.get("kind")
    if kind is None:
        kind = "human"
    elif kind not in KINDS:
        raise Rejected("invalid_field", f"kind must be human or judge, got {kind!r}")
    dimensions = rec.get("dimensions")
    if isinstance(rubrics, RubricSet) and len(rubrics) == 1 and not rubrics.judges_by_project:
        rubrics = rubrics.rubrics[0]  # one rubric judging every project: 7.2 exactly, its messages too
    if isinstance(rubrics, Rubric):
        rubric = rubrics
    else:
        named = rubrics.named(rec["rubric"])
        if named is None:
            raise Rejected(
                "invalid_field", f"rubric {rec['rubric']!r} is not one of the rubrics in use ({rubrics.name})"
            )
        rubric = named
        project = project_of.get(qid) if project_of is not None else None
        problem = rubrics.project_problem(rubric.name, project) if project is not None else None
        if problem is not None:
            raise Rejected("invalid_field", problem)
    reason = rubric.label_line_reason(
        rubric=rec["rubric"], label=rec["label"], decided_by=rec["decided_by"], dimensions=dimensions
    )
    if reason == "invalid_field":
        raise Rejected("invalid_field", _rubric_detail(rec, rubric))
    if reason == "label_contradicts_rubric":
        raise Rejected("label_contradicts_rubric", _contradiction_detail(rec, rubric))
    note = rec.get("note")
    return LabelRecord(
        query_id=qid,
        doc_id=rec["doc_id"],
        doc_version=rec["doc_version"],
        label=rec["label"],
        decided_by=rec["decided_by"],
        annotator=rec["annotator"],
        kind=kind,
        rubric=rec["rubric"],
        ts=ts,
        dimensions=json.dumps(dimensions, sort_keys=True) if dimensions is not None else None,
        note=note if isinstance(note, str) else None,
        grade=rubric.grade_of(rec["label"]),
    )


def _rubric_detail(rec: dict, rubric: Rubric) -> str:
    if rec["rubric"] != rubric.name:
        return f"rubric {rec['rubric']!r} is not {rubric.name!r}, the rubric in use"
    if rec["label"] not in rubric.label_names:
        return f"label {rec['label']!r} is not one of {', '.join(rubric.label_names)}"
    if rec["decided_by"] not in rubric.dimension_names:
        return f"decided_by {rec['decided_by']!r} is not one of {', '.join(rubric.dimension_names)}"
    return (
        "dimensions must be an object giving every dimension of the rubric "
        f"({', '.join(rubric.dimension_names)}) as pass or fail, and nothing else"
    )


def _contradiction_detail(rec: dict, rubric: Rubric) -> str:
    label, decided_by = rec["label"], rec["decided_by"]
    admissible = rubric.admissible_decided_by(label)
    if decided_by not in admissible:
        return f"{decided_by} cannot decide {label}; it is decided by one of {', '.join(admissible)}"
    dims = rec.get("dimensions") or {}
    failing = sorted(d for d, v in dims.items() if v == "fail")
    found = rubric.labels_for(failing)
    if found != [label]:
        return f"the dimensions given (fail: [{', '.join(failing)}]) make {', '.join(found) or 'no label'}, not {label}"
    return f"{decided_by} passes in the dimensions given, so it cannot be what decided {label}"
