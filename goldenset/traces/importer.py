"""`goldenset traces import`: span files in, contract lines out, rejects into the quarantine.

Where the lines go: `LOGS/dt=<day of the span's start, UTC>/traces.jsonl` holds every
serve imported for that day and its verdicts (a verdict sits with its serve), and
`LABELS/dt=<day>/traces-judge.jsonl` the judge label lines. Each import merges into
those files by key (a serve by serve_id; a verdict by serve, document, annotation name
and annotator kind; a judge line by annotator, query, document and annotation name),
the newer import's line replacing the older, and writes them in a fixed order. So the
same spans imported twice write the same bytes (a file left unchanged is not touched,
and so not re-ingested), and a span or annotation re-sent with new content converges
to it, whichever file carried it.

Where the rejects go: into the warehouse's `trace_rejects` (listed by `goldenset
rejects` as `traces/<input file>`), replaced for each input file the import read.
They never count toward the serve log's rejected share: no log line was written for
them.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from goldenset.connection import Connection
from goldenset.errors import InputError, UsageError
from goldenset.records import normalise_task, query_id
from goldenset.traces.convert import (
    SpanRejected,
    SpanServe,
    VersionLookup,
    contract_ts,
    is_retriever,
    to_serve,
    verdict_of,
)
from goldenset.traces.mapping import Mapping
from goldenset.traces.spans import Annotation, Bad, Record, Span, input_files, read_records
from goldenset.warehouse import transaction

FORMATS = ("otlp-json", "openinference")
LOG_FILE = "traces.jsonl"
JUDGE_FILE = "traces-judge.jsonl"


@dataclass
class TraceImport:
    """What one import read and wrote."""

    files_read: int = 0
    spans_read: int = 0
    spans_skipped: int = 0  # not retriever spans
    serves: int = 0
    verdicts: int = 0
    judge_labels: int = 0
    annotations_skipped: Counter = field(default_factory=Counter)  # by why: kind or no document named
    rejected: Counter = field(default_factory=Counter)  # by reason
    files_written: list[str] = field(default_factory=list)

    def summary(self) -> list[str]:
        """What the command prints: one line per count, rejects and skips by reason."""
        out = [
            f"files read: {self.files_read}",
            f"spans read: {self.spans_read} ({self.spans_skipped} not retriever spans)",
            f"serves: {self.serves}",
            f"verdicts: {self.verdicts}",
        ]
        if self.judge_labels:
            out.append(f"judge label lines: {self.judge_labels}")
        for why, n in sorted(self.annotations_skipped.items()):
            out.append(f"annotations skipped ({why}): {n}")
        for reason, n in sorted(self.rejected.items()):
            out.append(f"rejected ({reason}): {n}")
        out.append("files written: " + (", ".join(self.files_written) or "none (unchanged)"))
        return out

    def to_json(self) -> dict[str, Any]:
        """The fields, in order; the counts by reason as objects in code-point order of their keys."""
        by_reason = {"annotations_skipped": self.annotations_skipped, "rejected": self.rejected}
        return asdict(self) | {name: dict(sorted(c.items())) for name, c in by_reason.items()}


@dataclass(frozen=True)
class RejectRow:
    """One row for trace_rejects: where it stood, why, and the raw line."""

    source_file: str
    line: int | None
    reason: str
    detail: str
    raw: str | None
    at: datetime | None = None  # when it was rejected, if not when it is stored


class SnapshotVersions:
    """The version the corpus snapshot in force at a time gave a document (contract 14).

    In force at t: the latest successful corpus load at or before t. A span older than
    every load has no snapshot in force: its documents need the version in metadata.
    """

    def __init__(self, con: Connection):
        self.con = con
        self.loads = con.execute("SELECT loaded_at, content_sha256 FROM corpus_loads ORDER BY loaded_at").fetchall()
        self.cache: dict[tuple[str, str], str | None] = {}

    def __call__(self, doc_id: str, at: datetime) -> str | None:
        naive = at.astimezone(UTC).replace(tzinfo=None)
        sha = None
        for loaded_at, content in self.loads:
            if loaded_at > naive:
                break
            sha = content
        if sha is None:
            return None
        key = (sha, doc_id)
        if key not in self.cache:
            rows = self.con.execute(
                "SELECT version FROM corpus_documents WHERE content_sha256 = ? AND doc_id = ?", [sha, doc_id]
            ).fetchall()
            self.cache[key] = rows[0][0] if rows else None
        return self.cache[key]


def import_traces(
    con: Connection,
    path: Path,
    fmt: str,
    mapping: Mapping,
    logs: Path,
    labels: Path | None = None,
    now: datetime | None = None,
) -> TraceImport:
    """Read span files at `path`, write contract lines under `logs` (and `labels`), quarantine the rest."""
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    files = input_files(Path(path))
    if not files:
        raise InputError(f"no span files at {path}: give a .jsonl, .json or .parquet file, or a folder holding them")
    if mapping.judge is not None and labels is None:
        raise UsageError("the mapping has judge: rules, so give --labels for the judge label lines")
    converted = convert_files(files, fmt, mapping, SnapshotVersions(con), Path(logs))
    write_lines(converted, Path(logs), labels)
    store_rejects(con, [name for name, _ in files], converted.rejects, now or datetime.now(UTC))
    return converted.result


@dataclass
class Converted:
    """What a batch of span files comes to before anything is written: counts, lines by key, rejects."""

    result: TraceImport
    log_lines: dict[tuple, tuple[str, dict]]
    judge_lines: dict[tuple, tuple[str, dict]]
    rejects: list[RejectRow]


def convert_files(
    files: list[tuple[str, Path]], fmt: str, mapping: Mapping, lookup: VersionLookup, logs: Path, strict: bool = True
) -> Converted:
    """Read and convert `files` (name, path) in order, the later copy of a span winning; write nothing.

    `logs` is read for the serves earlier imports wrote, which annotations may name. `strict`:
    see `spans.read_records`.
    """
    result = TraceImport(files_read=len(files))
    rejects: list[RejectRow] = []
    spans: dict[tuple[str, str], tuple[Record, Span]] = {}
    annotations: list[tuple[Record, Annotation]] = []
    for name, file in files:
        for rec in read_records(name, file, fmt, strict):
            if isinstance(rec.item, Bad):
                rejects.append(RejectRow(name, rec.line, rec.item.reason, rec.item.detail, rec.raw))
            elif isinstance(rec.item, Span):
                result.spans_read += 1
                # A span re-sent later in the input replaces the earlier copy.
                spans[(rec.item.trace_id, rec.item.span_id)] = (rec, rec.item)
            else:
                annotations.append((rec, rec.item))
    serves: dict[str, SpanServe] = {}
    by_span: dict[str, list[SpanServe]] = {}
    non_retriever: set[str] = set()
    for rec, span in spans.values():
        if not is_retriever(span):
            result.spans_skipped += 1
            non_retriever.add(span.span_id)
            continue
        try:
            serve, item_rejects = to_serve(span, mapping, lookup)
        except SpanRejected as r:
            rejects.append(RejectRow(rec.source_file, rec.line, r.reason, r.detail, rec.raw))
            continue
        rejects += [RejectRow(rec.source_file, rec.line, r.reason, r.detail, rec.raw) for r in item_rejects]
        serves[serve.serve_id] = serve
        by_span.setdefault(serve.span_id, []).append(serve)
    verdict_lines, judge_lines, annotation_rejects = _annotation_lines(
        annotations, serves, by_span, non_retriever, mapping, logs, result
    )
    rejects += annotation_rejects
    result.serves = len(serves)
    result.verdicts = len(verdict_lines)
    result.judge_labels = len(judge_lines)
    result.rejected = Counter(r.reason for r in rejects)
    serve_lines = {("serve", s.serve_id): (s.ts.strftime("%Y-%m-%d"), s.line()) for s in serves.values()}
    return Converted(result, {**serve_lines, **verdict_lines}, judge_lines, rejects)


def _annotation_lines(
    annotations: list[tuple[Record, Annotation]],
    serves: dict[str, SpanServe],
    by_span: dict[str, list[SpanServe]],
    non_retriever: set[str],
    mapping: Mapping,
    logs: Path,
    result: TraceImport,
) -> tuple[dict[tuple, tuple[str, dict]], dict[tuple, tuple[str, dict]], list[RejectRow]]:
    """Verdict and judge lines of the annotations, by key, and the annotations rejected."""
    verdict_lines: dict[tuple, tuple[str, dict]] = {}
    judge_lines: dict[tuple, tuple[str, dict]] = {}
    rejects: list[RejectRow] = []
    if any(a.span_id not in by_span and a.span_id not in non_retriever for _, a in annotations):
        # Annotations often arrive after their spans were imported: look for those spans
        # among the serves already written (this import's own serves take precedence).
        for serve in _written_serves(logs):
            if serve.serve_id in serves or serve.span_id in non_retriever:
                continue
            known = by_span.setdefault(serve.span_id, [])
            if all(s.serve_id != serve.serve_id for s in known):
                known.append(serve)
    for rec, ann in annotations:
        try:
            out = _annotation_line(ann, by_span, non_retriever, mapping)
        except SpanRejected as r:
            rejects.append(RejectRow(rec.source_file, rec.line, r.reason, r.detail, rec.raw))
            continue
        if isinstance(out, str):
            result.annotations_skipped[out] += 1
            continue
        kind, day, key, line = out
        (verdict_lines if kind == "verdict" else judge_lines)[key] = (day, line)
    return verdict_lines, judge_lines, rejects


def write_lines(converted: Converted, logs: Path, labels: Path | None) -> None:
    """Merge the converted lines into the day files (14.3), durably; record the files written."""
    result = converted.result
    result.files_written += _merge(Path(logs), LOG_FILE, converted.log_lines)
    if converted.judge_lines and labels is not None:
        result.files_written += _merge(Path(labels), JUDGE_FILE, converted.judge_lines)


def _annotation_line(
    ann: Annotation, by_span: dict[str, list[SpanServe]], non_retriever: set[str], mapping: Mapping
) -> tuple[str, str, tuple, dict] | str:
    """("verdict" | "label", day, key, line) for an annotation, or why it was skipped."""
    candidates = by_span.get(ann.span_id, [])
    if len(candidates) != 1:
        if ann.span_id in non_retriever:
            return "not_a_retriever_span"
        why = "is not among the imported retriever spans" if not candidates else "matches spans of several traces"
        raise SpanRejected("unknown_span", f"annotation {ann.name!r}: span {ann.span_id} {why}")
    serve = candidates[0]
    if ann.position is not None:
        if ann.position >= len(serve.positions):
            raise SpanRejected(
                "invalid_field",
                f"annotation {ann.name!r}: document_position {ann.position} but span {ann.span_id} has "
                f"{len(serve.positions)} documents",
            )
        doc_id = serve.positions[ann.position]
        if doc_id is None:
            raise SpanRejected(
                "unknown_document_version",
                f"annotation {ann.name!r}: document {ann.position} of span {ann.span_id} was rejected (no version)",
            )
    elif ann.document_id is not None:
        if ann.document_id not in serve.positions:
            raise SpanRejected(
                "invalid_field", f"annotation {ann.name!r} names document {ann.document_id!r} not in the span"
            )
        doc_id = ann.document_id
    else:
        return "names_no_document"
    day = serve.ts.strftime("%Y-%m-%d")
    if ann.kind in mapping.verdicts.kinds and (not mapping.verdicts.names or ann.name in mapping.verdicts.names):
        if ann.ts is None:
            raise SpanRejected("missing_field", f"annotation {ann.name!r} has no updated_at or created_at time")
        v = verdict_of(ann, mapping)
        line = {
            "event": "verdict",
            "serve_id": serve.serve_id,
            "doc_id": doc_id,
            "verdict": v,
            "ts": contract_ts(ann.ts),
        }
        line.update(annotation=ann.name, annotator_kind=ann.kind)
        return "verdict", day, ("verdict", serve.serve_id, doc_id, ann.name, ann.kind), line
    judge = mapping.judge
    if ann.kind == "LLM" and judge is not None and (not judge.names or ann.name in judge.names):
        if ann.ts is None:
            raise SpanRejected("missing_field", f"annotation {ann.name!r} has no updated_at or created_at time")
        if ann.label not in judge.labels:
            raise SpanRejected(
                "unknown_label", f"LLM annotation {ann.name!r} label {ann.label!r} is not in judge.labels"
            )
        label = judge.labels[ann.label]
        item = next(it for it in serve.items if it.doc_id == doc_id)
        qid = query_id(serve.project, normalise_task(serve.task))
        line = {
            "event": "label",
            "query_id": qid,
            "doc_id": doc_id,
            "doc_version": item.doc_version,
            "label": label,
            "decided_by": judge.decided_by[label],
            "annotator": judge.annotator,
            "rubric": judge.rubric,
            "ts": contract_ts(ann.ts),
            "kind": "judge",
            "annotation": ann.name,
        }
        return "label", day, ("label", judge.annotator, qid, doc_id, ann.name), line
    return f"annotator_kind_{ann.kind}"


def _written_serves(logs: Path) -> list[SpanServe]:
    """The serves earlier imports wrote under LOGS (dt=*/traces.jsonl)."""
    out = []
    for path in sorted(logs.glob(f"dt=*/{LOG_FILE}")):
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                line = orjson.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("event") == "serve":
                serve = SpanServe.from_line(line)
                if serve is not None:
                    out.append(serve)
    return out


def _key_of(line: dict) -> tuple | None:
    """The merge key of a line this module wrote (None for anything else, which is dropped)."""
    ev = line.get("event")
    if ev == "serve":
        return ("serve", line.get("serve_id"))
    if ev == "verdict":
        return ("verdict", line.get("serve_id"), line.get("doc_id"), line.get("annotation"), line.get("annotator_kind"))
    if ev == "label":
        return ("label", line.get("annotator"), line.get("query_id"), line.get("doc_id"), line.get("annotation"))
    return None


def _order(item: tuple[tuple, dict]) -> tuple:
    key, line = item
    # Serves first, by time then id; then verdicts and labels by key (None sorts as "").
    return (key[0] != "serve", line.get("ts", "") if key[0] == "serve" else "", tuple(str(k or "") for k in key))


def line_text(line: dict) -> str:
    """One line's text (contract 14.2): compact JSON, keys in the line's order, UTF-8 unescaped.

    orjson's writing is the contract's byte format: a double in its shortest round-trip digits,
    positional from 1e-5 up to 1e16 (`1.0`, `0.00001`), else `1e+16`, `1.5e-7`; strings escaping
    only `"`, `\\` and control characters. Idempotence and "exactly the lines" are byte-level.
    """
    return orjson.dumps(line).decode()


def _merge(root: Path, file_name: str, lines: dict[tuple, tuple[str, dict]]) -> list[str]:
    """Merge `lines` (key -> (day, line)) into root/dt=<day>/file_name; the files whose bytes changed."""
    by_day: dict[str, dict[tuple, dict]] = {}
    for key, (day, line) in lines.items():
        by_day.setdefault(day, {})[key] = line
    written = []
    for day in sorted(by_day):
        target = root / f"dt={day}" / file_name
        merged: dict[tuple, dict] = {}
        if target.exists():
            for text in target.read_text(encoding="utf-8").splitlines():
                try:
                    old: Any = orjson.loads(text) if text.strip() else None
                except ValueError:
                    old = None  # not a line this module wrote: the merge rewrites the file without it
                old_key = _key_of(old) if isinstance(old, dict) else None
                if old_key is not None:
                    merged[old_key] = old
        merged.update(by_day[day])
        body = "".join(line_text(line) + "\n" for _, line in sorted(merged.items(), key=_order))
        if target.exists() and target.read_text(encoding="utf-8") == body:
            continue
        _write_atomically(target, body)
        written.append(target.relative_to(root).as_posix())
    return written


def _write_atomically(target: Path, body: str) -> None:
    """Write through a temporary file, fsync and a rename, so an ingest never reads half a file.

    The file and its folder are fsynced: the receiver deletes a spooled request once its
    lines are here, so they must outlive a crash of the machine, not only of the process.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".traces-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_folder(target.parent)


def fsync_folder(folder: Path) -> None:
    """Make the names in `folder` (a rename, a new or deleted file) durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def store_rejects(con: Connection, names: Iterable[str], rejects: list[RejectRow], now: datetime) -> None:
    """Replace the quarantine rows of every input file read, in one transaction."""
    at = _naive(now)
    with transaction(con):
        con.execute("DELETE FROM trace_rejects WHERE list_contains(?, source_file)", [list(names)])
        if rejects:
            con.executemany(
                "INSERT INTO trace_rejects (source_file, line, reason, detail, raw, rejected_at) VALUES (?, ?, ?, ?, ?, ?)",
                [[r.source_file, r.line, r.reason, r.detail, r.raw, _naive(r.at) if r.at else at] for r in rejects],
            )


def _naive(at: datetime) -> datetime:
    """UTC without an offset, as the warehouse stores times."""
    return at.astimezone(UTC).replace(tzinfo=None)
