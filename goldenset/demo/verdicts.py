"""Verdicts: agents mark some served items helped, noise or wrong, mostly in line with relevance.

Re-marks are forced once each in their hard forms: a tie on the instant (the later
line wins), an older verdict delivered a day late (it loses), a change of mind the
next day; other re-marks are a later verdict on the same day.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from goldenset.demo.logbook import LogBook, Parts, dumps, ts
from goldenset.demo.serves import SampleServe


@dataclass(frozen=True)
class ItemKey:
    """A served item: the pair a verdict is about."""

    serve_id: str
    doc_id: str


class VerdictWriter:
    """Puts verdict lines in the book, in the file of the day they were written, and counts them."""

    def __init__(self, book: LogBook, parts: Parts, start: date) -> None:
        self.book = book
        self.parts = parts
        self.start = start
        self.count = 0

    def day_of(self, instant: datetime) -> int:
        """The window's day an instant falls on."""
        return (instant.date() - self.start).days

    def put(
        self,
        serve_id: str,
        doc_id: str,
        verdict: str,
        instant: datetime,
        *,
        style: str = "Z",
        day: int | None = None,
        part: int | None = None,
    ) -> None:
        """One verdict line; by default in the day of its instant and that day's usual file."""
        if day is None:
            day = self.day_of(instant)
        if part is None:
            part = self.parts.for_day(day)
        line = {
            "event": "verdict",
            "serve_id": serve_id,
            "doc_id": doc_id,
            "verdict": verdict,
            "ts": ts(instant, style),
        }
        self.book.put(day, part, instant, dumps(line))
        self.count += 1


def _draw(rng: random.Random, relevant: bool, channel: str) -> str:
    """An agent's verdict: rules mostly help, answers mostly help, the rest is mostly noise."""
    if channel == "always":
        return rng.choices(("helped", "noise"), (70, 30))[0]
    if relevant:
        return rng.choices(("helped", "noise", "wrong"), (85, 10, 5))[0]
    return rng.choices(("noise", "wrong", "helped"), (78, 12, 10))[0]


def write_verdicts(
    rng: random.Random, serves: Sequence[SampleServe], out: VerdictWriter, days: int
) -> frozenset[ItemKey]:
    """Judge about 70% of the top three ranked items, 45% of the rest, 12% of rules; return the items judged."""
    judged: set[ItemKey] = set()
    remark_kinds = ["tie", "late_old", "next_day"]
    for s in serves:
        for item in s.items:
            ranked = item.channel == "ranked"
            p = (0.7 if (item.rank or 0) <= 3 else 0.45) if ranked else 0.12
            if rng.random() >= p:
                continue
            verdict = _draw(rng, item.doc_id in s.relevant, item.channel)
            judged.add(ItemKey(s.serve_id, item.doc_id))
            at = s.instant + timedelta(seconds=rng.randint(20, 2400))
            if s.day < days - 1 and rng.random() < 0.06:  # judged the next morning
                at = datetime.combine(s.instant.date() + timedelta(days=1), time(7, 0), UTC) + timedelta(
                    seconds=rng.randint(0, 3 * 3600)
                )
            style = rng.choices(("Z", "+02:00", "-05:00", "frac7"), (80, 14, 4, 2))[0]
            if style == "frac7":
                at = at.replace(microsecond=rng.randint(1, 999_999))
            remark = ranked and rng.random() < 0.04
            kind = "later"
            if ranked and remark_kinds and out.day_of(at) < days - 2:
                remark, kind = True, remark_kinds.pop(0)
            if not remark:
                out.put(s.serve_id, item.doc_id, verdict, at, style=style)
                continue
            _remark(rng, out, s.serve_id, item.doc_id, verdict, at, style, kind)
    return frozenset(judged)


def _remark(
    rng: random.Random,
    out: VerdictWriter,
    serve_id: str,
    doc_id: str,
    verdict: str,
    at: datetime,
    style: str,
    kind: str,
) -> None:
    """Two verdicts on one item whose winner, by the contract's rules, is `verdict`."""
    first = "noise" if verdict == "helped" else "helped"
    if kind == "tie":  # the same instant written two ways, same file: the later line wins
        part = out.parts.for_day(out.day_of(at))
        out.put(serve_id, doc_id, first, at, part=part)
        out.put(serve_id, doc_id, verdict, at, style="+02:00", part=part)
    elif kind == "late_old":  # the older verdict arrives in the next day's file and loses
        out.put(serve_id, doc_id, verdict, at + timedelta(seconds=600), style=style)
        out.put(serve_id, doc_id, first, at, day=out.day_of(at) + 1, part=1)
    elif kind == "next_day":
        out.put(serve_id, doc_id, first, at, style=style)
        out.put(serve_id, doc_id, verdict, at + timedelta(days=1))
    else:
        out.put(serve_id, doc_id, first, at, style=style)
        out.put(serve_id, doc_id, verdict, at + timedelta(seconds=rng.randint(60, 3600)))
