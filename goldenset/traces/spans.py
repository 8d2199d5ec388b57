"""Reading span files: OTLP JSON export requests and Phoenix span tables, one record at a time.

Both formats come down to the same two records: a `Span` (ids, start time, flat
attributes with dotted keys, resource attributes) and an `Annotation` (Phoenix's
document or span annotation rows). A record that cannot be read becomes a `Bad`
with the contract's reason, so a reader never stops at the first bad line.

Decisions:

- A row holding `annotator_kind` is an annotation, in either format: Phoenix keeps
  annotations apart from spans, and a team exporting both drops them side by side.
- Nested attribute objects (Phoenix's JSON) and flattened `attributes.x.y` columns
  (its dataframe) are both turned into dotted keys, so the mapping sees one shape.
- Times without an offset are UTC (Phoenix's dataframe stores naive UTC times).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

SPAN_SUFFIXES = (".jsonl", ".json", ".parquet")
# Phoenix's GraphQL names for annotation fields (documentEvaluations), read as its dataframe's.
_CAMEL = {
    "annotatorKind": "annotator_kind",
    "documentPosition": "document_position",
    "spanId": "span_id",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
}


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    start: datetime
    attributes: dict[str, Any]
    resource: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Annotation:
    span_id: str
    position: int | None
    document_id: str | None
    name: str
    label: str | None
    score: float | None
    kind: str
    ts: datetime | None


@dataclass(frozen=True)
class Bad:
    reason: str
    detail: str


@dataclass(frozen=True)
class Record:
    """One unit read, where it stood (file relative to the import path, line or row from 1) and its raw text."""

    source_file: str
    line: int | None
    raw: str | None
    item: Span | Annotation | Bad


class _BadValue(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def input_files(path: Path) -> list[tuple[str, Path]]:
    """(name relative to `path`, file) for a file, or every span file under a folder, in code-point order."""
    path = Path(path)
    if path.is_file():
        return [(path.name, path)]
    if not path.is_dir():
        return []
    files = [p for p in path.rglob("*") if p.is_file() and p.name.endswith(SPAN_SUFFIXES)]
    return sorted(((p.relative_to(path).as_posix(), p) for p in files), key=lambda t: t[0])


def read_records(name: str, path: Path, fmt: str) -> Iterator[Record]:
    """Every record of one file; an unreadable file is one Bad record (`unreadable_file`)."""
    try:
        if path.suffix == ".parquet":
            yield from _parquet_rows(name, path, fmt)
            return
        text = path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        yield Record(name, None, None, Bad("unreadable_file", f"{path} cannot be read: {exc}"))
        return
    for no, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except ValueError as exc:
            yield Record(name, no, line, Bad("invalid_json", str(exc)))
            continue
        if not isinstance(obj, dict):
            yield Record(name, no, line, Bad("not_an_object", "the line is not a JSON object"))
            continue
        for item in _from_object(obj, fmt):
            yield Record(name, no, line, item)


def _parquet_rows(name: str, path: Path, fmt: str) -> Iterator[Record]:
    import pyarrow.parquet as pq

    for no, row in enumerate(pq.read_table(path).to_pylist(), start=1):
        raw = json.dumps(row, default=str, ensure_ascii=False)
        for item in _from_object(row, fmt):
            yield Record(name, no, raw, item)


def _from_object(obj: dict, fmt: str) -> list[Span | Annotation | Bad]:
    try:
        if "annotator_kind" in obj or "annotatorKind" in obj:
            return [_annotation({_CAMEL.get(k, k): v for k, v in flatten(obj).items()})]
        if fmt == "otlp-json":
            return list(_otlp_request(obj))
        return [_phoenix_span(flatten(obj))]
    except _BadValue as exc:
        return [Bad(exc.reason, exc.detail)]


# --------------------------------------------------------------------------- OTLP JSON
def _otlp_request(obj: dict) -> Iterator[Span | Bad]:
    """The spans of one ExportTraceServiceRequest (camelCase, hex ids: the OTLP JSON encoding)."""
    resource_spans = obj.get("resourceSpans")
    if not isinstance(resource_spans, list):
        raise _BadValue("missing_field", "an OTLP JSON line holds resourceSpans (a list)")
    for rs in resource_spans:
        if not isinstance(rs, dict):
            yield Bad("invalid_field", "resourceSpans holds a value that is not an object")
            continue
        try:
            resource = otlp_attributes((rs.get("resource") or {}).get("attributes"))
        except _BadValue as exc:
            yield Bad(exc.reason, "resource: " + exc.detail)
            continue
        for ss in rs.get("scopeSpans") or []:
            for sp in (ss or {}).get("spans") or []:
                try:
                    yield _otlp_span(sp, resource)
                except _BadValue as exc:
                    yield Bad(exc.reason, exc.detail)


def _otlp_span(sp: Any, resource: dict[str, Any]) -> Span:
    if not isinstance(sp, dict):
        raise _BadValue("invalid_field", "a span is not an object")
    trace_id = _hex_id(sp.get("traceId"), "traceId", 32)
    span_id = _hex_id(sp.get("spanId"), "spanId", 16)
    nanos = sp.get("startTimeUnixNano")
    try:
        start = datetime.fromtimestamp(int(nanos) // 1000 / 1e6, tz=UTC) if nanos is not None else None
    except (TypeError, ValueError, OverflowError):
        raise _BadValue("invalid_field", f"startTimeUnixNano {nanos!r} is not an integer") from None
    if start is None:
        raise _BadValue("missing_field", f"span {span_id} has no startTimeUnixNano")
    return Span(trace_id, span_id, start, otlp_attributes(sp.get("attributes")), resource)


def _hex_id(value: Any, name: str, length: int) -> str:
    if value is None or value == "":
        raise _BadValue("missing_field", f"the span has no {name}")
    if not isinstance(value, str) or len(value) != length or not all(c in "0123456789abcdefABCDEF" for c in value):
        raise _BadValue("invalid_field", f"{name} {value!r} is not {length} hex digits")
    if set(value) == {"0"}:
        raise _BadValue("invalid_field", f"{name} is all zeros (an invalid id)")
    return value.lower()


def otlp_attributes(attrs: Any) -> dict[str, Any]:
    """OTLP KeyValue list to a dict of Python values."""
    if attrs is None:
        return {}
    if not isinstance(attrs, list):
        raise _BadValue("invalid_field", "attributes is not a list of key/value objects")
    out = {}
    for kv in attrs:
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise _BadValue("invalid_field", f"attribute {kv!r} has no string key")
        out[kv["key"]] = _any_value(kv.get("value"), kv["key"])
    return out


def _any_value(v: Any, key: str) -> Any:
    if v is None or v == {}:
        return None
    if not isinstance(v, dict) or len(v) != 1:
        raise _BadValue("invalid_field", f"attribute {key} holds {v!r}, not one OTLP AnyValue")
    kind, value = next(iter(v.items()))
    try:
        if kind == "stringValue" and isinstance(value, str):
            return value
        if kind == "boolValue" and isinstance(value, bool):
            return value
        if kind == "intValue" and not isinstance(value, bool | float):
            return int(value)
        if kind == "doubleValue" and not isinstance(value, bool):
            return float(value)
        if kind == "arrayValue":
            return [_any_value(x, key) for x in (value or {}).get("values") or []]
        if kind == "kvlistValue":
            return otlp_attributes((value or {}).get("values"))
        if kind == "bytesValue":
            return value
    except (TypeError, ValueError, AttributeError):
        pass
    raise _BadValue("invalid_field", f"attribute {key} holds {kind} {value!r}, which does not parse")


# --------------------------------------------------------------------------- Phoenix tables
def flatten(obj: dict, prefix: str = "") -> dict[str, Any]:
    """Nested objects to dotted keys (lists are kept as values)."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _phoenix_span(row: dict[str, Any]) -> Span:
    span_id = _id(row, ("context.span_id", "span_id"), "context.span_id")
    trace_id = _id(row, ("context.trace_id", "trace_id"), "context.trace_id")
    start = parse_time(row.get("start_time"), "start_time")
    if start is None:
        raise _BadValue("missing_field", f"span {span_id} has no start_time")
    attributes = {k.removeprefix("attributes."): v for k, v in row.items() if k.startswith("attributes.")}
    if "span_kind" in row and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = row["span_kind"]
    resource = {k.removeprefix("resource.attributes."): v for k, v in row.items() if k.startswith("resource.")}
    return Span(trace_id, span_id, start, attributes, resource)


