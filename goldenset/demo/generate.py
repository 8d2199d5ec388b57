"""`write_demo_data`: the corpus, the tasks, a month of serves, verdicts and faults, written to files."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import orjson

from goldenset.demo.corpus import RULES, CorpusRow, plan_reindex, snapshots, stdlib_docs
from goldenset.demo.faults import write_faults
from goldenset.demo.flipped import LATE_PART, LATE_VERDICTS, late_folder, plant_flipped_verdict
from goldenset.demo.logbook import LogBook, Parts
from goldenset.demo.policies import policy_section
from goldenset.demo.serves import Catalogue, Ids, force_rare_variants, generate_serves, write_serves
from goldenset.demo.tasks import draw_popularity, named_doc_ids, resolve_tasks
from goldenset.demo.verdicts import ItemKey, VerdictWriter, write_verdicts


@dataclass(frozen=True)
class DemoData:
    """Where the demo data went and what it holds.

    n_serves: distinct serves a build accepts (duplicates and rejected lines excluded).
    n_verdicts: valid verdict lines (orphans, re-marks and unserved-doc verdicts included).
    n_malformed: lines that break a per-line rule of the contract (see MALFORMED_KINDS).
    The remaining fields are what a build over these logs must count as well:
    n_conflicting_serves: valid serve lines rejected as `conflicting_duplicate_serve`
    (so rejected_records holds n_malformed + n_conflicting_serves rows);
    n_duplicate_serves: identical re-sent serve lines (counted once);
    n_orphan_verdicts / n_unserved_item_verdicts / n_unjudged_items as in golden_builds.
    late_verdicts: a verdict line that is not in the logs yet (the agent takes back the only
    `helped` of `flipped.QUESTION`); the demo copies it to `late_verdicts_into`, the last day's
    folder, before the build that merges the labels. Not counted in n_verdicts or n_lines.
    """

    logs: Path
    corpus_before: Path
    corpus_after: Path
    n_serves: int
    n_verdicts: int
    n_malformed: int
    n_conflicting_serves: int = 0
    n_duplicate_serves: int = 0
    n_orphan_verdicts: int = 0
    n_unserved_item_verdicts: int = 0
    n_unjudged_items: int = 0
    n_lines: int = 0
    late_verdicts: Path | None = None
    late_verdicts_into: Path | None = None


def _stdlib(doc_id: str) -> bool:
    return doc_id.startswith("stdlib/")


def _write_corpus(path: Path, rows: tuple[CorpusRow, ...]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r.to_json()) + b"\n" for r in rows))
    return path


def write_demo_data(root: Path, *, seed: int = 7, days: int = 30, end: date | None = None) -> DemoData:
    """Write demo serve logs and two corpus snapshots under `root` (see the package doc).

    Days run from end - days + 1 to end (default: today's UTC date). Same arguments
    give byte-identical files. Needs days >= 2 (verdicts land in later files).
    """
    if days < 2:
        raise ValueError("days must be at least 2")
    root = Path(root)
    if end is None:
        end = datetime.now(UTC).date()
    start = end - timedelta(days=days - 1)
    # One generator for everything, drawn in a fixed order: that order is what makes the
    # files byte-identical for the same arguments, so a new draw goes after the others.
    rng = random.Random(seed)

    docs = stdlib_docs(named_doc_ids())
    section = policy_section(end.isoformat())
    tasks = resolve_tasks({d.doc_id for d in (*docs, *section.docs)})
    relevant = sorted({a for project in tasks.values() for t in project for a in t.answers})
    mix = draw_popularity(rng, tasks)
    # The random history and reindex touch stdlib documents only; the policy section's is written out.
    popular = sorted({a for p in sorted(mix) for t in mix[p].most_asked(3) for a in t.answers if _stdlib(a)})
    plan = plan_reindex(rng, docs, [a for a in relevant if _stdlib(a)], popular, days)
    plan = replace(plan, added_v2=plan.added_v2 + section.added_by_reindex)
    corpus = snapshots(RULES, docs, plan, start, end).merged(section.before, section.after)

    book = LogBook(start, days)
    ids = Ids(rng)
    parts = Parts.draw(rng, days)
    catalogue = Catalogue.of((*docs, *section.docs))
    serves = generate_serves(rng, ids, mix, catalogue, plan, start, days)
    serves = force_rare_variants(rng, serves)
    write_serves(serves, parts, book)
    verdicts = VerdictWriter(book, parts, start)
    judged = write_verdicts(rng, serves, verdicts, days)
    faults = write_faults(rng, ids, serves, tasks, plan, catalogue.all_docs, relevant, book, verdicts, days)
    flipped = plant_flipped_verdict(rng, ids, book, verdicts, days)
    serves = [*serves, flipped.serve]
    judged = judged | flipped.judged

    logs = root / "logs"
    n_lines = book.write(logs)
    _date_files(logs)
    root.mkdir(parents=True, exist_ok=True)
    before = _write_corpus(root / "corpus-v1.jsonl", corpus.before)
    after = _write_corpus(root / "corpus-v2.jsonl", corpus.after)
    late = root / LATE_VERDICTS
    late.write_text(flipped.late_line + "\n", encoding="utf-8")
    unjudged = sum(1 for s in serves for i in s.items if ItemKey(s.serve_id, i.doc_id) not in judged)
    return DemoData(
        logs=logs,
        corpus_before=before,
        corpus_after=after,
        n_serves=len(serves),
        n_verdicts=verdicts.count,
        n_malformed=faults.n_malformed,
        n_conflicting_serves=faults.n_conflicting_serves,
        n_duplicate_serves=faults.n_duplicate_serves,
        n_orphan_verdicts=faults.n_orphan_verdicts,
        n_unserved_item_verdicts=faults.n_unserved_item_verdicts,
        n_unjudged_items=unjudged,
        n_lines=n_lines,
        late_verdicts=late,
        late_verdicts_into=logs / late_folder(end) / LATE_PART,
    )


# How long before now the newest demo log file was last written.
SETTLED = timedelta(minutes=1)


def _date_files(logs: Path) -> None:
    """Give each log file the time a serving system would have closed it: the end of its day.

    Capped at a minute ago. Files written in the second they are read are read again by the
    next build (the racy-stat rule of ingestion), so without this the demo's second build
    re-read a day or not depending on how fast the machine wrote and built (CI saw both).
    """
    latest = datetime.now(UTC) - SETTLED
    for path in logs.glob("dt=*/*"):
        day = datetime.strptime(path.parent.name.removeprefix("dt="), "%Y-%m-%d").replace(tzinfo=UTC)
        when = min(day + timedelta(days=1) - timedelta(seconds=1), latest).timestamp()
        os.utime(path, (when, when))
