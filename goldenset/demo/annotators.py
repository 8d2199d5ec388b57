"""Two simulated annotators of the support team, labelling by the support-policies rubric.

They answer the rubric's pass/fail tests, as the labelling page asks people to, and
the label follows from the answers. What a careful reader finds is written down per
support question (`SUPPORT_TRUTH`); `ana` answers by it. `ben` is a real second
reader: stricter on named plans (a page that does not name the annual plan a question
names fails `entity`), and, drawn from his own seeded generator, sometimes lenient on
coverage or answerability. Both spot the superseded refund page: it states an answer,
from a version no longer in force, so it fails `recency`, which makes it irrelevant.

They label the support project's part of the labelling queue (ben only its first two
thirds, so some pairs have one label) and the support labels that `relabel_queue`
lists as superseded: the queue leaves those out (relabelling cannot clear the flag),
but only a person can overrule the agents' `helped` on a page no longer in force.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from goldenset.connection import Connection
from goldenset.demo import flipped
from goldenset.demo.logbook import dumps
from goldenset.demo.policies import (
    DATA_RETENTION,
    INVOICES,
    PAGE_IN_FORCE,
    REVISED_PAGE,
    SERVICE_CREDITS,
    STALE_PAGE,
    TERMS,
)
from goldenset.labelling.rubric import Rubric
from goldenset.records import normalise_task

PROJECT = "support"
AUTHORITIES = ("policies/", "legal/")


@dataclass(frozen=True)
class Truth:
    """What a careful reader finds for one support question: the pages that answer it, and those that answer part."""

    task: str
    relevant: frozenset[str]
    partial: frozenset[str] = frozenset()


# Pages no longer in force: they fail `recency` whatever they say, for every question.
SUPERSEDED = frozenset({STALE_PAGE})
# Pages that state an answer to a question, but from a version no longer in force.
OUTDATED_ANSWERS = {
    "How many days does a customer have to request a refund?": STALE_PAGE,
    "Can a customer get a refund after cancelling an annual plan?": STALE_PAGE,
}

SUPPORT_TRUTH = (
    Truth("How many days does a customer have to request a refund?", frozenset({PAGE_IN_FORCE})),
    Truth(
        "Can a customer get a refund after cancelling an annual plan?",
        frozenset({REVISED_PAGE}),
        partial=frozenset({PAGE_IN_FORCE}),
    ),
    Truth("How do I cancel a subscription before it renews?", frozenset({REVISED_PAGE}), partial=frozenset({TERMS})),
    Truth("Is a customer owed service credits after an outage?", frozenset({SERVICE_CREDITS})),
    Truth(
        "How long do we keep customer data after an account is closed?",
        frozenset({DATA_RETENTION}),
        partial=frozenset({TERMS}),
    ),
    Truth("Can a customer get a VAT invoice for an old payment?", frozenset({INVOICES})),
    # Asked once (flipped.py): the agent later takes back its `helped`; the people's label keeps the query.
    Truth(flipped.QUESTION, frozenset({flipped.ANSWER})),
)
_TRUTH = {normalise_task(t.task): t for t in SUPPORT_TRUTH}
_OUTDATED = {normalise_task(task): doc for task, doc in OUTDATED_ANSWERS.items()}


@dataclass(frozen=True)
class Pair:
    """What an annotator is shown: the question, the document at a version, and why it is asked."""

    query_id: str
    project: str
    task: str
    doc_id: str
    doc_version: str
    text: str
    reason: str  # stale, successor, pooled (the queue's) or superseded (relabel_queue's)


def read_queue_export(path: Path) -> tuple[Pair, ...]:
    """The tasks of `goldenset pool export --format jsonl`, in priority order."""
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        t = json.loads(raw)
        out.append(Pair(t["query_id"], t["project"], t["task"], t["doc_id"], t["doc_version"], t["text"], t["reason"]))
    return tuple(out)


def superseded_pairs(con: Connection, project: str = PROJECT) -> tuple[Pair, ...]:
    """A project's stale labels on superseded documents, at the judged version, with that version's text."""
    from goldenset.scoring.pairs import passages

    rows = con.execute(
        "SELECT query_id, project, task, doc_id, judged_version FROM relabel_queue "
        "WHERE reason = 'superseded' AND project = ? ORDER BY query_id, doc_id",
        [project],
    ).fetchall()
    texts = passages(con, [(r[3], r[4]) for r in rows])
    return tuple(Pair(q, p, t, d, v, texts.get((d, v), ""), "superseded") for q, p, t, d, v in rows)


@dataclass(frozen=True)
class Answers:
    """One annotator's answers on one pair: the tests that fail, the one that decided, and a note."""

    failing: frozenset[str]
    decided_by: str
    note: str | None = None


