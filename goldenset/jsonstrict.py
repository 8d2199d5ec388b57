"""Strict JSON for log and corpus lines: RFC 8259 only, no NaN, no duplicate keys.

orjson is the fast path (it already refuses NaN, Infinity and invalid UTF-8) but
keeps the last of duplicate keys silently, so its result is trusted only when the
number of keys it returned equals the number of `"...":` key tokens in the raw
text; anything else is re-parsed by the standard library with hooks that reject
both. The count check is sound: a duplicate always makes the parsed count smaller
than the token count, and a string that merely contains `":` only makes it larger.
"""

from __future__ import annotations

import json
import re

import orjson

_KEY_TOKEN = re.compile(rb'"\s*:')


class StrictJSONError(ValueError):
    """The text is not strict JSON."""


def _count_keys(value) -> int:
    # Iterative, because a deeply nested line must not hit the recursion limit.
    n = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            n += len(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return n


def _reject_constant(name: str):
    raise StrictJSONError(f"non-standard constant {name}")


def _no_duplicates(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise StrictJSONError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def loads(raw: bytes):
    """Parse one line of UTF-8 bytes as strict JSON, raising StrictJSONError."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = None
        fast = False
    else:
        fast = True
    if fast and _count_keys(value) == len(_KEY_TOKEN.findall(raw)):
        return value
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StrictJSONError("not valid UTF-8") from exc
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except StrictJSONError:
        raise
    except (ValueError, RecursionError) as exc:
        raise StrictJSONError(str(exc)) from exc
