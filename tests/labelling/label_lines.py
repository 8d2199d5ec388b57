"""Real label lines for hand-made worlds: write them under LABELS, ingest them with the conformance rubric."""

from __future__ import annotations

import json
from pathlib import Path

from goldenset.labelling.ingest import ingest_labels
from goldenset.labelling.rubric import load_rubric

RUBRIC = load_rubric(Path(__file__).parents[1] / "data" / "conformance" / "rubric.yaml")
LABEL_OF_GRADE = {2: ("relevant", "answerability"), 1: ("partial", "coverage"), 0: ("irrelevant", "recency")}


def label_line(query_id: str, doc_id: str, version: str, grade: int, annotator: str, ts: str, kind: str = "human"):
    """One label line (contract 7.2) giving the pair the conformance rubric's label of that grade."""
    label, decided_by = LABEL_OF_GRADE[grade]
    return {
        "event": "label",
        "query_id": query_id,
        "doc_id": doc_id,
        "doc_version": version,
        "label": label,
        "decided_by": decided_by,
        "annotator": annotator,
        "rubric": RUBRIC.name,
        "ts": ts,
        "kind": kind,
    }


def write_and_ingest(con, labels: Path, day: str, name: str, lines) -> None:
    """Write `lines` as LABELS/dt=day/name and ingest every label file."""
    folder = labels / f"dt={day}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    ingest_labels(con, labels, RUBRIC)