def careful_reading(pair: Pair) -> Answers:
    """The answers `SUPPORT_TRUTH` gives (ana's): authority first, then recency, answerability, coverage."""
    question = normalise_task(pair.task)
    truth = _TRUTH.get(question)
    if not pair.doc_id.startswith(AUTHORITIES):
        return Answers(frozenset({"authority", "answerability", "coverage"}), "authority", "not a policy page")
    if pair.doc_id in SUPERSEDED:
        if _OUTDATED.get(question) == pair.doc_id:
            return Answers(frozenset({"recency"}), "recency", "states the 2022 terms, superseded on 1 July 2026")
        return Answers(frozenset({"recency", "answerability", "coverage"}), "recency", "superseded page")
    if truth is not None and pair.doc_id in truth.relevant:
        return Answers(frozenset(), "answerability")
    if truth is not None and pair.doc_id in truth.partial:
        return Answers(frozenset({"coverage"}), "coverage", "answers part of the question")
    return Answers(frozenset({"answerability", "coverage"}), "answerability", "does not say")


class Annotator:
    """A simulated person: a name, a seeded generator, and how far they depart from the careful reading."""

    def __init__(self, name: str, seed: int, *, strict_plans: bool = False, lenient: float = 0.0) -> None:
        self.name = name
        self.rng = random.Random(f"{seed}:{name}")  # str seeds are hashed with sha512: same draws everywhere
        self.strict_plans = strict_plans
        self.lenient = lenient

    def answer(self, pair: Pair) -> Answers:
        """This annotator's answers on the pair."""
        base = careful_reading(pair)
        if "authority" in base.failing or "recency" in base.failing:
            return base  # nobody disagrees that a stdlib page or the superseded page fails
        if self.strict_plans and "annual plan" in pair.task.casefold() and "annual" not in pair.text.casefold():
            return Answers(base.failing | {"entity"}, "entity", "does not name the annual plan")
        # One draw for each pair that gets here, whatever it decides: the draws stay in a fixed order.
        lenient = self.rng.random() < self.lenient
        if lenient and base.failing == {"coverage"}:
            return Answers(frozenset(), "coverage", "covers it well enough")
        if lenient and base.failing == {"answerability", "coverage"}:
            return Answers(frozenset({"coverage"}), "coverage", "hints at it")
        return base


@dataclass(frozen=True)
class SampleLabelLine:
    """One label line (contract 7.2), as an annotation tool appends it."""

    query_id: str
    doc_id: str
    doc_version: str
    label: str
    decided_by: str
    annotator: str
    rubric: str
    ts: datetime
    dimensions: Mapping[str, str]
    note: str | None

    def to_json(self) -> dict[str, Any]:
        """The line's object, keys in the contract's order."""
        out: dict[str, Any] = {
            "event": "label",
            "query_id": self.query_id,
            "doc_id": self.doc_id,
            "doc_version": self.doc_version,
            "label": self.label,
            "decided_by": self.decided_by,
            "annotator": self.annotator,
            "rubric": self.rubric,
            "ts": self.ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "dimensions": dict(self.dimensions),
            "kind": "human",
        }
        if self.note:
            out["note"] = self.note
        return out


