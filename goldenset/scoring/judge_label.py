"""The judge as an annotator (contract 8.3): score the labelling queue, write label lines tagged `kind: judge`.

Each queue row is asked once, in priority order (query: the golden task; passage:
the document's text at the row's doc_version). A valid answer becomes one label
line (7.2) appended to `LABELS/dt=<UTC day the run started>/judge-NAME.jsonl`:

- `label`: the first rubric label, in file order, whose grade equals the score;
  none is the invalid reason `no_label_for_grade` (nothing written).
- `decided_by`: the first dimension, in rubric order, admissible for that label
  (7.1): for a label with fail/any_fail clauses the first dimension they name,
  else the rubric's first dimension.
- `doc_version` the row's; `ts` the UTC time the answer arrived, to the
  microsecond (`2026-12-01T10:00:00.123456Z`); `kind` `judge`; `rubric` the
  rubric's name; `annotator` NAME.
- Extra fields (7.2 ignores unknown fields): `rationale_summary` and
  `supporting_span`, as the judge gave them; `judge_model` (--judge-model) and
  `judge_prompt_version` (judge.PROMPT_VERSION), so a line says which judge
  made it.

Every line is checked with the build's own line check (`parse_label_line` with
the rubric) before it is written; a line that fails it is not written and is
listed (`refused`). Lines are appended one at a time, flushed and fsynced (and the
folder when the file is new), under an exclusive lock, so a crash keeps every
answer already received and two runs of one annotator do not interleave bytes.

Decisions:

- The score cache is neither read nor written: a label line is the judge's
  answer now, with the time it was given; re-running re-asks (a model behind the
  same name may have changed). The warehouse is read, then closed before the
  first question, so a build is never held up by a slow judge.
- A queue row whose version no loaded snapshot holds is not asked (it has no
  passage) and is not counted in `scored`; it is counted in `unasked`.
- The health figure is the share of hallucinated spans among the answers
  received (valid or invalid; transport errors are not answers).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from goldenset.labelling.annotator import check_annotator_name
from goldenset.labelling.durable import append_line
from goldenset.labelling.lines import parse_label_line
from goldenset.labelling.rubric import Rubric
from goldenset.records import Rejected
from goldenset.scoring import ScorerError
from goldenset.scoring.judge import PROMPT_VERSION, REASONS, InvalidAnswer, JudgeClient
from goldenset.scoring.pairs import PairToJudge

NO_LABEL_FOR_GRADE = "no_label_for_grade"
INVALID_REASONS = (*REASONS, NO_LABEL_FOR_GRADE)


def check_annotator(name: str) -> str:
    """Return `name` when it can name a judge's label file; UsageError (exit 2) otherwise."""
    return check_annotator_name(
        name, "--annotator", "letters, digits, '.', '_', '-'", "pick such a name, e.g. qwen-judge"
    )


def label_for_grade(rubric: Rubric, grade: int) -> str | None:
    """The first label in file order whose grade equals `grade`, or None."""
    return next((lab.name for lab in rubric.labels if lab.grade == grade), None)


def utc_z(ts: datetime) -> str:
    """A contract ts with microseconds: 2026-12-01T10:00:00.123456Z."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class RowProblem:
    """A queue row that gave no label line, and why (an invalid reason, an error, a refused line)."""

    query_id: str
    doc_id: str
    reason: str
    detail: str = ""


@dataclass
class JudgeLabelReport:
    """What `judge label` did: rows asked, lines written, invalid answers by reason, transport errors."""

    annotator: str
    file: Path
    scored: int = 0
    labels_written: int = 0
    invalid: dict[str, int] = field(default_factory=lambda: dict.fromkeys(INVALID_REASONS, 0))
    errors: int = 0
    unasked: int = 0
    problems: list[RowProblem] = field(default_factory=list)
    refused: list[RowProblem] = field(default_factory=list)

    @property
    def answers(self) -> int:
        """Answers received: rows asked minus transport errors."""
        return self.scored - self.errors

    @property
    def hallucinated_span_share(self) -> float:
        """The judge's health figure: hallucinated spans over answers received; 0 when none came."""
        return self.invalid["hallucinated_span"] / self.answers if self.answers else 0.0

    def to_json(self) -> dict[str, Any]:
        """Contract 8.3's object, exactly: scored, labels_written, invalid (every reason), errors."""
        return {
            "scored": self.scored,
            "labels_written": self.labels_written,
            "invalid": dict(self.invalid),
            "errors": self.errors,
        }


