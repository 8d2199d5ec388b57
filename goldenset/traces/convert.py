"""Spans and annotations to contract lines: serves (section 1), verdicts, judge label lines (8.3).

One retriever span is one serve. Decisions (contract section 14 holds them all):

- A span is a retriever span when `openinference.span.kind` is `RETRIEVER` or
  `gen_ai.operation.name` is `retrieval`; other spans are skipped and counted.
- serve_id is `<trace_id>-<span_id>` (lowercase hex): unique across traces, stable
  across re-imports.
- Documents are read from flattened keys `retrieval.documents.<i>.document.<field>`,
  from a list at `retrieval.documents` (a JSON string or a list of objects), or from
  `gen_ai.retrieval.documents` (a JSON array of objects with `id`, `score`). A
  document's rank counts the ranked documents up to it: an `always` document takes no
  rank, so the first ranked document after an injected one is rank 1. Positions (from 0,
  every document counted) stay apart: they are what `document_position` annotations
  address, kept per serve as `span_documents`.
- An item whose version neither its metadata nor a snapshot gives is rejected alone
  (`unknown_document_version`); the serve keeps the others, and a serve left with
  none is rejected whole. A verdict on a rejected item is rejected with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from goldenset.traces.mapping import Mapping
from goldenset.traces.spans import Annotation, Span

RETRIEVER_KIND = "RETRIEVER"
VersionLookup = Callable[[str, datetime], str | None]


class SpanRejected(Exception):
    """A span, item or annotation that becomes a quarantine row."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class SpanItem:
    doc_id: str
    doc_version: str
    channel: str
    rank: int | None
    score: float | None


@dataclass(frozen=True)
class SpanServe:
    serve_id: str
    span_id: str
    ts: datetime
    project: str
    task: str
    session_id: str | None
    items: tuple[SpanItem, ...]
    # position in the span's document list -> doc_id (None for a rejected item)
    positions: tuple[str | None, ...]

    def line(self) -> dict[str, Any]:
        items = []
        for it in self.items:
            d: dict[str, Any] = {"doc_id": it.doc_id, "doc_version": it.doc_version, "channel": it.channel}
            if it.rank is not None:
                d["rank"] = it.rank
            if it.score is not None:
                d["score"] = it.score
            items.append(d)
        out: dict[str, Any] = {"event": "serve", "serve_id": self.serve_id, "ts": contract_ts(self.ts)}
        out.update(project=self.project, task=self.task, items=items, span_id=self.span_id)
        # The span's documents by position (null: rejected), so annotations imported later
        # find their document by position without the span (an unknown field to section 1).
        out["span_documents"] = list(self.positions)
        if self.session_id is not None:
            out["session_id"] = self.session_id
        return out

    @classmethod
    def from_line(cls, line: dict[str, Any]) -> SpanServe | None:
        """A serve line this module wrote, read back (None when it is not one)."""
        try:
            items = tuple(
                SpanItem(i["doc_id"], i["doc_version"], i["channel"], i.get("rank"), i.get("score"))
                for i in line["items"]
            )
            positions = line.get("span_documents")
            if not isinstance(positions, list):
                positions = [i.doc_id for i in items]
            ts = datetime.fromisoformat(line["ts"]).astimezone(UTC)
            return cls(
                line["serve_id"],
                line["span_id"],
                ts,
                line["project"],
                line["task"],
                line.get("session_id"),
                items,
                tuple(positions),
            )
        except (KeyError, TypeError, ValueError):
            return None