def label_line(pair: Pair, answers: Answers, who: str, rubric: Rubric, at: datetime) -> SampleLabelLine:
    """The line for these answers: the label the rubric gives the assignment."""
    (label,) = rubric.labels_for(answers.failing)  # a closed rubric gives exactly one
    dims = {d: "fail" if d in answers.failing else "pass" for d in rubric.dimension_names}
    return SampleLabelLine(
        pair.query_id,
        pair.doc_id,
        pair.doc_version,
        label,
        answers.decided_by,
        who,
        rubric.name,
        at,
        dims,
        answers.note,
    )


@dataclass(frozen=True)
class Session:
    """What one annotator labelled, in order."""

    annotator: str
    lines: tuple[SampleLabelLine, ...]


def label_sessions(
    queue: Sequence[Pair], review: Sequence[Pair], rubric: Rubric, day: date, seed: int
) -> tuple[Session, Session]:
    """ana labels every support pair of the queue, ben its first two thirds; both review the superseded pages."""
    ours = [p for p in queue if p.project == PROJECT]
    crew = (
        (Annotator("ana", seed), ours, time(9, 0)),
        (Annotator("ben", seed, strict_plans=True, lenient=0.3), ours[: -(-2 * len(ours) // 3)], time(13, 0)),
    )
    sessions = []
    for person, pairs, starts in crew:
        clock = datetime.combine(day, starts, UTC)
        lines = []
        for i, pair in enumerate((*pairs, *review)):
            lines.append(label_line(pair, person.answer(pair), person.name, rubric, clock + timedelta(minutes=2 * i)))
        sessions.append(Session(person.name, tuple(lines)))
    return sessions[0], sessions[1]


# --------------------------------------------------------------------------- lines a build must refuse

# One bad line per reason a build gives label lines, each breaking only its own rule.
LABEL_REJECT_KINDS: dict[str, str] = {
    "cut_off": "invalid_json",
    "misspelt_event": "unknown_event",
    "no_decided_by": "missing_field",
    "misspelt_label": "invalid_field",
    "partial_decided_by_recency": "label_contradicts_rubric",
    "version_no_snapshot_holds": "unknown_document_version",
}


@dataclass(frozen=True)
class BadLine:
    """A deliberately bad label line and the reason a build must give it."""

    kind: str
    reason: str
    text: str


def bad_label_lines(good: SampleLabelLine) -> tuple[BadLine, ...]:
    """Variants of a valid line, one per LABEL_REJECT_KINDS."""
    base = good.to_json()
    no_dims = {k: v for k, v in base.items() if k != "dimensions"}
    variants: dict[str, str] = {
        "cut_off": dumps(base)[:60],
        "misspelt_event": dumps({**base, "event": "lable"}),
        "no_decided_by": dumps({k: v for k, v in base.items() if k != "decided_by"}),
        "misspelt_label": dumps({**base, "label": "relevent"}),
        "partial_decided_by_recency": dumps({**no_dims, "label": "partial", "decided_by": "recency"}),
        "version_no_snapshot_holds": dumps({**base, "doc_version": "v9"}),
    }
    return tuple(BadLine(kind, reason, variants[kind]) for kind, reason in LABEL_REJECT_KINDS.items())


@dataclass(frozen=True)
class LabelFile:
    """A label file written, with how many good and bad lines it holds."""

    path: Path
    annotator: str
    labels: int
    bad: tuple[BadLine, ...] = ()


def write_label_file(labels: Path, day: date, session: Session, bad: Sequence[BadLine] = ()) -> LabelFile:
    """Write LABELS/dt=<day>/<annotator>.jsonl; bad lines go in after every third good one, as hand edits do."""
    folder = labels / f"dt={day.isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    texts: list[str] = []
    pending = list(bad)
    for i, line in enumerate(session.lines):
        texts.append(dumps(line.to_json()))
        if pending and i % 3 == 2:
            texts.append(pending.pop(0).text)
    texts.extend(b.text for b in pending)
    path = folder / f"{session.annotator}.jsonl"
    path.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    return LabelFile(path, session.annotator, len(session.lines), tuple(bad))