class JudgeLabelFile:
    """LABELS/dt=<day>/judge-NAME.jsonl, appended one fsynced line at a time."""

    def __init__(self, labels_dir: Path, annotator: str, day: date):
        self.path = Path(labels_dir) / f"dt={day.isoformat()}" / f"judge-{check_annotator(annotator)}.jsonl"

    def append(self, line: dict[str, Any]) -> None:
        """Append one JSON line, flush and fsync it; fsync the folders it created."""
        append_line(self.path, line)


def label_line(
    row: PairToJudge,
    label: str,
    rubric: Rubric,
    annotator: str,
    answered_at: datetime,
    rationale: str,
    span: str,
    model: str,
) -> dict[str, Any]:
    """The label line (7.2) of one valid answer, with the judge's rationale and span as extra fields."""
    return {
        "event": "label",
        "query_id": row.query_id,
        "doc_id": row.doc_id,
        "doc_version": row.doc_version,
        "label": label,
        "decided_by": rubric.admissible_decided_by(label)[0],
        "annotator": annotator,
        "rubric": rubric.name,
        "ts": utc_z(answered_at),
        "kind": "judge",
        "rationale_summary": rationale,
        "supporting_span": span,
        "judge_model": model,
        "judge_prompt_version": PROMPT_VERSION,
    }


def judge_queue(
    rows: Sequence[PairToJudge],
    client: JudgeClient,
    rubric: Rubric,
    annotator: str,
    labels_dir: Path,
    *,
    today: date | None = None,
    clock: Callable[[], datetime] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> JudgeLabelReport:
    """Ask the judge about every queue row and write a label line per valid answer."""
    clock = clock or (lambda: datetime.now(UTC))
    out = JudgeLabelFile(labels_dir, annotator, today or clock().date())
    report = JudgeLabelReport(annotator, out.path)
    asked = [r for r in rows if r.passage is not None]
    report.unasked = len(rows) - len(asked)
    if asked:
        client.probe()  # a judge that is down stops here, before any row is counted
    for n, row in enumerate(asked, start=1):
        report.scored += 1
        passage = row.passage or ""
        try:
            got = client.ask(row.task, passage)
        except ScorerError as exc:
            report.errors += 1
            report.problems.append(RowProblem(row.query_id, row.doc_id, "error", str(exc)))
        else:
            answered_at = clock()
            if isinstance(got, InvalidAnswer):
                report.invalid[got.reason] += 1
                report.problems.append(RowProblem(row.query_id, row.doc_id, got.reason, got.detail))
            elif (label := label_for_grade(rubric, got.score)) is None:
                report.invalid[NO_LABEL_FOR_GRADE] += 1
                report.problems.append(
                    RowProblem(
                        row.query_id,
                        row.doc_id,
                        NO_LABEL_FOR_GRADE,
                        f"rubric {rubric.name!r} has no label of grade {got.score}",
                    )
                )
            else:
                line = label_line(
                    row, label, rubric, annotator, answered_at, got.rationale, got.span, client.settings.model
                )
                try:
                    parse_label_line(json.dumps(line).encode("utf-8"), rubric)
                except Rejected as rej:
                    report.refused.append(RowProblem(row.query_id, row.doc_id, rej.reason, rej.detail))
                else:
                    out.append(line)
                    report.labels_written += 1
        if progress is not None:
            progress(n, len(asked))
    return report
