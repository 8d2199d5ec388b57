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
# orjson reads integers past 64 bits as floats, and the orjson this project pins
# overflows the C stack on very deep nesting: such lines go to the standard library.
_LONG_INT = re.compile(rb"[0-9]{20}")
_MAX_FAST_DEPTH = 256
# An escape of a UTF-16 surrogate (U+D800 to U+DFFF), the only way JSON text in UTF-8 can make one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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
    fast = False
    value = None
    if raw.count(b"[") + raw.count(b"{") <= _MAX_FAST_DEPTH and not _LONG_INT.search(raw):
        try:
            value = orjson.loads(raw)
            fast = True
        except orjson.JSONDecodeError:
            pass
    if fast and _count_keys(value) == len(_KEY_TOKEN.findall(raw)):
        return value
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StrictJSONError("not valid UTF-8") from exc
    try:
        return _parse_checked(text)
    except RecursionError:
        pass
    # Standard JSON may nest deeper than Python's recursion limit (about 1,000 levels): parse
    # it again on a thread with a stack and a limit sized for the line. RFC 8259 lets a
    # parser set a depth limit; past MAX_DEPTH brackets the line is refused as too deep.
    brackets = raw.count(b"[") + raw.count(b"{")
    if brackets > MAX_DEPTH:
        raise StrictJSONError(f"nested deeper than {MAX_DEPTH:,} levels")
    return _on_deep_stack(lambda: _parse_checked(text), brackets)


MAX_DEPTH = 1_000_000
_STACK_PER_LEVEL = 600  # bytes of C stack one nesting level of the json scanner may take


def _parse_checked(text: str):
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except StrictJSONError:
        raise
    except RecursionError:
        raise
    except ValueError as exc:
        raise StrictJSONError(str(exc)) from exc
    if _SURROGATE_ESCAPE.search(text) is None:
        # Valid UTF-8 text holds no surrogate, so only a \ud800-style escape can make one: without
        # one, skip the check below (it serialises the whole value again, some 40% of this parse).
        return value
    try:
        # A \ud800-style escape decodes to a lone surrogate, which no UTF-8 text can hold.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StrictJSONError("a string escape decodes to a lone surrogate, not valid UTF-8") from exc
    return value


def _on_deep_stack(fn, depth: int):
    """Run `fn` on a thread whose stack and recursion limit fit `depth` nesting levels."""
    import sys
    import threading

    result: dict = {}

    def run() -> None:
        try:
            result["value"] = fn()
        except BaseException as exc:  # handed back to the caller's thread below
            result["error"] = exc

    old_limit, old_stack = sys.getrecursionlimit(), threading.stack_size()
    sys.setrecursionlimit(max(old_limit, depth + 10_000))
    threading.stack_size(min(1 << 30, max(32 << 20, depth * _STACK_PER_LEVEL + (8 << 20))))
    try:
        worker = threading.Thread(target=run, name="goldenset-deep-json")
        worker.start()
    finally:
        threading.stack_size(old_stack)
    worker.join()
    sys.setrecursionlimit(old_limit)
    if "error" in result:
        err = result["error"]
        if isinstance(err, RecursionError):
            raise StrictJSONError("nested too deeply") from err
        raise err
    return result["value"]
