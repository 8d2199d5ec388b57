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

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from goldenset import jsonstrict

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


class BadValue(Exception):
    """A value that does not read: the contract's reject reason and what was wrong."""

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


def read_records(name: str, path: Path, fmt: str, strict: bool = True) -> Iterator[Record]:
    """Every record of one file; an unreadable file is one Bad record (`unreadable_file`).

    A line is standard JSON as section 1 defines it (`goldenset.jsonstrict`: no duplicate keys,
    no NaN), else `invalid_json`. `strict=False` reads with orjson alone, for lines this
    project wrote from parsed objects (the receiver's spool), which cannot hold a duplicate.
    """
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
            obj = jsonstrict.loads(line.encode("utf-8")) if strict else orjson.loads(line)
        except ValueError as exc:  # StrictJSONError and orjson's JSONDecodeError are ValueErrors
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
    except BadValue as exc:
        return [Bad(exc.reason, exc.detail)]


# --------------------------------------------------------------------------- OTLP JSON
def _otlp_request(obj: dict) -> Iterator[Span | Bad]:
    """The spans of one ExportTraceServiceRequest in a file (OTLP JSON: camelCase keys; hex or base64 ids)."""
    resource_spans = obj.get("resourceSpans")
    if not isinstance(resource_spans, list):
        raise BadValue("missing_field", "an OTLP JSON line holds resourceSpans (a list)")
    for rs in resource_spans:
        if not isinstance(rs, dict):
            yield Bad("invalid_field", "resourceSpans holds a value that is not an object")
            continue
        try:
            resource = otlp_attributes(_object(rs.get("resource"), "resource").get("attributes"))
            scopes = _objects(rs.get("scopeSpans"), "scopeSpans")
        except BadValue as exc:
            yield Bad(exc.reason, "resource: " + exc.detail)
            continue
        for ss in scopes:
            try:
                spans = _objects(ss.get("spans"), "spans")
            except BadValue as exc:
                yield Bad(exc.reason, exc.detail)
                continue
            for sp in spans:
                try:
                    yield otlp_span(sp, resource)
                except BadValue as exc:
                    yield Bad(exc.reason, exc.detail)


def request_shape_error(obj: Any) -> str | None:
    """Why `obj` is not shaped as an ExportTraceServiceRequest (lists of objects down to each span); None if it is.

    The receiver answers 400 for such a body. Absent lists are empty (an empty request is valid).
    """
    if not isinstance(obj, dict):
        return "the body is not a JSON object"
    try:
        for rs in _objects(obj.get("resourceSpans"), "resourceSpans"):
            _object(rs.get("resource"), "resource")
            for ss in _objects(rs.get("scopeSpans"), "scopeSpans"):
                _objects(ss.get("spans"), "spans")
    except BadValue as exc:
        return exc.detail
    return None


def _objects(value: Any, name: str) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise BadValue("invalid_field", f"{name} is not a list of objects")
    return value


