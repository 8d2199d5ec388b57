"""The verdict an agent takes back: a support question that only a person's label keeps in the set.

One serve asks `QUESTION`, once, in the first days of the month. The agent marks the
cancellation page (`ANSWER`, served at v1) helped and another item noise: the query's only
log positive, so builds 1 and 2 keep it by that `helped`. The reindex revises the page to
v2, so the label goes stale (`version_changed`) and `goldenset pool` queues the pair at v2,
where both annotators label it relevant (`annotators.SUPPORT_TRUTH`). Then, on the last day
of the window, after they labelled it, the agent re-marks the item `noise`: that line is not
in the logs the first builds read but in `LATE_VERDICTS`, which the demo copies into the
last day's folder (as `LATE_PART`) before the build that merges the labels. That build
finds no `helped` left for the query, so `no_positive` would drop it (contract 3, filter 4),
but the people's `relevant` at the current version is a human positive (v5): the query
stays, kept by a human (`golden_queries.kept_by = 'human'`), and `goldenset explain` says
why.

Its draws come after every other draw of `write_demo_data`, so the rest of the data is the
same, byte for byte, as without it; the question is not one of `tasks.TASKS` (which would
move every draw).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from goldenset.demo.logbook import LogBook, dumps, ts
from goldenset.demo.policies import INVOICES, REVISED_PAGE, TERMS
from goldenset.demo.serves import Ids, SampleItem, SampleServe
from goldenset.demo.tasks import PROJECT_RULES
from goldenset.demo.verdicts import ItemKey, VerdictWriter

PROJECT = "support"
QUESTION = "Does a cancelled plan stay active until the end of the billing period?"
ANSWER = REVISED_PAGE
LATE_VERDICTS = "late-verdicts.jsonl"  # under the demo's root, beside the corpus snapshots
LATE_PART = "part-0003.jsonl"  # its name in the last day's folder: parts 1 and 2 are the day's own
LATE_AT = time(15, 0)  # after both annotators' sessions (from 09:00 and 13:00 UTC)


@dataclass(frozen=True)
class FlippedVerdict:
    """The planted serve, the items judged in the logs, and the late line that takes the `helped` back."""

    serve: SampleServe
    judged: frozenset[ItemKey]
    late_line: str


def plant_flipped_verdict(
    rng: random.Random, ids: Ids, book: LogBook, verdicts: VerdictWriter, days: int
) -> FlippedVerdict:
    """Put the serve and its two verdicts in the book (part 1 of its day); return the late line apart."""
    start = book.start
    day = rng.randrange(min(days - 1, 5))  # early in the month, never on the last day (the late line's)
    instant = datetime.combine(start + timedelta(days=day), time(10, 0), UTC) + timedelta(
        seconds=rng.randint(0, 4 * 3600)
    )
    ranked = ((ANSWER, 0.81), (TERMS, 0.63), (INVOICES, 0.47))
    items = tuple(SampleItem(r, "v1", "always") for r in PROJECT_RULES[PROJECT]) + tuple(
        SampleItem(doc_id, "v1", "ranked", rank, score) for rank, (doc_id, score) in enumerate(ranked, start=1)
    )
    serve = SampleServe(
        ids.new("s-", 40),
        instant,
        ts(instant),
        PROJECT,
        ids.new("sess-", 24),
        QUESTION,
        QUESTION,
        items,
        frozenset({ANSWER}),
        day,
    )
    book.put(day, 1, instant, dumps(serve.to_json()))
    verdicts.put(serve.serve_id, ANSWER, "helped", instant + timedelta(minutes=4), part=1)
    verdicts.put(serve.serve_id, INVOICES, "noise", instant + timedelta(minutes=5), part=1)
    late = datetime.combine(start + timedelta(days=days - 1), LATE_AT, UTC)
    line = {"event": "verdict", "serve_id": serve.serve_id, "doc_id": ANSWER, "verdict": "noise", "ts": ts(late)}
    return FlippedVerdict(
        serve, frozenset({ItemKey(serve.serve_id, ANSWER), ItemKey(serve.serve_id, INVOICES)}), dumps(line)
    )


def late_folder(end: date) -> str:
    """The last day's folder name under LOGS, where the late line's file goes."""
    return f"dt={end.isoformat()}"
