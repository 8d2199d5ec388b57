"""What goes wrong in a real log, once each at least: resent and reused serves, stray verdicts, bad lines."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from goldenset.demo.corpus import Reindex
from goldenset.demo.logbook import LogBook, dumps, ts
from goldenset.demo.serves import Ids, SampleServe
from goldenset.demo.tasks import Task
from goldenset.demo.verdicts import VerdictWriter

# The deliberate malformed lines, one each, with the reason a build must give.
MALFORMED_KINDS: dict[str, str] = {
    "truncated_line": "invalid_json",
    "nan_score": "invalid_json",
    "json_array": "not_an_object",
    "unknown_event": "unknown_event",
    "verdict_without_ts": "missing_field",
    "ts_without_offset": "invalid_field",
    "rank_as_string": "invalid_field",
    "verdict_maybe": "invalid_field",
}


@dataclass(frozen=True)
class Faults:
    """How many lines of each kind of fault went into the log."""

    n_duplicate_serves: int
    n_conflicting_serves: int
    n_orphan_verdicts: int
    n_unserved_item_verdicts: int
    n_malformed: int


@dataclass(frozen=True)
class Victims:
    """The serves the faults are made from, drawn once so the draws stay in a fixed order."""

    dup_a: SampleServe
    dup_b: SampleServe
    dup_c: SampleServe
    conflict: SampleServe
    unserved: tuple[SampleServe, SampleServe, SampleServe]
    bad_verdict: SampleServe

    @classmethod
    def draw(cls, rng: random.Random, serves: Sequence[SampleServe], days: int) -> Victims:
        """Two serves not on the last day (their copies land a day later), then six others."""
        not_last = [s for s in serves if s.day < days - 1]
        dup_b, conflict = rng.sample(not_last, 2)
        rest = [s for s in serves if s is not dup_b and s is not conflict]
        dup_a, dup_c, u1, u2, u3, bad_verdict = rng.sample(rest, 6)
        return cls(dup_a, dup_b, dup_c, conflict, (u1, u2, u3), bad_verdict)


def _resend_duplicates(ids: Ids, v: Victims, book: LogBook) -> int:
    """Identical serves a client retry re-sent: keys reordered, items reordered, another offset or session."""
    s = v.dup_a
    book.put(s.day, 1, s.instant + timedelta(seconds=1), dumps(dict(reversed(list(s.to_json().items())))))
    s = v.dup_b
    rec = s.to_json()
    rec["items"] = list(reversed(rec["items"]))
    rec["ts"] = ts(s.instant, "+02:00" if s.ts.endswith("Z") else "Z")  # same instant
    book.put(s.day + 1, 1, s.instant + timedelta(days=1), dumps(dict(sorted(rec.items()))))
    s = v.dup_c
    rec = s.to_json()
    rec["session_id"] = ids.new("sess-", 24)
    rec = {k: rec[k] for k in ("items", "task", "project", "ts", "serve_id", "event", "session_id")}
    book.put(s.day, 1, s.instant + timedelta(seconds=30), dumps(rec))
    return 3


def _reuse_serve_id(rng: random.Random, v: Victims, tasks: Mapping[str, Sequence[Task]], book: LogBook) -> int:
    """A conflicting duplicate: the same serve_id reused for another task the next day."""
    s = v.conflict
    rec = s.to_json()
    rec["task"] = rng.choice([t.text for t in tasks[s.project] if t.text != s.canonical])
    book.put(s.day + 1, 1, s.instant + timedelta(days=1), dumps(rec))
    return 1


def _orphan_verdicts(
    rng: random.Random, ids: Ids, relevant: Sequence[str], out: VerdictWriter, start: date, days: int
) -> int:
    """Verdicts for serves that never reached the log."""
    n = 0
    for day in sorted(rng.randrange(days) for _ in range(3)):
        at = datetime.combine(start + timedelta(days=day), time(12, 0), UTC) + timedelta(
            seconds=rng.randint(0, 4 * 3600)
        )
        out.put(ids.new("s-", 40), rng.choice(relevant), "helped", at)
        n += 1
    return n


def _unserved_verdicts(rng: random.Random, v: Victims, all_docs: Sequence[str], out: VerdictWriter) -> int:
    """Verdicts naming a doc the serve did not serve."""
    n = 0
    for s in v.unserved:
        served = {i.doc_id for i in s.items}
        doc_id = next(d for d in (rng.choice(all_docs) for _ in range(100)) if d not in served)
        out.put(s.serve_id, doc_id, rng.choice(("helped", "noise")), s.instant + timedelta(minutes=7))
        n += 1
    return n


class _BadLines:
    """Writes the malformed lines; the serves among them use fresh ids."""

    def __init__(
        self,
        rng: random.Random,
        ids: Ids,
        tasks: Mapping[str, Sequence[Task]],
        plan: Reindex,
        start: date,
    ) -> None:
        self.rng = rng
        self.ids = ids
        self.tasks = tasks
        self.plan = plan
        self.start = start

    def noon(self, day: int) -> datetime:
        """Some time between 11:00 and 16:00 UTC of that day."""
        return datetime.combine(self.start + timedelta(days=day), time(11, 0), UTC) + timedelta(
            seconds=self.rng.randint(0, 5 * 3600)
        )

    def serve(self, day: int, at: datetime) -> dict[str, Any]:
        """A valid serve object for a project's first task: the raw material of a bad line."""
        project = self.rng.choice(sorted(self.tasks))
        task = self.tasks[project][0]
        doc = task.answers[0]
        return {
            "event": "serve",
            "serve_id": self.ids.new("s-", 40),
            "ts": ts(at),
            "project": project,
            "session_id": self.ids.new("sess-", 24),
            "task": task.text,
            "items": [
                {
                    "doc_id": doc,
                    "doc_version": self.plan.served_version(doc, day),
                    "channel": "ranked",
                    "rank": 1,
                    "score": 0.71,
                }
            ],
        }


