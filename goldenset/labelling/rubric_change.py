"""What a rubric edit would do to the label lines already ingested, before a build lets it (contract 9.3).

Renaming a label in a rubric that stays closed used to publish with exit 0: every line
with the old name became invalid and the pairs fell back to other labels. A build now
compares the rubric with the one each ingested label file was checked against
(`label_files.rubric_sha256`) and, when they differ, checks every stored line again
under the new rubric before anything is ingested.

Decisions
---------
- **What refuses.** A line accepted before that the new rubric rejects; a line whose label
  keeps its name but gets another grade; a line rejected before (for `invalid_field` or
  `label_contradicts_rubric`, the rubric's two reasons) that the new rubric accepts. Each
  changes a label of the published set. A change with none of these (a reworded test, a
  new dimension nobody's lines give) goes through with one line saying so.
- **What is checked.** The lines as stored (`human_labels.raw`, `label_rejects.raw`): a file
  that changed on disk too is re-read by the build anyway, and its new lines are judged by
  the new rubric like any new line.
- **Sample.** The first 10 changes ordered by (source_file, line), accepted and rejected lines
  together; a rejected line's BEFORE is `rejected: DETAIL`, the detail its rejection stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from goldenset.connection import Connection
from goldenset.labelling.lines import parse_label_line
from goldenset.labelling.rubric import Rubric
from goldenset.labelling.rubric_set import RubricSet, projects_to_check
from goldenset.records import Rejected

SAMPLE = 10
RUBRIC_REASONS = ("invalid_field", "label_contradicts_rubric")


@dataclass(frozen=True)
class LineChange:
    """One stored label line whose outcome the new rubric changes."""

    source_file: str
    line: int
    query_id: str | None
    doc_id: str | None
    annotator: str | None
    before: str  # "partial (grade 1)" or "rejected: <reason>"
    after: str

    def text(self) -> str:
        who = f"query {self.query_id} doc {self.doc_id}" if self.query_id else "a line"
        by = f" by {self.annotator}" if self.annotator else ""
        return f"{self.source_file}:{self.line} {who}{by}: {self.before} -> {self.after}"


@dataclass
class RubricChange:
    """The effect of checking every stored label line under a new rubric."""

    old_sha256: list[str]
    new_sha256: str
    lines_checked: int = 0
    become_invalid: int = 0
    grade_changes: int = 0
    become_valid: int = 0
    sample: list[LineChange] = field(default_factory=list)

    @property
    def changes_labels(self) -> bool:
        return bool(self.become_invalid or self.grade_changes or self.become_valid)

    def summary(self) -> str:
        return (
            f"{self.become_invalid} label line(s) become invalid, {self.grade_changes} label(s) change grade, "
            f"{self.become_valid} rejected line(s) become valid (of {self.lines_checked} stored lines)"
        )

    def _add(self, change: LineChange) -> None:
        # Each of the two passes (accepted lines, rejected lines) comes in (source_file, line)
        # order, so its first SAMPLE changes are all it can add to the first SAMPLE of both.
        self.sample.append(change)
        self.sample.sort(key=lambda c: (c.source_file, c.line))
        del self.sample[SAMPLE:]


def _grade(label: str, grade: int) -> str:
    return f"{label} (grade {grade})"


def rubric_change(con: Connection, rubric: Rubric | RubricSet) -> RubricChange | None:
    """None when every ingested label file was checked against `rubric`; else what checking again would change.

    With a set of rubrics (contract 9.5) each line is checked against the rubric it names and
    the project of its query, so moving a project to another rubric counts like an edit.
    """
    old = [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT rubric_sha256 FROM label_files WHERE rubric_sha256 IS DISTINCT FROM ? "
            "ORDER BY rubric_sha256",
            [rubric.content_sha256],
        ).fetchall()
    ]
    if not old:
        return None
    change = RubricChange(old_sha256=[o or "" for o in old], new_sha256=rubric.content_sha256)
    project_of = projects_to_check(con, rubric)
    accepted = con.execute(
        "SELECT h.source_file, h.line, h.query_id, h.doc_id, h.annotator, h.label, h.grade, h.raw "
        "FROM human_labels h JOIN label_files f USING (source_file) "
        "WHERE f.rubric_sha256 IS DISTINCT FROM ? ORDER BY h.source_file, h.line",
        [rubric.content_sha256],
    ).fetchall()
    for source_file, line, qid, doc_id, annotator, label, grade, raw in accepted:
        change.lines_checked += 1
        before = f"{label} (grade {grade})"
        try:
            rec = parse_label_line(raw.encode("utf-8"), rubric, project_of)
        except Rejected as exc:
            change.become_invalid += 1
            change._add(LineChange(source_file, line, qid, doc_id, annotator, before, f"rejected: {exc.detail}"))
            continue
        if rec.grade != grade:
            change.grade_changes += 1
            change._add(LineChange(source_file, line, qid, doc_id, annotator, before, _grade(rec.label, rec.grade)))
    rejected = con.execute(
        "SELECT r.source_file, r.line, r.reason, r.detail, r.raw FROM label_rejects r "
        "JOIN label_files f USING (source_file) "
        "WHERE f.rubric_sha256 IS DISTINCT FROM ? AND list_contains(?, r.reason) AND r.raw IS NOT NULL "
        "ORDER BY r.source_file, r.line",
        [rubric.content_sha256, list(RUBRIC_REASONS)],
    ).fetchall()
    for source_file, line, reason, detail, raw in rejected:
        change.lines_checked += 1
        try:
            rec = parse_label_line(raw.encode("utf-8"), rubric, project_of)
        except Rejected:
            continue
        change.become_valid += 1
        change._add(
            LineChange(
                source_file,
                line,
                rec.query_id,
                rec.doc_id,
                rec.annotator,
                f"rejected: {detail or reason}",
                _grade(rec.label, rec.grade),
            )
        )
    return change
