"""The labelling page (`goldenset label serve`, contract 7.6): walk the queue, append label lines.

`open_session` reads everything the page needs once, at start: the labelling queue (7.4) in
priority order with each document's title and text at the queued version, the rubric
(refused when open or invalid), and the LABELS folder, to leave out the pairs this annotator
already labelled. Then DuckDB is closed: the page never writes it and never holds it, so it
keeps working while a build runs. `create_app` makes the Starlette app; each submission
appends one label line (7.2) to `LABELS/dt=<UTC today>/page-<annotator>.jsonl` and fsyncs it.

Decisions
---------
- **Already labelled** means a line under `LABELS/dt=*/` that the build accepts
  (`parse_label_line`, the ingest's own rules) with this annotator and kind `human`, for the
  pair at the queued version. A broken line does not hide a pair: its label would be lost.
- **Annotator names** match `[A-Za-z0-9._-]{1,64}`: the name is part of a file name.
- **Skipping** (`n`) writes nothing; the pair is marked passed over in the queue view (`/`),
  from which any pair can be opened again.
- **Pair numbers in URLs are 1-based** (`/pair/1` is "pair 1 of N"), as the page says them.
- **Labelling a pair twice in one session** is refused unless the form says which line it
  corrects (`replaces`: how many lines this session had written for the pair when the page
  was shown): a double Enter must not
  write two lines, but a correction after Back appends a new line (history is kept; the latest
  line of an annotator is their current label, contract 7.2) and the page shows the label it
  replaces.
- **A form from an earlier run of the page** (a restart, a missing token) is not written, but
  its answers and note are shown again on the pair with the current token: nothing typed is
  lost, one more Enter saves it.
- **Drafts in the browser**: the pair page keeps its answers, decided_by and note in
  localStorage under `draft_key` (annotator and pair) as they are typed, and the page that
  follows a written line drops that key (`saved_key`), so a pair opened again after a
  restart or a closed tab shows what was typed; answers the server sends back win.
- **A team** (`--team`): the session's `team` says which pairs to offer and refuses a label
  on a pair others hold a lease on (`HeldByOthers`, 409, the form kept); see
  `goldenset.labelling.team` and `team_page`.
- **decided_by default**: for a label with fail/any_fail clauses, the first failing clause
  dimension in rubric order; for a pass-only label, the first dimension.
- **A queued version no snapshot holds** is shown with a warning instead of text.
- **Several rubrics** (contract 9.5): each pair is shown, answered and checked under the
  rubric of its query's project; the header names that rubric on a pair's page and every
  rubric elsewhere. Queued pairs whose project no rubric judges (a queue pooled before the
  rubrics changed) are left out at start and counted (`no_rubric`), like pairs already
  labelled.
- **Context**: a stale pair shows the label the latest build holds for it when a person or a
  judge gave it; the log's verdict (the agent's) and judges' labels are shown only once the
  annotator has decided (in the saved banner, and when the pair is opened again), so they
  cannot anchor the decision; and a unified diff from the judged version's text to the
  queued one (MAX_DIFF_LINES at most, the cut said); a successor names the stale pair it
  replaced for the same query (from `relabel_queue.superseded_by`; the first doc_id if several).
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import duckdb
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from goldenset import logfiles
from goldenset.connection import Connection
from goldenset.counts import labelling_queue_by_reason
from goldenset.errors import GoldensetError, InputError
from goldenset.html_pages import TEMPLATES
from goldenset.labelling.annotator import check_annotator_name
from goldenset.labelling.durable import append_line
from goldenset.labelling.lines import parse_label_line
from goldenset.labelling.rubric import Rubric
from goldenset.labelling.rubric_set import RubricSet, load_rubrics
from goldenset.labelling.team import Hold, Team
from goldenset.records import Rejected
from goldenset.warehouse import connect

_QUERY_ID = re.compile("[0-9a-f]{16}")
MAX_NOTE_CHARS = 4000
# A form holds a few short fields and one note; anything far larger is not from the page.
_MAX_BODY_BYTES = 64 * 1024
REASON_TEXT = {
    "stale": "its label went stale: the document changed since it was labelled",
    "successor": "it replaced a document that was judged for this query",
    "pooled": "a ranker returned it and nobody has labelled it",
}

_QUEUE_SQL = """
WITH latest_load AS (
    SELECT content_sha256, max(load_id) AS load_id FROM corpus_loads GROUP BY content_sha256
), docs AS (
    SELECT d.doc_id, d.version, d.title, d.text,
           row_number() OVER (PARTITION BY d.doc_id, d.version
                              ORDER BY l.load_id DESC NULLS LAST, d.content_sha256) AS pick
    FROM corpus_documents d LEFT JOIN latest_load l USING (content_sha256)
), held AS (
    -- what the latest build holds for the pair: a person's or a judge's label, or the log's
    -- verdict (the agent's), the version it was judged at, and whether it is stale
    SELECT query_id, doc_id, label, verdict, doc_version AS judged_version, stale_reason FROM golden_set
), judges AS (
    SELECT query_id, doc_id, string_agg(annotator || ': ' || label, ', ' ORDER BY annotator) AS said
    FROM current_labels WHERE kind = 'judge' GROUP BY ALL
), replaced AS (
    -- the stale pair a successor replaced for the same query (the first by doc_id if several)
    SELECT query_id, superseded_by AS successor, min(doc_id) AS replaced_doc
    FROM relabel_queue WHERE superseded_by IS NOT NULL GROUP BY ALL
)
SELECT q.priority, q.query_id, q.doc_id, q.doc_version, q.reason, q.rankers, q.best_rank,
       q.project, q.task, docs.title, docs.text, docs.doc_id IS NOT NULL AS found,
       st.label, st.judged_version, old.text, old.doc_id IS NOT NULL, rp.replaced_doc,
       h.verdict, j.said, st.doc_id IS NOT NULL
FROM labelling_queue q
LEFT JOIN docs ON docs.doc_id = q.doc_id AND docs.version = q.doc_version AND docs.pick = 1
LEFT JOIN held st ON q.reason = 'stale' AND st.stale_reason IS NOT NULL
                  AND st.query_id = q.query_id AND st.doc_id = q.doc_id
LEFT JOIN held h ON h.query_id = q.query_id AND h.doc_id = q.doc_id
LEFT JOIN judges j ON j.query_id = q.query_id AND j.doc_id = q.doc_id
LEFT JOIN docs old ON old.doc_id = q.doc_id AND old.version = st.judged_version AND old.pick = 1
LEFT JOIN replaced rp ON q.reason = 'successor' AND rp.query_id = q.query_id AND rp.successor = q.doc_id
ORDER BY q.priority, q.query_id, q.doc_id
"""
MAX_DIFF_LINES = 200


class SubmissionError(GoldensetError):
    """A submission the page refuses; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class HeldByOthers(SubmissionError):
    """A label on a pair other annotators hold leases on (team mode): refused, the form kept."""

    def __init__(self, hold: Hold):
        until = f" until {hold.until:%H:%M} UTC" if hold.until else ""
        super().__init__(
            f"not saved: {', '.join(hold.leased_by)} {'is' if len(hold.leased_by) == 1 else 'are'} labelling this "
            f"pair{until}; your answers are kept below, so label another pair or save this one once the lease ends",
            409,
        )


@dataclass(frozen=True)
class QueueItem:
    """One pair of the labelling queue, with the document as it reads at the queued version."""

    priority: int
    query_id: str
    doc_id: str
    doc_version: str
    reason: str
    rankers: tuple[str, ...]
    best_rank: int | None
    project: str | None
    task: str | None
    title: str | None
    text: str | None
    found: bool  # some snapshot holds doc_id at doc_version
    old_label: str | None = None  # a stale pair: the person's or judge's label it holds, judged at old_version
    old_version: str | None = None
    old_text: str | None = None
    old_found: bool = False  # some snapshot holds doc_id at old_version
    replaced_doc: str | None = None  # a successor: the document it replaced for this query
    # Shown only once the annotator has decided (so they cannot anchor on them), then beside the label:
    agent_verdict: str | None = None  # the log's verdict the latest build holds for the pair
    judge_labels: str | None = None  # current judge labels, "judge: label, ..."
    stale_held: bool = False  # a stale pair the latest build holds (its label may be the log's verdict)

    def diff(self) -> tuple[list[str], bool]:
        """The changes from the judged version's text to the queued one (unified diff lines), and whether cut."""
        import difflib

        if not (self.old_found and self.found):
            return [], False
        lines = list(
            difflib.unified_diff(
                (self.old_text or "").splitlines(),
                (self.text or "").splitlines(),
                f"{self.doc_id} at {self.old_version} (judged)",
                f"{self.doc_id} at {self.doc_version} (now)",
                lineterm="",
            )
        )
        return lines[:MAX_DIFF_LINES], len(lines) > MAX_DIFF_LINES


def check_annotator(name: str) -> str:
    """Return `name` when it can name a label file; UsageError (exit 2) otherwise."""
    return check_annotator_name(
        name, "annotator name", "letters, digits, '.', '_', '-'", "pass --annotator with such a name"
    )


def load_queue(con: Connection) -> list[QueueItem]:
    """The labelling queue in priority order, each document at its queued version."""
    try:
        rows = con.execute(_QUEUE_SQL).fetchall()
    except duckdb.CatalogException as exc:
        raise InputError(
            f"the warehouse has no labelling queue ({str(exc).splitlines()[0]}); "
            "run `goldenset build` and `goldenset pool` first"
        ) from None
    return [
        QueueItem(
            int(r[0]),
            r[1],
            r[2],
            r[3],
            r[4],
            tuple(r[5] or ()),
            r[6],
            r[7],
            r[8],
            r[9],
            r[10],
            bool(r[11]),
            r[12],
            r[13],
            r[14],
            bool(r[15]),
            r[16],
            r[17],
            r[18],
            bool(r[19]),
        )
        for r in rows
    ]


def labelled_lines(
    labels_dir: Path, annotator: str, rubric: Rubric | RubricSet, project_of: dict[str, str] | None = None
) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(query_id, doc_id, doc_version) -> `annotator`'s latest line the build would accept for it in LABELS.

    Latest by ts, a tie to the later line in (dt, file name, line) order: the annotator's label
    (contract 7.2), which the queue view shows and a correction replaces.
    """
    best: dict[tuple[str, str, str], tuple[tuple, dict[str, Any]]] = {}
    for dt in logfiles.list_partitions(labels_dir):
        for f in logfiles.list_files(labels_dir, dt):
            for n, raw in logfiles.read_file(f).lines:
                found = _accepted_line(raw, annotator, rubric, project_of)
                if found is None:
                    continue
                key, line = found
                order = (line["ts"], dt, f.file_name, n)
                if key not in best or order > best[key][0]:
                    best[key] = (order, line)
    return {k: line for k, (_, line) in best.items()}


def _accepted_line(
    raw: str | bytes, annotator: str, rubric: Rubric | RubricSet, project_of: dict[str, str] | None
) -> tuple[tuple[str, str, str], dict[str, Any]] | None:
    try:
        rec = parse_label_line(raw.encode("utf-8") if isinstance(raw, str) else raw, rubric, project_of)
    except Rejected:
        return None
    if rec.annotator != annotator or rec.kind != "human":
        return None
    line = {
        "query_id": rec.query_id,
        "doc_id": rec.doc_id,
        "doc_version": rec.doc_version,
        "label": rec.label,
        "decided_by": rec.decided_by,
        "annotator": rec.annotator,
        "ts": rec.ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return (rec.query_id, rec.doc_id, rec.doc_version), line


def decided_by_options(rubric: Rubric, label: str, failing: Iterable[str]) -> tuple[str, ...]:
    """Dimensions that may decide `label` given the answers: failing clause dimensions, or any for pass-only."""
    named = rubric.label(label).failing_dimensions
    if not named:
        return rubric.dimension_names
    failed = set(failing)
    return tuple(d for d in rubric.dimension_names if d in named and d in failed)


# --------------------------------------------------------------------------- writing


class LabelWriter:
    """Appends label lines to LABELS/dt=<day>/page-<annotator>.jsonl, durably and one at a time."""

    def __init__(self, labels_dir: Path, annotator: str):
        self.labels_dir = labels_dir
        self.annotator = check_annotator(annotator)
        self._lock = threading.Lock()

    def path_for(self, day: str) -> Path:
        """The file a line written on UTC `day` (YYYY-MM-DD) goes to."""
        return self.labels_dir / f"dt={day}" / f"page-{self.annotator}.jsonl"

    def append(self, line: dict[str, Any], day: str) -> Path:
        """Append one JSON line and fsync it (and the folders it created); return the file."""
        path = self.path_for(day)
        # The thread lock orders this process's submits; flock orders two pages of one annotator.
        with self._lock:
            append_line(path, line)
        return path


def utc_now() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)


# --------------------------------------------------------------------------- the session


@dataclass
class LabellingSession:
    """What one run of the page knows: the whole queue, the rubrics, what was labelled before and since."""

    annotator: str
    rubrics: RubricSet
    items: list[QueueItem]  # every queued pair some rubric judges, in priority order
    before: dict[int, dict[str, Any]]  # item index -> this annotator's latest line in LABELS at start
    writer: LabelWriter
    no_rubric: int = 0  # queue rows left out: no rubric judges their project
    # The labelling queue by reason as the page loaded it (goldenset.counts: what `status` says).
    queue_counts: dict[str, int] = field(default_factory=dict)
    clock: Callable[[], datetime] = utc_now
    on_saved: Callable[[QueueItem, dict[str, Any], Path], None] | None = None
    team: Team | None = None  # team mode: the pairs are shared with other annotators (labelling/team.py)
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    done: dict[int, dict[str, Any]] = field(default_factory=dict)  # item index -> line written this session
    replaced: dict[int, dict[str, Any]] = field(default_factory=dict)  # item index -> the line its latest corrected
    passed_over: set[int] = field(default_factory=set)  # item indexes left with `n`, not labelled
    # item index -> lines written for it this session: a correction names the count it saw, so
    # a double Enter on a correction (same count, whatever the clock says) is refused.
    writes: dict[int, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self._index = {(it.query_id, it.doc_id): i for i, it in enumerate(self.items)}
        self._by_number = {it.priority: i for i, it in enumerate(self.items)}

    @property
    def already_labelled(self) -> int:
        """Queued pairs this annotator held a label on when the page started."""
        return len(self.before)

    @property
    def queued(self) -> int:
        """The labelling queue's size as loaded (its `labelling_queue` count), pairs without a rubric included."""
        return sum(self.queue_counts.values()) if self.queue_counts else len(self.items) + self.no_rubric

    def number(self, i: int) -> int:
        """The pair's number: its priority in the queue (stable across restarts of the page)."""
        return self.items[i].priority

    def index_of(self, number: int) -> int | None:
        """The item index of pair `number` (its priority); None when the loaded queue has no such pair."""
        return self._by_number.get(number)

    def latest(self, i: int) -> dict[str, Any] | None:
        """This annotator's label line on pair `i`: written this session, else before the page started."""
        return self.done.get(i) or self.before.get(i)

    def labelled(self) -> dict[int, dict[str, Any]]:
        """Item index -> this annotator's latest line, for every pair they hold a label on."""
        return {**self.before, **self.done}

    @property
    def rubric(self) -> Rubric:
        """The one rubric, when the page works under one (RubricError with several)."""
        return self.rubrics.only("`LabellingSession.rubric`")

    def rubric_for(self, item: QueueItem) -> Rubric:
        """The rubric a pair is labelled under: its project's (contract 9.5)."""
        rubric = self.rubrics.for_project(item.project)
        if rubric is None:  # pragma: no cover - open_session leaves such pairs out
            raise SubmissionError(f"no rubric judges project {item.project!r}; reload the page", 409)
        return rubric

    def next_pending(self, after: int = -1) -> int | None:
        """The first item after index `after` this annotator holds no label on (nor, in a team, taken by others)."""
        return next(
            (
                i
                for i in range(after + 1, len(self.items))
                if self.latest(i) is None and (self.team is None or self.team.offered(self.annotator, i))
            ),
            None,
        )

    def find(self, query_id: str, doc_id: str) -> int:
        """The index of the queued pair; SubmissionError when the loaded queue does not hold it."""
        i = self._index.get((query_id, doc_id))
        if i is None:
            raise SubmissionError(
                f"pair ({query_id!r}, {doc_id!r}) is not in the queue this page loaded; reload the page", 404
            )
        return i

    def submit(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """Validate a form against the queue and the rubric, append its label line; (index, line)."""
        i = self.find(form.get("query_id", ""), form.get("doc_id", ""))
        item = self.items[i]
        if form.get("doc_version") != item.doc_version:
            raise SubmissionError(
                f"{item.doc_id} is queued at version {item.doc_version!r}, the form says "
                f"{form.get('doc_version')!r}; reload the page"
            )
        line = self.make_line(item, form)
        # In a team, the team's lock makes the lease check and the write one step.
        with self._lock, self.team.lock if self.team is not None else contextlib.nullcontext():
            if self.team is not None and (hold := self.team.check_write(self.annotator, i)) is not None:
                raise HeldByOthers(hold)
            held = self.latest(i)
            if held is not None and form.get("replaces") == str(self.writes.get(i, 0)):
                self.replaced[i] = held  # a correction: a new line, the old one kept in its file
            elif held is not None:
                raise SubmissionError(
                    f"{item.doc_id} for query {item.query_id} is already labelled ({held['label']}); "
                    f"open pair {self.number(i)} from the queue to correct it",
                    409,
                )
            path = self.writer.append(line, line["ts"][:10])
            if self.team is not None:
                self.team.record(self.annotator, i, line)
            self.done[i] = line
            self.writes[i] = self.writes.get(i, 0) + 1
            self.passed_over.discard(i)
        if self.on_saved is not None:
            self.on_saved(item, line, path)
        return i, line

    def make_line(self, item: QueueItem, form: dict[str, str]) -> dict[str, Any]:
        """The contract 7.2 line for a submitted form; SubmissionError when the pair's rubric refuses it."""
        rubric = self.rubric_for(item)
        answers = {d: form.get(f"dim_{d}", "") for d in rubric.dimension_names}
        unanswered = [d for d, v in answers.items() if v not in ("pass", "fail")]
        if unanswered:
            raise SubmissionError(f"answer every question first: {', '.join(unanswered)} unanswered")
        failing = [d for d, v in answers.items() if v == "fail"]
        matched = rubric.labels_for(failing)
        if len(matched) != 1:  # pragma: no cover - the session refuses open rubrics at start
            raise SubmissionError(f"the rubric gives {len(matched)} labels for these answers")
        label = form.get("label") or matched[0]
        fails = f"with {', '.join(failing)} failing" if failing else "when every test passes"
        if label != matched[0]:
            raise SubmissionError(f"label {label!r} contradicts the answers: the rubric gives {matched[0]!r} {fails}")
        decided_by = form.get("decided_by", "")
        options = decided_by_options(rubric, label, failing)
        if decided_by not in options:
            raise SubmissionError(
                f"decided_by {decided_by!r} cannot decide {label!r} {fails}; choose one of {', '.join(options)}"
            )
        if not _QUERY_ID.fullmatch(item.query_id) or not item.doc_id or not item.doc_version:
            raise SubmissionError(
                f"the queued pair ({item.query_id!r}, {item.doc_id!r}, {item.doc_version!r}) "
                "breaks the label line rules; run `goldenset pool` again",
                500,
            )
        note = form.get("note", "").strip()
        if len(note) > MAX_NOTE_CHARS:
            raise SubmissionError(f"the note has {len(note)} characters; keep it to {MAX_NOTE_CHARS} at most")
        line: dict[str, Any] = {
            "event": "label",
            "query_id": item.query_id,
            "doc_id": item.doc_id,
            "doc_version": item.doc_version,
            "label": label,
            "decided_by": decided_by,
            "annotator": self.annotator,
            "rubric": rubric.name,
            "ts": self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "dimensions": answers,
        }
        if note:
            line["note"] = note
        line["kind"] = "human"
        # The rubric module is the one definition of a valid line; the checks above only word the refusal.
        reason = rubric.label_line_reason(rubric=rubric.name, label=label, decided_by=decided_by, dimensions=answers)
        if reason is not None:  # pragma: no cover - every way to reach this is refused above
            raise SubmissionError(f"the rubric refuses this label ({reason})")
        return line


def open_session(
    annotator: str,
    *,
    db: Path,
    labels: Path,
    rubric: Path,
    wait: float = 0.0,
    notify: Callable[[str], None] | None = None,
) -> LabellingSession:
    """Check the name, load the rubrics, the queue and LABELS, and close DuckDB again."""
    check_annotator(annotator)
    rubrics = load_rubrics(rubric).require_closed()
    con = connect(db, read_only=True, wait=wait, notify=notify)
    try:
        queue = load_queue(con)
        counts = labelling_queue_by_reason(con)
    finally:
        con.close()
    items = [it for it in queue if rubrics.for_project(it.project) is not None]
    project_of = {it.query_id: it.project for it in items if it.project is not None}
    lines = labelled_lines(labels, annotator, rubrics, project_of)
    before = {
        i: lines[(it.query_id, it.doc_id, it.doc_version)]
        for i, it in enumerate(items)
        if (it.query_id, it.doc_id, it.doc_version) in lines
    }
    return LabellingSession(
        annotator,
        rubrics,
        items,
        before,
        LabelWriter(labels, annotator),
        no_rubric=len(queue) - len(items),
        queue_counts=counts,
    )


# --------------------------------------------------------------------------- the web app

_env = TEMPLATES


def draft_key(annotator: str, query_id: str, doc_id: str, doc_version: str) -> str:
    """The browser's localStorage key of what `annotator` typed on a pair and has not saved yet."""
    return json.dumps(["goldenset-draft", annotator, query_id, doc_id, doc_version], separators=(",", ":"))


def _render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_env.get_template(name).render(**context), status_code=status)


def _rubric_json(rubric: Rubric) -> dict[str, Any]:
    """What the page's script needs to show the label live and offer admissible decided_by."""
    return {
        "dimensions": list(rubric.dimension_names),
        "labels": [lab.to_json() for lab in rubric.labels],
    }


def create_app(
    session: LabellingSession,
    allowed_hosts: list[str] | None = None,
    public_origin: str | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    explorer_link: str | None = None,
) -> Starlette:
    """The labelling page: GET / (the queue view), /pair/{n} (n: the pair's priority), /jump, /done; POST /label.

    `public_origin` (scheme://host[:port]) is the address people open when a reverse proxy
    serves the page: forms posted from it are accepted as from the page itself.
    `extra_routes` are served by the same app, under its host rule (`label serve` adds the set
    explorer's, goldenset.explorer, which the header links to at `explorer_link`).
    """

    def common(**extra: Any) -> dict[str, Any]:
        return {
            "s": session,
            "rubric": session.rubrics.rubrics[0] if len(session.rubrics) == 1 else None,
            "queued": session.queued,
            "loaded": len(session.items),
            "labelled": len(session.done),
            "labelled_total": len(session.labelled()),
            "team": session.team,
            "saved_key": None,  # the draft a page drops from the browser: its line is written
            "explorer": explorer_link,
            **extra,
        }

    def pair_page(
        i: int,
        *,
        answers: dict[str, str] | None = None,
        error: str | None = None,
        saved: dict[str, Any] | None = None,
        saved_replaced: dict[str, Any] | None = None,
        status: int = 200,
    ) -> HTMLResponse:
        # In a team, showing a pair leases it (or renews the lease) unless others hold it.
        hold = session.team.take(session.annotator, i) if session.team is not None else None
        nxt = session.next_pending(i)
        here = session.number(i)
        return _render(
            "labelling_pair.html",
            status,
            **common(
                i=i,
                number=here,
                rubric=session.rubric_for(session.items[i]),
                item=session.items[i],
                reason_text=REASON_TEXT.get(session.items[i].reason, ""),
                answers=answers or {},
                error=error,
                saved=saved,
                saved_replaced=saved_replaced,
                saved_item=session.items[session.find(saved["query_id"], saved["doc_id"])] if saved else None,
                previous=session.latest(i),
                replaced_number=_number_of(session, session.items[i].query_id, session.items[i].replaced_doc),
                writes=session.writes.get(i, 0),
                hold=hold,
                draft_key=draft_key(
                    session.annotator, session.items[i].query_id, session.items[i].doc_id, session.items[i].doc_version
                ),
                saved_key=_saved_key(session, saved),
                rubric_json=_rubric_json(session.rubric_for(session.items[i])),
                next_url=f"/pair/{session.number(nxt)}?passed={here}" if nxt is not None else f"/done?passed={here}",
            ),
        )

    def note_passed(request: Request) -> None:
        n = request.query_params.get("passed", "")
        i = session.index_of(int(n)) if n.isdigit() else None
        if i is not None and session.latest(i) is None:
            session.passed_over.add(i)
            if session.team is not None:
                session.team.release(session.annotator, i)

    async def index(request: Request) -> Response:
        return queue(request)

    def queue(request: Request) -> Response:
        from goldenset.labelling.queue_view import STATUSES, filter_rows, progress_by_project, queue_rows

        if session.team is not None:
            rows = session.team.rows(session.annotator, session.passed_over)
        else:
            rows = queue_rows(session.items, session.labelled(), session.passed_over)
        chosen = {k: request.query_params.get(k, "") for k in ("project", "reason", "status")}
        first = session.next_pending()
        return _render(
            "labelling_queue.html",
            **common(
                rows=filter_rows(rows, **chosen),
                total=len(rows),
                progress=progress_by_project(rows),
                projects=sorted({r.project for r in rows}),
                reasons=sorted({r.reason for r in rows}),
                statuses=STATUSES,
                chosen=chosen,
                first_todo=session.number(first) if first is not None else None,
                panel=session.team.panel() if session.team is not None else None,
            ),
        )

    async def queue_route(request: Request) -> Response:
        return queue(request)

    async def jump(request: Request) -> Response:
        n = request.query_params.get("n", "").strip()
        if not n.isdigit() or session.index_of(int(n)) is None:
            return _render(
                "labelling_error.html",
                404,
                **common(error=f"no pair {n!r}: {_numbers_said(session)}"),
            )
        return RedirectResponse(f"/pair/{int(n)}", status_code=303)

    async def done(request: Request) -> Response:
        note_passed(request)
        saved_i = _index_param(session, request, "saved")
        saved = session.done.get(saved_i) if saved_i is not None else None
        return _render("labelling_done.html", **common(saved_key=_saved_key(session, saved)))

    async def pair(request: Request) -> Response:
        n: int = request.path_params["n"]
        i = session.index_of(n)
        if i is None:
            return _render("labelling_error.html", 404, **common(error=f"no pair {n}: {_numbers_said(session)}"))
        note_passed(request)
        saved_i = _index_param(session, request, "saved")
        saved = session.done.get(saved_i) if saved_i is not None else None
        replaced = session.replaced.get(saved_i) if saved_i is not None else None
        return pair_page(i, saved=saved, saved_replaced=replaced)

    async def label(request: Request) -> Response:
        try:
            form = await _read_form(request)
        except SubmissionError as exc:
            return _render("labelling_error.html", exc.status, **common(error=str(exc)))
        try:
            _check_same_origin(request, form, session.token, public_origin)
        except SubmissionError as exc:
            known = session._index.get((form.get("query_id", ""), form.get("doc_id", "")))
            if exc.status == 403 and known is not None and _same_origin_only(request, public_origin):
                # A page from before a restart (or without its token): keep what was typed.
                return pair_page(
                    known,
                    answers=form,
                    error="Not saved yet: the page restarted since this form was shown (or its token is missing). "
                    "Your answers and note are kept below; press Enter to save them.",
                    status=403,
                )
            return _render("labelling_error.html", exc.status, **common(error=str(exc)))
        try:
            i, _ = await run_in_threadpool(session.submit, form)
        except SubmissionError as exc:
            if exc.status == 400 or isinstance(exc, HeldByOthers):
                # The pair is known: show it again with the answers given and the reason.
                return pair_page(
                    session.find(form["query_id"], form["doc_id"]), answers=form, error=str(exc), status=exc.status
                )
            return _render("labelling_error.html", exc.status, **common(error=str(exc)))
        nxt = session.next_pending(i)
        here = session.number(i)
        return RedirectResponse(
            f"/pair/{session.number(nxt)}?saved={here}" if nxt is not None else f"/done?saved={here}", status_code=303
        )

    routes: list[BaseRoute] = [
        Route("/", index, methods=["GET"]),
        Route("/queue", queue_route, methods=["GET"]),
        Route("/jump", jump, methods=["GET"]),
        Route("/done", done, methods=["GET"]),
        Route("/pair/{n:int}", pair, methods=["GET"]),
        Route("/label", label, methods=["POST"]),
    ]
    routes += list(extra_routes)
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)] if allowed_hosts else []
    return Starlette(routes=routes, middleware=middleware)