def contract_ts(ts: datetime) -> str:
    """UTC with microseconds and Z: the contract's ts pattern, exact to what spans carry."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def is_retriever(span: Span) -> bool:
    a = span.attributes
    kind = a.get("openinference.span.kind")
    return (isinstance(kind, str) and kind.upper() == RETRIEVER_KIND) or a.get("gen_ai.operation.name") == "retrieval"


def _json_in(value: Any, values: Sequence[Any]) -> bool:
    """Whether `value` is one of `values` as JSON values: `true` is neither `"true"` nor `1`.

    Python's `in` would take `1 in [True]` (a bool is an int), so a bool matches only a bool.
    """
    return any(isinstance(value, bool) == isinstance(v, bool) and value == v for v in values)


def to_serve(span: Span, mapping: Mapping, lookup: VersionLookup) -> tuple[SpanServe, list[SpanRejected]]:
    """The serve of a retriever span, and the items rejected from it; SpanRejected for the whole span."""
    a = span.attributes
    task = a.get("input.value", a.get("gen_ai.retrieval.query.text"))
    if task is None:
        raise SpanRejected(
            "missing_field", f"span {span.span_id} has no query (input.value or gen_ai.retrieval.query.text)"
        )
    if not isinstance(task, str) or not task.strip():
        raise SpanRejected("invalid_field", f"span {span.span_id}'s query {task!r} is not a non-blank string")
    project = _text(a.get(mapping.project.attribute)) or _text(span.resource.get(mapping.project.attribute))
    project = project or mapping.project.default
    if project is None:
        raise SpanRejected(
            "missing_field",
            f"span {span.span_id} has no {mapping.project.attribute} attribute and the mapping sets no project.default",
        )
    session = _text(a.get(mapping.session_attribute))
    docs = documents(a)
    if not docs:
        raise SpanRejected("missing_field", f"span {span.span_id} has no retrieval documents")
    items: list[SpanItem] = []
    positions: list[str | None] = []
    rejects: list[SpanRejected] = []
    seen: set[str] = set()
    ranked = 0  # ranked documents so far: an `always` one takes no rank (contract 14.2)
    for pos, d in enumerate(docs):
        doc_id = d.get("id")
        if doc_id is None or doc_id == "":
            raise SpanRejected("missing_field", f"span {span.span_id}: document {pos} has no id")
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
            raise SpanRejected("invalid_field", f"span {span.span_id}: document {pos} id {doc_id!r} is not a string")
        doc_id = str(doc_id)
        if doc_id in seen:
            raise SpanRejected("invalid_field", f"span {span.span_id}: document {doc_id!r} appears twice")
        seen.add(doc_id)
        meta = _metadata(d.get("metadata"), span.span_id, pos)
        always = mapping.always is not None and _json_in(meta.get(mapping.always.key), mapping.always.values)
        # A ranked document rejected for its version keeps its rank: it was served there.
        rank = None if always else ranked + 1
        ranked += 0 if always else 1
        version = _text(meta.get(mapping.doc_version_key)) or lookup(doc_id, span.start)
        if version is None:
            rejects.append(
                SpanRejected(
                    "unknown_document_version",
                    f"span {span.span_id}: document {doc_id!r} has no metadata {mapping.doc_version_key!r} and no "
                    f"corpus snapshot loaded by {contract_ts(span.start)} holds it",
                )
            )
            positions.append(None)
            continue
        items.append(SpanItem(doc_id, version, "always" if always else "ranked", rank, _score(d.get("score"))))
        positions.append(doc_id)
    if not items:
        raise SpanRejected("unknown_document_version", f"span {span.span_id}: no document has a known version")
    serve = SpanServe(
        f"{span.trace_id}-{span.span_id}",
        span.span_id,
        span.start,
        project,
        task,
        session,
        tuple(items),
        tuple(positions),
    )
    return serve, rejects


def _score(value: Any) -> float | None:
    """A document's score as a double when it is a number whose double is finite; else none.

    NaN and the infinities (OTLP's JSON writes them as strings) have no JSON number, and an
    integer past the double range has no double: the item is written without a score.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        score = float(value)
    except OverflowError:
        return None
    return score if math.isfinite(score) else None


def _text(v: Any) -> str | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return str(v)
    return v if isinstance(v, str) and v != "" else None


def _metadata(meta: Any, span_id: str, pos: int) -> dict[str, Any]:
    if meta is None:
        return {}
    if isinstance(meta, str):
        try:
            meta = orjson.loads(meta)
        except ValueError:
            raise SpanRejected("invalid_field", f"span {span_id}: document {pos} metadata is not JSON") from None
    if not isinstance(meta, dict):
        raise SpanRejected("invalid_field", f"span {span_id}: document {pos} metadata is not an object")
    return meta


def documents(a: dict[str, Any]) -> list[dict[str, Any]]:
    """The span's documents in order as {id, score, metadata, content}, whatever the attribute layout."""
    flat: dict[int, dict[str, Any]] = {}
    prefix = "retrieval.documents."
    for key, value in a.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix) :].partition(".")
        if not index.isdigit() or not rest.startswith("document."):
            raise SpanRejected("invalid_field", f"attribute {key} is not retrieval.documents.<i>.document.<field>")
        doc, name = flat.setdefault(int(index), {}), rest.removeprefix("document.")
        if name.startswith("metadata."):
            # Phoenix's REST API returns metadata flattened: document.metadata.<key>.
            meta = doc.setdefault("metadata", {})
            if isinstance(meta, dict):
                meta[name.removeprefix("metadata.")] = value
        else:
            doc[name] = value
    if flat:
        return [flat[i] for i in sorted(flat)]
    for key, inner in (("retrieval.documents", "document."), ("gen_ai.retrieval.documents", "")):
        value = a.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            try:
                value = orjson.loads(value)
            except ValueError:
                raise SpanRejected("invalid_field", f"attribute {key} is not a JSON array") from None
        if not isinstance(value, list) or not all(isinstance(d, dict) for d in value):
            raise SpanRejected("invalid_field", f"attribute {key} is not an array of objects")
        out = []
        for d in value:
            d = _flat(d)
            out.append({k.removeprefix(inner): v for k, v in d.items()} if inner else d)
        return out
    return []


def _flat(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and k in ("document",):
            out.update({f"{k}.{kk}": vv for kk, vv in v.items()})
        else:
            out[k] = v
    return out


def verdict_of(ann: Annotation, mapping: Mapping) -> str:
    """The verdict an annotation maps to; SpanRejected `unknown_label` when nothing maps it."""
    rules = mapping.verdicts
    if ann.label is not None and ann.label in rules.labels:
        return rules.labels[ann.label]
    if ann.score is not None:
        for rule in rules.scores:
            if ann.score >= rule.min:
                return rule.verdict
    raise SpanRejected(
        "unknown_label",
        f"annotation {ann.name!r} label {ann.label!r} score {ann.score!r} maps to no verdict; "
        "add it to verdicts.labels or verdicts.scores in the mapping",
    )
