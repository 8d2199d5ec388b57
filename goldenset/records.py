"""One log line in, one serve, verdict or reject reason out (contract section 1).

Reasons are checked in the contract's order, so the first rule a line breaks is
the one reported: invalid_json, not_an_object, unknown_event, missing_field,
invalid_field.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta

from goldenset.jsonstrict import StrictJSONError, loads

VERDICTS = ("helped", "noise", "wrong")
CHANNELS = ("ranked", "always")
# [0-9], not \d: Python's \d also matches other scripts' digits, which the contract's ts does not.
_TS = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))"
)
_INT64_MAX = 2**63 - 1


class Rejected(Exception):
    """The line breaks a rule; `reason` is the contract's reason code."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ServeItem:
    doc_id: str
    doc_version: str
    channel: str
    rank: int | None  # None when not an integer or beyond 64 bits
    score: float | None
    rank_text: str | None = None  # the integer as written: identity even beyond 64 bits


@dataclass(frozen=True, slots=True)
class Serve:
    serve_id: str
    ts: datetime
    project: str
    task: str
    task_norm: str
    query_id: str
    session_id: str | None
    items: tuple[ServeItem, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    serve_id: str
    doc_id: str
    verdict: str
    ts: datetime


def normalise_task(task: str) -> str:
    """NFKC, then casefold, then white space collapsed as str.split() sees it."""
    return " ".join(unicodedata.normalize("NFKC", task).casefold().split())


def display_task(task: str) -> str:
    """The display form of a task (contract v5, section 3): NFKC, then white space folded as
    str.split() sees it; case kept. normalise_task(display_task(t)) == normalise_task(t)."""
    return " ".join(unicodedata.normalize("NFKC", task).split())


def query_id(project: str, task_norm: str) -> str:
    """First 16 hex digits of sha256(project + "\\x1f" + normalised task): stable everywhere."""
    return hashlib.sha256(f"{project}\x1f{task_norm}".encode()).hexdigest()[:16]


def parse_ts(value) -> datetime:
    """A contract timestamp as a naive UTC datetime; fractions past microseconds are cut."""
    if not isinstance(value, str):
        raise ValueError(f"ts must be a string, got {type(value).__name__}")
    m = _TS.fullmatch(value)
    if m is None:
        raise ValueError(f"ts {value!r} is not YYYY-MM-DDTHH:MM:SS[.f](Z|+hh:mm)")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    frac = m.group(7)
    micro = int((frac + "000000")[:6]) if frac else 0
    if m.group(8):
        offset = timedelta(0)
    else:
        oh, om = int(m.group(10)), int(m.group(11))
        if oh > 23 or om > 59:
            raise ValueError(f"ts {value!r} has an impossible offset")
        offset = timedelta(hours=oh, minutes=om) * (-1 if m.group(9) == "-" else 1)
    try:
        local = datetime(year, month, day, hour, minute, second, micro)
        return local - offset
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"ts {value!r} is not a real instant ({exc})") from None


def _nonempty_str(v) -> bool:
    return isinstance(v, str) and v != ""


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _missing(obj: dict, names) -> list[str]:
    return [n for n in names if obj.get(n) is None]


def json_object(raw: bytes) -> dict:
    """A line's JSON object, by the contract's strict rules; Rejected `invalid_json` or `not_an_object`.

    The first two checks of every line, log or label (contract 1 and 7.2).
    """
    try:
        rec = loads(raw)
    except StrictJSONError as exc:
        raise Rejected("invalid_json", str(exc)) from None
    if not isinstance(rec, dict):
        raise Rejected("not_an_object", f"top-level value is a {type(rec).__name__}")
    return rec


def parse_line(raw: bytes) -> Serve | Verdict:
    """Validate one non-blank line; raise Rejected with the first reason that applies."""
    rec = json_object(raw)
    event = rec.get("event")
    if event == "serve":
        return _serve(rec)
    if event == "verdict":
        return _verdict(rec)
    raise Rejected("unknown_event", f"event {event!r} is neither 'serve' nor 'verdict'")