def _object(value: Any, name: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadValue("invalid_field", f"{name} is not an object")
    return value


def otlp_span(sp: Any, resource: dict[str, Any]) -> Span:
    """One OTLP span as a Span; BadValue (a reject reason and detail) when it does not read."""
    if not isinstance(sp, dict):
        raise BadValue("invalid_field", "a span is not an object")
    trace_id = otlp_id(sp.get("traceId"), "traceId", TRACE_ID_BYTES)
    span_id = otlp_id(sp.get("spanId"), "spanId", SPAN_ID_BYTES)
    nanos = sp.get("startTimeUnixNano")
    try:
        start = datetime.fromtimestamp(int(nanos) // 1000 / 1e6, tz=UTC) if nanos is not None else None
    except (TypeError, ValueError, OverflowError):
        raise BadValue("invalid_field", f"startTimeUnixNano {nanos!r} is not an integer") from None
    if start is None:
        raise BadValue("missing_field", f"span {span_id} has no startTimeUnixNano")
    return Span(trace_id, span_id, start, otlp_attributes(sp.get("attributes")), resource)


# Trace and span ids as the two encoders real tools use write them (contract 14.1): OTLP's
# JSON encoding as hex, protobuf's standard JSON mapping (MessageToDict, MessageToJson) as
# padded base64. The length decides which: 2n hex digits or the 4*ceil(n/3) characters of
# base64 for n bytes differ for both ids (32/24, 16/12), so no string is read both ways.
TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_STANDARD, _URL_SAFE = frozenset("+/"), frozenset("-_")


def base64_length(size: int) -> int:
    """Characters of padded base64 for `size` bytes."""
    return 4 * -(-size // 3)


def otlp_id(value: Any, name: str, size: int) -> str:
    """An id of `size` bytes as lowercase hex: from 2*size hex digits, or from padded base64.

    Base64 is standard (`+/`) or URL-safe (`-_`), not both, padded with `=` to
    `base64_length(size)` characters, and canonical (the unused bits of its last digit are
    zero), so each id has one spelling per encoding. An id of zero bytes only is invalid.
    """
    if value is None or value == "":
        raise BadValue("missing_field", f"the span has no {name}")
    hex_len, b64_len = 2 * size, base64_length(size)
    raw = None
    if isinstance(value, str) and len(value) == hex_len and _HEX_DIGITS.issuperset(value):
        raw = bytes.fromhex(value)
    elif isinstance(value, str) and len(value) == b64_len:
        raw = _base64_id(value, size)
    if raw is None:
        raise BadValue(
            "invalid_field",
            f"{name} {value!r} is neither {hex_len} hex digits nor {b64_len} characters of padded base64",
        )
    if not any(raw):
        raise BadValue("invalid_field", f"{name} is all zeros (an invalid id)")
    return raw.hex()


def _base64_id(value: str, size: int) -> bytes | None:
    """The `size` bytes a padded, canonical base64 string encodes; None when it is not one."""
    pad = (3 - size % 3) % 3
    body = value[: len(value) - pad]
    if value[len(body) :] != "=" * pad:
        return None
    extra = set(body) - _BASE64
    url_safe = bool(extra & _URL_SAFE)
    if not extra <= (_URL_SAFE if url_safe else _STANDARD):
        return None
    try:
        raw = (base64.urlsafe_b64decode if url_safe else base64.b64decode)(value)
    except ValueError:
        return None
    encoded = (base64.urlsafe_b64encode if url_safe else base64.b64encode)(raw).decode()
    return raw if len(raw) == size and encoded == value else None


def otlp_attributes(attrs: Any) -> dict[str, Any]:
    """OTLP KeyValue list to a dict of Python values."""
    if attrs is None:
        return {}
    if not isinstance(attrs, list):
        raise BadValue("invalid_field", "attributes is not a list of key/value objects")
    out = {}
    for kv in attrs:
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise BadValue("invalid_field", f"attribute {kv!r} has no string key")
        out[kv["key"]] = _any_value(kv.get("value"), kv["key"])
    return out


def _any_value(v: Any, key: str) -> Any:
    if v is None or v == {}:
        return None
    if not isinstance(v, dict) or len(v) != 1:
        raise BadValue("invalid_field", f"attribute {key} holds {v!r}, not one OTLP AnyValue")
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
    raise BadValue("invalid_field", f"attribute {key} holds {kind} {value!r}, which does not parse")


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
    span_id = _id(row, ("context.span_id", "span_id"), "context.span_id", SPAN_ID_BYTES)
    trace_id = _id(row, ("context.trace_id", "trace_id"), "context.trace_id", TRACE_ID_BYTES)
    start = parse_time(row.get("start_time"), "start_time")
    if start is None:
        raise BadValue("missing_field", f"span {span_id} has no start_time")
    attributes = {k.removeprefix("attributes."): v for k, v in row.items() if k.startswith("attributes.")}
    if "span_kind" in row and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = row["span_kind"]
    resource = {k.removeprefix("resource.attributes."): v for k, v in row.items() if k.startswith("resource.")}
    return Span(trace_id, span_id, start, attributes, resource)


def _id(row: dict[str, Any], keys: tuple[str, ...], name: str, size: int) -> str:
    """The first of `keys` the row holds, read as an OTLP span's id is (14.1: hex in either case or
    base64, written lowercase hex), so a row's id and an annotation's match whatever their encoding."""
    for k in keys:
        v = row.get(k)
        if v not in (None, ""):
            if not isinstance(v, str):
                raise BadValue("invalid_field", f"{name} {v!r} is not a string")
            return otlp_id(v, name, size)
    raise BadValue("missing_field", f"the row has no {name}")


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
            raise BadValue("invalid_field", f"{name} {value!r} is not an ISO 8601 time") from None
    else:
        raise BadValue("invalid_field", f"{name} {value!r} is not a time")
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def _annotation(row: dict[str, Any]) -> Annotation:
    span_id = _id(row, ("context.span_id", "span_id", "span_rowid"), "span_id", SPAN_ID_BYTES)
    name = row.get("name")
    if not isinstance(name, str) or not name:
        raise BadValue("missing_field", "the annotation has no name")
    kind = row.get("annotator_kind")
    if not isinstance(kind, str) or kind.upper() not in ("HUMAN", "LLM", "CODE"):
        raise BadValue("invalid_field", f"annotator_kind {kind!r} is not HUMAN, LLM or CODE")
    position = row.get("document_position")
    if position is not None and (isinstance(position, bool) or not isinstance(position, int) or position < 0):
        raise BadValue("invalid_field", f"document_position {position!r} is not an integer >= 0")
    label = row.get("result.label", row.get("label"))
    score = row.get("result.score", row.get("score"))
    if label is not None and not isinstance(label, str):
        raise BadValue("invalid_field", f"label {label!r} is not a string")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float) or score != score):
        raise BadValue("invalid_field", f"score {score!r} is not a number")
    doc = row.get("metadata.document_id", row.get("document_id"))
    ts = parse_time(row.get("updated_at"), "updated_at") or parse_time(row.get("created_at"), "created_at")
    return Annotation(span_id, position, None if doc is None else str(doc), name, label, score, kind.upper(), ts)