async def _read_form(request: Request) -> dict[str, str]:
    """An urlencoded form, one value a field; the page needs no multipart and ships no parser for it."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise SubmissionError(f"expected a form (application/x-www-form-urlencoded), got {ctype or 'no type'!r}", 415)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_BODY_BYTES:
            raise SubmissionError(f"the form is larger than {_MAX_BODY_BYTES} bytes", 413)
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        raise SubmissionError("the form is not UTF-8") from None
    repeated = sorted(k for k, v in fields.items() if len(v) > 1)
    if repeated:
        raise SubmissionError(f"field {repeated[0]!r} is given more than once")
    return {k: v[0] for k, v in fields.items()}


def _saved_key(session: LabellingSession, saved: dict[str, Any] | None) -> str | None:
    """The draft key of a line just written, for the page to drop from the browser."""
    if saved is None:
        return None
    return draft_key(session.annotator, saved["query_id"], saved["doc_id"], saved["doc_version"])


def _number_of(session: LabellingSession, query_id: str, doc_id: str | None) -> int | None:
    """The pair number (priority) of (query_id, doc_id) in the loaded queue, if it is there."""
    i = session._index.get((query_id, doc_id or ""))
    return session.number(i) if i is not None else None


def _index_param(session: LabellingSession, request: Request, name: str) -> int | None:
    """The item index a query parameter names by pair number (`?saved=6`), None when it names none."""
    n = request.query_params.get(name, "")
    return session.index_of(int(n)) if n.isdigit() else None


def _numbers_said(session: LabellingSession) -> str:
    """Which pair numbers the page holds, for an error about one it does not."""
    if not session.items:
        return "the queue this page loaded is empty"
    numbers = [it.priority for it in session.items]
    if numbers == list(range(numbers[0], numbers[0] + len(numbers))):
        return f"the queue holds pairs {numbers[0]} to {numbers[-1]}"
    return (
        f"the queue holds {len(numbers)} pairs, numbered {numbers[0]} to {numbers[-1]} with gaps (see the queue view)"
    )


def _page_origins(request: Request, public_origin: str | None) -> set[str]:
    """The origins a form of this page comes from: the URL it was served at, and the proxy's public one."""
    return {f"{request.url.scheme}://{request.headers.get('host', '')}"} | ({public_origin} if public_origin else set())


def _same_origin_only(request: Request, public_origin: str | None = None) -> bool:
    """The browser says the form came from this page (or says nothing): only the token was wrong."""
    origin = request.headers.get("origin")
    site_ok = request.headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")
    return site_ok and (origin is None or origin in _page_origins(request, public_origin))


def _check_same_origin(request: Request, form: dict[str, str], token: str, public_origin: str | None = None) -> None:
    """Refuse a POST another site made: the browser's Origin must be this host and the form must carry the token."""
    origin = request.headers.get("origin")
    if origin is not None and origin not in _page_origins(request, public_origin):
        raise SubmissionError(f"refused a form posted from {origin!r}: only this page may submit labels", 403)
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        raise SubmissionError("refused a form posted from another site: only this page may submit labels", 403)
    if not secrets.compare_digest(form.get("token", ""), token):
        raise SubmissionError("the form's token is missing or from an earlier run of the page; reload the page", 403)
