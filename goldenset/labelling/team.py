"""A labelling team on one page server: who labelled what, leases, the overlap share, the panel.

`goldenset label serve --team` serves one queue to several annotators at once. This module
holds what they share; the page (`goldenset.labelling.page`, `team_page`) asks it which pair
to offer whom and tells it what was written.

Decisions
---------
- **Pairs are handed out, not locked.** The walk ("next pair", the queue view's "first pair to
  do") offers an annotator a pair they have not labelled and whose labels still needed are
  not all taken: a pair needs one label, an overlap pair two, from different annotators;
  labels already written and other annotators' live leases count against that.
- **A lease** is taken when an annotator opens a pair they may label, and lasts
  `lease` (30 minutes by default, `--lease-minutes`) from the last time they opened it, so a
  tab closed mid-pair frees it again. An annotator holds one lease at a time (opening a pair
  drops their other lease: browsing the queue view does not hoard pairs); writing the label,
  or leaving the pair with `n`, drops it too.
- **Leases live in memory**, in the page server: they are only worth minutes, the page
  writes nothing but label lines (contract 7.6), and after a restart nobody holds the page's
  earlier pages anyway. What was labelled is never in memory only: it is read back from LABELS
  at start.
- **A pair someone else is labelling** can still be opened (from the queue view or a link);
  the page says who holds it and until when, and a label from anyone else is refused (409)
  while the lease lives. A pair already fully labelled by others is not offered, but a label
  from a person who opens it on purpose is written: it adds an opinion, never replaces one.
- **The overlap share** (`--overlap S`, 0 to 1) picks exactly round(S x pairs) pairs of the
  loaded queue (a half rounded up, not to even: 0.5 x 3 gives 2, 0.25 x 2 gives 1) to be
  labelled by two annotators, for agreement: the pairs with the smallest
  SHA-256 of "<seed>:<query_id>:<doc_id>:<doc_version>" (`--seed`, default 0), so the same
  seed and queue give the same pairs, whoever starts labelling first.
- **Who labelled a pair** counts human label lines the build would accept (the ingest's own
  rules) for the pair at its queued version, from LABELS at start and from the page since;
  an annotator's latest line is their label (7.2).
- **The panel** counts, per annotator, the queued pairs they hold a label for, and the pairs
  left (not yet holding every label they need); the overlap pairs *planned* for agreement and
  those *labelled twice* so far are two numbers ("38 pairs planned for agreement, 0 labelled
  twice yet"): the plan is not a result. Agreement is `agreement.annotator_agreement` over
  those same lines (Cohen's kappa on the pairs two annotators both labelled at one version),
  never computed here. Pair numbers are the queue's priorities, as everywhere on the page.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from goldenset import clock, logfiles
from goldenset.labelling.agreement import AnnotatorAgreement, LabelLine, LineOrder, annotator_agreement, current_labels
from goldenset.labelling.lines import parse_label_line
from goldenset.labelling.queue_view import ListedPair
from goldenset.labelling.rubric import Rubric
from goldenset.labelling.rubric_set import RubricSet
from goldenset.records import Rejected

DEFAULT_LEASE_MINUTES = 30
# Lines this server writes sort after every line read at start when their ts ties (same second).
_WRITTEN_ORDER = 10**12


class QueuedPair(Protocol):
    """What the team needs of a queued pair (the page's QueueItem has it)."""

    @property
    def query_id(self) -> str: ...
    @property
    def doc_id(self) -> str: ...
    @property
    def doc_version(self) -> str: ...
    @property
    def project(self) -> str | None: ...
    @property
    def task(self) -> str | None: ...
    @property
    def reason(self) -> str: ...
    @property
    def priority(self) -> int: ...


def overlap_pairs(items: Sequence[QueuedPair], share: float, seed: int = 0) -> frozenset[int]:
    """Indexes of the round(share x len(items)) pairs with the smallest seeded hash: labelled twice."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"overlap share must be between 0 and 1, got {share!r}")
    k = math.floor(share * len(items) + 0.5)

    def rank(i: int) -> bytes:
        it = items[i]
        return hashlib.sha256(f"{seed}:{it.query_id}:{it.doc_id}:{it.doc_version}".encode()).digest()

    return frozenset(sorted(range(len(items)), key=lambda i: (rank(i), i))[:k])


def queue_label_lines(labels_dir: Path, rubric: Rubric | RubricSet, items: Sequence[QueuedPair]) -> list[LabelLine]:
    """Every human label line in LABELS the build would accept for a queued pair at its queued version."""
    queued = {(it.query_id, it.doc_id, it.doc_version) for it in items}
    projects = {(it.query_id, it.doc_id): it.project for it in items}
    project_of = {it.query_id: it.project for it in items if it.project is not None}
    out: list[LabelLine] = []
    for dt in logfiles.list_partitions(labels_dir):
        for f in logfiles.list_files(labels_dir, dt):
            for n, raw in logfiles.read_file(f).lines:
                try:
                    rec = parse_label_line(raw.encode("utf-8") if isinstance(raw, str) else raw, rubric, project_of)
                except Rejected:
                    continue
                if rec.kind != "human" or (rec.query_id, rec.doc_id, rec.doc_version) not in queued:
                    continue
                out.append(
                    LabelLine(
                        rec.annotator,
                        "human",
                        rec.query_id,
                        rec.doc_id,
                        rec.doc_version,
                        rec.label,
                        rec.decided_by,
                        rec.ts.replace(tzinfo=UTC),
                        LineOrder(dt, f.file_name, n),
                        projects.get((rec.query_id, rec.doc_id)),
                    )
                )
    return out


@dataclass(frozen=True)
class Hold:
    """Why a pair is not this annotator's to label now: others' live leases, or others' labels."""

    leased_by: tuple[str, ...]  # annotators whose live leases take the labels the pair still needs
    until: datetime | None  # when the first of those leases ends (naive UTC)
    labelled_by: tuple[str, ...]  # annotators who labelled it

    @property
    def refuses(self) -> bool:
        """A label from this annotator is refused while others' leases take the pair."""
        return bool(self.leased_by)


@dataclass(frozen=True)
class AnnotatorProgress:
    """One annotator's row in the panel."""

    annotator: str
    labelled: int  # queued pairs this annotator holds a label for
    labelling: int | None  # the number (priority) of the pair they hold a lease on, if any


@dataclass(frozen=True)
class Panel:
    """Progress and agreement of the team on the loaded queue."""

    annotators: tuple[AnnotatorProgress, ...]
    pairs: int
    overlap: int  # pairs planned for agreement: they need two labels
    complete: int  # pairs holding every label they need
    agreement: tuple[AnnotatorAgreement, ...]
    overlap_done: int = 0  # overlap pairs labelled twice so far

    @property
    def left(self) -> int:
        return self.pairs - self.complete


class Team:
    """The pairs of one queue, handed out to several annotators; thread-safe."""

    def __init__(
        self,
        items: Sequence[QueuedPair],
        lines: Iterable[LabelLine] = (),
        *,
        overlap: float = 0.0,
        seed: int = 0,
        lease: timedelta = timedelta(minutes=DEFAULT_LEASE_MINUTES),
        clock: Callable[[], datetime] = clock.utcnow,
    ):
        if lease <= timedelta(0):
            raise ValueError(f"a lease must last a positive time, got {lease}")
        self.items = items
        self.overlap = overlap
        self.seed = seed
        self.lease = lease
        self.clock = clock
        self.lock = threading.RLock()
        self.overlap_pairs = overlap_pairs(items, overlap, seed)
        self._index = {(it.query_id, it.doc_id): i for i, it in enumerate(items)}
        queued = {(it.query_id, it.doc_id, it.doc_version) for it in items}
        self.lines = [ln for ln in lines if (ln.query_id, ln.doc_id, ln.doc_version) in queued]
        self._labels: dict[int, dict[str, str]] = {}
        for ln in current_labels(self.lines):
            self._labels.setdefault(self._index[(ln.query_id, ln.doc_id)], {})[ln.annotator] = ln.label
        self._leases: dict[int, dict[str, datetime]] = {}
        self.joined: set[str] = set()
        self._written = 0

    # ------------------------------------------------------------------ reading
    def needed(self, i: int) -> int:
        """Labels pair `i` needs: 2 for an overlap pair, else 1."""
        return 2 if i in self.overlap_pairs else 1

    def labels_of(self, i: int) -> dict[str, str]:
        """annotator -> current label on pair `i`."""
        with self.lock:
            return dict(self._labels.get(i, {}))

    def complete(self, i: int) -> bool:
        """Whether pair `i` holds every label it needs."""
        with self.lock:
            return len(self._labels.get(i, {})) >= self.needed(i)

    def _live(self, i: int) -> dict[str, datetime]:
        now = self.clock()
        held = self._leases.get(i, {})
        for name in [a for a, until in held.items() if until <= now]:
            del held[name]  # expired: the tab was closed, or its annotator went away
        return held

    def hold(self, name: str, i: int) -> Hold | None:
        """Why `name` may not take pair `i` now (None: they may, or they labelled it already)."""
        with self.lock:
            labels = self._labels.get(i, {})
            if name in labels:
                return None
            others = {a: t for a, t in self._live(i).items() if a != name and a not in labels}
            if len(labels) + len(others) < self.needed(i):
                return None
            # The live leases hold the pair only while the labels written leave it room.
            leasing = tuple(sorted(others)) if len(labels) < self.needed(i) else ()
            until = min((others[a] for a in leasing), default=None)
            return Hold(leasing, until, tuple(sorted(labels)))

    def offered(self, name: str, i: int) -> bool:
        """Whether the walk offers pair `i` to `name`: not labelled by them, and not taken by others."""
        with self.lock:
            return name not in self._labels.get(i, {}) and self.hold(name, i) is None

    # ------------------------------------------------------------------ changing
    def join(self, name: str) -> None:
        """`name` chose their name on the page: they show in the panel from now on."""
        with self.lock:
            self.joined.add(name)

    def take(self, name: str, i: int) -> Hold | None:
        """`name` opened pair `i`: lease it to them (dropping their other lease) unless others hold it."""
        with self.lock:
            hold = self.hold(name, i)
            if hold is not None or name in self._labels.get(i, {}):
                return hold
            for held in self._leases.values():
                held.pop(name, None)
            self._leases.setdefault(i, {})[name] = self.clock() + self.lease
            return None

    def release(self, name: str, i: int) -> None:
        """`name` left pair `i` without labelling it."""
        with self.lock:
            self._leases.get(i, {}).pop(name, None)

    def check_write(self, name: str, i: int) -> Hold | None:
        """The hold that refuses a label from `name` on pair `i` now, if any."""
        with self.lock:
            hold = self.hold(name, i)
            return hold if hold is not None and hold.refuses else None

    def record(self, name: str, i: int, line: dict[str, Any]) -> None:
        """A label line `name` wrote for pair `i` (contract 7.2 fields): it counts from now on."""
        with self.lock:
            self._written += 1
            ts = datetime.strptime(line["ts"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            item = self.items[i]
            self.lines.append(
                LabelLine(
                    name,
                    "human",
                    line["query_id"],
                    line["doc_id"],
                    line["doc_version"],
                    line["label"],
                    line["decided_by"],
                    ts,
                    LineOrder(line["ts"][:10], f"page-{name}.jsonl", _WRITTEN_ORDER + self._written),
                    item.project,
                )
            )
            self._labels.setdefault(i, {})[name] = line["label"]
            self._leases.get(i, {}).pop(name, None)

    # ------------------------------------------------------------------ views
    def panel(self) -> Panel:
        """Per annotator their labelled count and open pair; pairs left; kappa on shared pairs."""
        with self.lock:
            names = set(self.joined) | {a for held in self._labels.values() for a in held}
            leased = {a: i for i in list(self._leases) for a in self._live(i)}
            rows = tuple(
                AnnotatorProgress(
                    a,
                    sum(1 for held in self._labels.values() if a in held),
                    self.items[leased[a]].priority if a in leased else None,
                )
                for a in sorted(names)
            )
            complete = sum(1 for i in range(len(self.items)) if len(self._labels.get(i, {})) >= self.needed(i))
            twice = sum(1 for i in self.overlap_pairs if len(self._labels.get(i, {})) >= 2)
            return Panel(
                rows,
                len(self.items),
                len(self.overlap_pairs),
                complete,
                tuple(annotator_agreement(self.lines)),
                twice,
            )

    def lines_of(self, name: str) -> dict[int, dict[str, Any]]:
        """Item index -> `name`'s current label line on it (read at start or written since), as the page shows it."""
        with self.lock:
            out: dict[int, dict[str, Any]] = {}
            for ln in current_labels(x for x in self.lines if x.annotator == name):
                out[self._index[(ln.query_id, ln.doc_id)]] = {
                    "query_id": ln.query_id,
                    "doc_id": ln.doc_id,
                    "doc_version": ln.doc_version,
                    "label": ln.label,
                    "decided_by": ln.decided_by,
                    "annotator": ln.annotator,
                    "ts": ln.ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            return out

    def rows(self, name: str, passed_over: set[int]) -> list[ListedPair]:
        """The queue view's rows for the team: `labelled` once a pair holds every label it needs."""
        with self.lock:
            out = []
            for i, it in enumerate(self.items):
                labels = self._labels.get(i, {})
                if len(labels) >= self.needed(i):
                    status = "labelled"
                else:
                    status = "passed over" if i in passed_over else "to do"
                names = sorted(labels)
                out.append(
                    ListedPair(
                        it.priority,
                        it.project or "(none)",
                        it.task or "",
                        it.doc_id,
                        it.reason,
                        status,
                        ", ".join(names) or None,
                        ", ".join(labels[a] for a in names) or None,
                        overlap=i in self.overlap_pairs,
                        yours=labels.get(name),
                    )
                )
            return out
