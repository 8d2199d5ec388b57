"""The labelling page's queue view: every pair with its status, filters, and progress per project.

Decisions
---------
- **Pair numbers are the queue's priority** (contract 7.4: 1, 2, 3 ... in the order the pool
  wrote), in the URL (`/pair/6`) as on the page ("pair 6 of 401", 401 being the
  `labelling_queue` count `goldenset status` shows): a restart of the page, or another
  annotator, sees the same number for the same pair until the next `goldenset pool`. A pair
  left out because no rubric judges its project keeps its number unused.
- **Every pair of the queue is listed**, those labelled before the page started included, so a
  label can be opened again and corrected from here (a correction appends a new line: labels
  are append-only, the latest line is the annotator's label, contract 7.2).
- **Status** of a pair for this annotator: `labelled` once they hold a line for it at the
  queued version (written before the page started, or since; the label shown is the latest,
  corrections included), `passed over` once they left its page with `n` in this run without
  labelling it, else `to do`. In a team the status is the team's: `labelled` once the pair
  holds every label it needs (two for an overlap pair, which the view marks).
- **Filters** are exact matches on project, reason and status; an unknown value matches
  nothing (said on the page), it is not an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

STATUSES = ("to do", "labelled", "passed over")


@dataclass(frozen=True)
class ListedPair:
    """One pair as the queue view lists it."""

    number: int  # the queue's priority, as in /pair/<number>
    project: str
    task: str
    doc_id: str
    reason: str
    status: str
    annotator: str | None
    label: str | None
    overlap: bool = False  # a team's overlap pair: labelled twice, for agreement
    yours: str | None = None  # the label this annotator holds on it (reopen to correct it)


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


def status_of(index: int, labelled: Mapping[int, Any], passed_over: set[int]) -> str:
    """The status of the pair at 0-based `index` (see the module's decisions)."""
    if index in labelled:
        return "labelled"
    return "passed over" if index in passed_over else "to do"


def queue_rows(items: Iterable[Any], labelled: Mapping[int, dict[str, Any]], passed_over: set[int]) -> list[ListedPair]:
    """Every queued pair, in queue order, with its status and (when labelled) who labelled it and how.

    `labelled`: item index -> the annotator's latest line for it (before the page started, or since).
    """
    rows = []
    for i, item in enumerate(items):
        line = labelled.get(i)
        rows.append(
            ListedPair(
                item.priority,
                item.project or "(none)",
                item.task or "",
                item.doc_id,
                item.reason,
                status_of(i, labelled, passed_over),
                line["annotator"] if line else None,
                line["label"] if line else None,
                yours=line["label"] if line else None,
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