def _id(row: dict[str, Any], keys: tuple[str, ...], name: str) -> str:
    for k in keys:
        v = row.get(k)
        if v not in (None, ""):
            if not isinstance(v, str):
                raise _BadValue("invalid_field", f"{name} {v!r} is not a string")
            return v
    raise _BadValue("missing_field", f"the row has no {name}")


def parse_time(value: Any, name: str) -> datetime | None:
    """A datetime or ISO 8601 text as an aware UTC datetime (naive: UTC); None when absent."""
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            raise _BadValue("invalid_field", f"{name} {value!r} is not an ISO 8601 time") from None
    else:
        raise _BadValue("invalid_field", f"{name} {value!r} is not a time")
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def _annotation(row: dict[str, Any]) -> Annotation:
    span_id = _id(row, ("context.span_id", "span_id", "span_rowid"), "span_id")
    name = row.get("name")
    if not isinstance(name, str) or not name:
        raise _BadValue("missing_field", "the annotation has no name")
    kind = row.get("annotator_kind")
    if not isinstance(kind, str) or kind.upper() not in ("HUMAN", "LLM", "CODE"):
        raise _BadValue("invalid_field", f"annotator_kind {kind!r} is not HUMAN, LLM or CODE")
    position = row.get("document_position")
    if position is not None and (isinstance(position, bool) or not isinstance(position, int) or position < 0):
        raise _BadValue("invalid_field", f"document_position {position!r} is not an integer >= 0")
    label = row.get("result.label", row.get("label"))
    score = row.get("result.score", row.get("score"))
    if label is not None and not isinstance(label, str):
        raise _BadValue("invalid_field", f"label {label!r} is not a string")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float) or score != score):
        raise _BadValue("invalid_field", f"score {score!r} is not a number")
    doc = row.get("metadata.document_id", row.get("document_id"))
    ts = parse_time(row.get("updated_at"), "updated_at") or parse_time(row.get("created_at"), "created_at")
    return Annotation(span_id, position, None if doc is None else str(doc), name, label, score, kind.upper(), ts)
