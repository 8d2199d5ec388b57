"""The labelling page's queue view: every pair with its status, filters, and progress per project.

Decisions
---------
- **Pair numbers are 1-based**, in the URL (`/pair/1` is the first pair) as on the page
  ("pair 1 of 5"): one count for a person to say and type.
- **Status** of a pair in this run of the page: `labelled` once a line was written for it
  (by this annotator; the label shown is the latest, corrections included), `passed over`
  once the annotator left its page with `n` without labelling it, else `to do`. Pairs this
  annotator labelled before the page started are not in the queue the page walks (they are
  counted in the header as already labelled).
- **Filters** are exact matches on project, reason and status; an unknown value matches
  nothing (said on the page), it is not an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

STATUSES = ("to do", "labelled", "passed over")


@dataclass(frozen=True)
class ListedPair:
    """One pair as the queue view lists it."""

    number: int  # 1-based, as in /pair/<number>
    project: str
    task: str
    doc_id: str
    reason: str
    status: str
    annotator: str | None
    label: str | None


@dataclass(frozen=True)
class ProjectProgress:
    """Pairs of one project by status."""

    project: str
    labelled: int
    passed_over: int
    to_do: int

    @property
    def total(self) -> int:
        return self.labelled + self.passed_over + self.to_do


def status_of(index: int, done: dict[int, dict[str, Any]], passed_over: set[int]) -> str:
    """The status of the pair at 0-based `index` (see the module's decisions)."""
    if index in done:
        return "labelled"
    return "passed over" if index in passed_over else "to do"


def queue_rows(items: Iterable[Any], done: dict[int, dict[str, Any]], passed_over: set[int]) -> list[ListedPair]:
    """Every queued pair, in queue order, with its status and (when labelled) who labelled it and how."""
    rows = []
    for i, item in enumerate(items):
        line = done.get(i)
        rows.append(
            ListedPair(
                i + 1,
                item.project or "(none)",
                item.task or "",
                item.doc_id,
                item.reason,
                status_of(i, done, passed_over),
                line["annotator"] if line else None,
                line["label"] if line else None,
            )
        )
    return rows


def filter_rows(
    rows: list[ListedPair], project: str | None = None, reason: str | None = None, status: str | None = None
) -> list[ListedPair]:
    """The rows matching every filter given (None or empty: no filter)."""
    return [
        r
        for r in rows
        if (not project or r.project == project)
        and (not reason or r.reason == reason)
        and (not status or r.status == status)
    ]


def progress_by_project(rows: list[ListedPair]) -> list[ProjectProgress]:
    """Labelled, passed over and to do per project, projects in name order."""
    out = []
    for project in sorted({r.project for r in rows}):
        mine = [r.status for r in rows if r.project == project]
        out.append(ProjectProgress(project, mine.count("labelled"), mine.count("passed over"), mine.count("to do")))
    return out