def _serve(rec: dict) -> Serve:
    missing = _missing(rec, ("serve_id", "ts", "project", "task", "items"))
    if missing:
        raise Rejected("missing_field", f"serve lacks {', '.join(missing)}")
    items = rec["items"]
    items_ok = isinstance(items, list) and items and all(isinstance(i, dict) for i in items)
    if isinstance(items, list):
        # Absence anywhere outranks a bad value anywhere, a non-object item included.
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            gone = _missing(item, ("doc_id", "doc_version", "channel"))
            if not gone and item["channel"] == "ranked" and item.get("rank") is None:
                gone = ["rank"]
            if gone:
                raise Rejected("missing_field", f"items[{n}] lacks {', '.join(gone)}")
    serve_id, project, task = rec["serve_id"], rec["project"], rec["task"]
    if not _nonempty_str(serve_id):
        raise Rejected("invalid_field", f"serve_id must be a non-empty string, got {serve_id!r}")
    try:
        ts = parse_ts(rec["ts"])
    except ValueError as exc:
        raise Rejected("invalid_field", str(exc)) from None
    if not _nonempty_str(project):
        raise Rejected("invalid_field", f"project must be a non-empty string, got {project!r}")
    if not isinstance(task, str) or not task.split():
        raise Rejected("invalid_field", f"task must hold a non-white-space character, got {task!r}")
    if not items_ok:
        raise Rejected("invalid_field", "items must be a non-empty array of objects")
    parsed: list[ServeItem] = []
    seen: set[str] = set()
    for n, item in enumerate(items):
        doc_id, version, channel = item["doc_id"], item["doc_version"], item["channel"]
        if not _nonempty_str(doc_id):
            raise Rejected("invalid_field", f"items[{n}].doc_id must be a non-empty string")
        if not _nonempty_str(version):
            raise Rejected("invalid_field", f"items[{n}].doc_version must be a non-empty string")
        if channel not in CHANNELS:
            raise Rejected("invalid_field", f"items[{n}].channel must be ranked or always, got {channel!r}")
        rank = item.get("rank")
        if channel == "ranked" and not (_is_int(rank) and rank >= 1):
            raise Rejected("invalid_field", f"items[{n}].rank must be an integer >= 1, got {rank!r}")
        if doc_id in seen:
            raise Rejected("invalid_field", f"doc_id {doc_id!r} appears twice in one serve")
        seen.add(doc_id)
        score = item.get("score")
        parsed.append(
            ServeItem(
                doc_id,
                version,
                channel,
                rank if _is_int(rank) and abs(rank) <= _INT64_MAX else None,
                float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
                str(rank) if _is_int(rank) else None,
            )
        )
    session = rec.get("session_id")
    task_norm = normalise_task(task)
    return Serve(
        serve_id,
        ts,
        project,
        task,
        task_norm,
        query_id(project, task_norm),
        session if isinstance(session, str) else None,
        tuple(parsed),
    )


def _verdict(rec: dict) -> Verdict:
    missing = _missing(rec, ("serve_id", "doc_id", "verdict", "ts"))
    if missing:
        raise Rejected("missing_field", f"verdict lacks {', '.join(missing)}")
    serve_id, doc_id, verdict = rec["serve_id"], rec["doc_id"], rec["verdict"]
    if not _nonempty_str(serve_id):
        raise Rejected("invalid_field", f"serve_id must be a non-empty string, got {serve_id!r}")
    if not _nonempty_str(doc_id):
        raise Rejected("invalid_field", f"doc_id must be a non-empty string, got {doc_id!r}")
    if verdict not in VERDICTS:
        raise Rejected("invalid_field", f"verdict must be helped, noise or wrong, got {verdict!r}")
    try:
        ts = parse_ts(rec["ts"])
    except ValueError as exc:
        raise Rejected("invalid_field", str(exc)) from None
    return Verdict(serve_id, doc_id, verdict, ts)