def _malformed(bad: _BadLines, v: Victims, book: LogBook, days: int) -> int:
    """One line per kind of MALFORMED_KINDS, spread over the month."""
    malformed_days = [(i * (days - 1)) // 7 for i in range(8)]
    n = 0
    for kind, day in zip(MALFORMED_KINDS, malformed_days, strict=True):
        at = bad.noon(day)
        rec = bad.serve(day, at)
        target = v.bad_verdict
        if kind == "truncated_line":
            full = dumps(rec)
            line = full[: len(full) // 2]
        elif kind == "nan_score":
            line = dumps(rec).replace('"score":0.71', '"score":NaN')
        elif kind == "json_array":
            line = dumps(["serve", rec["serve_id"], rec["ts"], rec["project"], rec["task"]])
        elif kind == "unknown_event":
            line = dumps(
                {"event": "click", "serve_id": rec["serve_id"], "ts": rec["ts"], "doc_id": rec["items"][0]["doc_id"]}
            )
        elif kind == "verdict_without_ts":
            doc_id = target.items[-1].doc_id
            line = dumps({"event": "verdict", "serve_id": target.serve_id, "doc_id": doc_id, "verdict": "noise"})
            day, at = target.day, target.instant + timedelta(minutes=3)
        elif kind == "ts_without_offset":
            rec["ts"] = at.strftime("%Y-%m-%dT%H:%M:%S")
            line = dumps(rec)
        elif kind == "rank_as_string":
            rec["items"][0]["rank"] = "1"
            line = dumps(rec)
        else:  # verdict_maybe
            doc_id = target.items[-2].doc_id
            at = target.instant + timedelta(minutes=4)
            line = dumps(
                {"event": "verdict", "serve_id": target.serve_id, "doc_id": doc_id, "verdict": "maybe", "ts": ts(at)}
            )
            day = target.day
        book.put(day, 1, at, line)
        n += 1
    return n


def write_faults(
    rng: random.Random,
    ids: Ids,
    serves: Sequence[SampleServe],
    tasks: Mapping[str, Sequence[Task]],
    plan: Reindex,
    all_docs: Sequence[str],
    relevant: Sequence[str],
    book: LogBook,
    verdicts: VerdictWriter,
    days: int,
) -> Faults:
    """Every kind of fault, in a fixed order of draws; blank and white-space-only lines every third day."""
    start = book.start
    v = Victims.draw(rng, serves, days)
    n_duplicates = _resend_duplicates(ids, v, book)
    n_conflicting = _reuse_serve_id(rng, v, tasks, book)
    n_orphans = _orphan_verdicts(rng, ids, relevant, verdicts, start, days)
    n_unserved = _unserved_verdicts(rng, v, all_docs, verdicts)
    bad = _BadLines(rng, ids, tasks, plan, start)
    n_malformed = _malformed(bad, v, book, days)
    for day in range(0, days, 3):
        at = bad.noon(day)
        book.put(day, 1, at, rng.choice(("", "   ", "\t", " \t ")))
    return Faults(n_duplicates, n_conflicting, n_orphans, n_unserved, n_malformed)
