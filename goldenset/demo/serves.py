"""Serves: sessions of developers asking their project's tasks, answered by a toy ranker.

The ranker mixes the documents that answer a task (most of them, scored high) with
near misses from the same module and random documents (scored lower), so that the
agents' verdicts have something to tell apart.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from goldenset.demo.corpus import Doc, Reindex
from goldenset.demo.logbook import LogBook, Parts, dumps, ts
from goldenset.demo.tasks import PROJECT_RULES, PROJECT_WEIGHTS, VARIANT_KINDS, VARIANT_WEIGHTS, ProjectTasks, variant


class Ids:
    """Random hex ids that never repeat within the demo."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def new(self, prefix: str, bits: int) -> str:
        """`prefix` and `bits` random bits in hex, drawn again on a clash."""
        while True:
            value = f"{prefix}{self.rng.getrandbits(bits):0{bits // 4}x}"
            if value not in self.used:
                self.used.add(value)
                return value


@dataclass(frozen=True)
class SampleItem:
    """One served item: ranked items carry rank and score, `always` items (rules) neither."""

    doc_id: str
    doc_version: str
    channel: str
    rank: int | None = None
    score: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The item as the log writes it."""
        out: dict[str, Any] = {"doc_id": self.doc_id, "doc_version": self.doc_version, "channel": self.channel}
        if self.channel == "ranked":
            out["rank"] = self.rank
            out["score"] = self.score
        return out


@dataclass(frozen=True)
class SampleServe:
    """One serve: the task as typed (`task`), its canonical form, what was served and what answers it."""

    serve_id: str
    instant: datetime
    ts: str
    project: str
    session_id: str
    task: str
    canonical: str
    items: tuple[SampleItem, ...]
    relevant: frozenset[str]
    day: int

    def to_json(self) -> dict[str, Any]:
        """The serve line's object."""
        return {
            "event": "serve",
            "serve_id": self.serve_id,
            "ts": self.ts,
            "project": self.project,
            "session_id": self.session_id,
            "task": self.task,
            "items": [i.to_json() for i in self.items],
        }


@dataclass(frozen=True)
class Catalogue:
    """The documents a ranker can serve: all of them, and each module's (its near misses)."""

    all_docs: tuple[str, ...]
    by_module: Mapping[str, tuple[str, ...]]
    module_of: Mapping[str, str]

    @classmethod
    def of(cls, docs: Sequence[Doc]) -> Catalogue:
        by_module: dict[str, list[str]] = {}
        for d in docs:
            by_module.setdefault(d.module, []).append(d.doc_id)
        return cls(
            tuple(d.doc_id for d in docs),
            {m: tuple(ids) for m, ids in by_module.items()},
            {d.doc_id: d.module for d in docs},
        )


def _rank(
    rng: random.Random, answers: Sequence[str], catalogue: Catalogue, plan: Reindex, day: int
) -> tuple[SampleItem, ...]:
    """The ranked items of one serve: most answers (scored ~0.74), then near misses (~0.58) and noise (~0.40)."""
    rel_now = [d for d in answers if plan.servable(d, day)]
    chosen = [d for d in rel_now if rng.random() < 0.85] or rel_now[:1]
    k = rng.randint(4, 6)
    near = [
        d for d in catalogue.by_module[catalogue.module_of[answers[0]]] if d not in answers and plan.servable(d, day)
    ]
    scored = [(0.74 + rng.gauss(0, 0.1), d) for d in chosen]
    picked = set(chosen)
    while len(scored) < k:
        if near and rng.random() < 0.6:
            d, base = rng.choice(near), 0.58
        else:
            d, base = rng.choice(catalogue.all_docs), 0.40
        if d in picked or not plan.servable(d, day):
            continue
        picked.add(d)
        scored.append((base + rng.gauss(0, 0.1), d))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return tuple(
        SampleItem(d, plan.served_version(d, day), "ranked", rank, round(min(0.99, max(0.05, score)), 3))
        for rank, (score, d) in enumerate(scored, start=1)
    )


def generate_serves(
    rng: random.Random,
    ids: Ids,
    tasks: Mapping[str, ProjectTasks],
    catalogue: Catalogue,
    plan: Reindex,
    start: date,
    days: int,
) -> list[SampleServe]:
    """Every serve of the month: 12-19 on weekdays, 3-7 at weekends, in sessions of 1-4 tasks."""
    projects = sorted(PROJECT_WEIGHTS)
    project_w = [PROJECT_WEIGHTS[p] for p in projects]
    serves: list[SampleServe] = []
    for day in range(days):
        the_date = start + timedelta(days=day)
        busy = the_date.weekday() < 5 or days < 7
        n_today = rng.randint(12, 19) if busy else rng.randint(3, 7)
        made = 0
        while made < n_today:
            project = rng.choices(projects, project_w)[0]
            session = ids.new("sess-", 24)
            size = min(n_today - made, rng.choice((1, 1, 2, 2, 3, 4)))
            clock = datetime.combine(the_date, time(6, 0), UTC) + timedelta(seconds=rng.randint(0, 13 * 3600))
            task = tasks[project].draw(rng)
            for n_in_session in range(size):
                if clock.hour >= 20:  # the session ran into the evening: cut short
                    break
                if n_in_session and rng.random() < 0.5:  # asked something else
                    task = tasks[project].draw(rng)
                kind = rng.choices(VARIANT_KINDS, VARIANT_WEIGHTS)[0]
                style = rng.choices(("Z", "+02:00", "-05:00"), (78, 18, 4))[0]
                always = tuple(SampleItem(r, "v1", "always") for r in PROJECT_RULES[project])
                ranked = _rank(rng, task.answers, catalogue, plan, day)
                serve_id = ids.new("s-", 40)
                serves.append(
                    SampleServe(
                        serve_id,
                        clock,
                        ts(clock, style),
                        project,
                        session,
                        variant(task.text, kind),
                        task.text,
                        always + ranked,
                        frozenset(task.answers),
                        day,
                    )
                )
                made += 1
                clock += timedelta(seconds=rng.randint(90, 1500))
    return serves


def force_rare_variants(rng: random.Random, serves: list[SampleServe]) -> list[SampleServe]:
    """Make sure a full-width, a tab and (when some task has an "fi") a ligature variant occur."""
    out = list(serves)
    later = [i for i, s in enumerate(out) if s.day >= 1]
    with_fi = [i for i in later if "fi" in out[i].canonical]
    fullwidth, tab = rng.sample(later, 2)
    out[fullwidth] = replace(out[fullwidth], task=variant(out[fullwidth].canonical, "fullwidth"))
    out[tab] = replace(out[tab], task=variant(out[tab].canonical, "tab"))
    if with_fi:
        i = rng.choice(with_fi)
        out[i] = replace(out[i], task=variant(out[i].canonical, "ligature"))
    return out


def write_serves(serves: Sequence[SampleServe], parts: Parts, book: LogBook) -> None:
    """Put every serve line in the book; each two-part day's first serve goes to its replica."""
    has_part2: set[int] = set()
    for s in serves:
        part = 2 if s.day in parts.two_part_days and s.day not in has_part2 else parts.for_day(s.day)
        if part == 2:
            has_part2.add(s.day)
        book.put(s.day, part, s.instant, dumps(s.to_json()))
