"""One log line in, a serve, a verdict or a reject reason out (contract section 1).

Every rule of the line table is pinned here, and so is the order of the reasons
("the first that applies": invalid_json, not_an_object, unknown_event,
missing_field, invalid_field).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import unicodedata
from datetime import datetime

import pytest

from goldenset.records import Rejected, Serve, Verdict, normalise_task, parse_line, parse_ts, query_id


def a_serve(**fields) -> dict:
    """A valid serve; keyword arguments replace fields (a value of ... removes the field)."""
    rec = {
        "event": "serve",
        "serve_id": "s-81f2",
        "ts": "2026-11-28T14:03:11Z",
        "project": "billing-api",
        "session_id": "sess-9",
        "task": "Add retries to the webhook sender",
        "items": [
            {"doc_id": "rule-17", "doc_version": "3", "channel": "always"},
            {"doc_id": "dec-204", "doc_version": "2", "channel": "ranked", "rank": 1, "score": 0.83},
        ],
    }
    rec.update(fields)
    return {k: v for k, v in rec.items() if v is not ...}


def a_verdict(**fields) -> dict:
    rec = {
        "event": "verdict",
        "serve_id": "s-81f2",
        "doc_id": "dec-204",
        "verdict": "helped",
        "ts": "2026-11-28T15:10:00+01:00",
    }
    rec.update(fields)
    return {k: v for k, v in rec.items() if v is not ...}


def ranked(*doc_id, **fields) -> dict:
    """A valid ranked item; keyword arguments replace fields (doc_id too)."""
    item = {"doc_id": doc_id[0] if doc_id else "d1", "doc_version": "v1", "channel": "ranked", "rank": 1}
    item.update(fields)
    return {k: v for k, v in item.items() if v is not ...}


def always(*doc_id, **fields) -> dict:
    item = {"doc_id": doc_id[0] if doc_id else "rule-1", "doc_version": "v1", "channel": "always"}
    item.update(fields)
    return {k: v for k, v in item.items() if v is not ...}


def line(rec) -> bytes:
    return json.dumps(rec, ensure_ascii=False).encode("utf-8")


def reason_of(raw: bytes) -> str:
    with pytest.raises(Rejected) as info:
        parse_line(raw)
    return info.value.reason


# --------------------------------------------------------------------------- valid lines


def test_a_valid_serve_parses_into_its_fields_and_items():
    s = parse_line(line(a_serve()))
    assert isinstance(s, Serve)
    assert (s.serve_id, s.project, s.task, s.session_id) == (
        "s-81f2",
        "billing-api",
        "Add retries to the webhook sender",
        "sess-9",
    )
    assert s.ts == datetime(2026, 11, 28, 14, 3, 11)
    assert [(i.doc_id, i.doc_version, i.channel, i.rank) for i in s.items] == [
        ("rule-17", "3", "always", None),
        ("dec-204", "2", "ranked", 1),
    ]
    assert s.task_norm == "add retries to the webhook sender"
    assert s.query_id == query_id("billing-api", "add retries to the webhook sender")


def test_a_valid_verdict_parses_with_its_ts_in_utc():
    v = parse_line(line(a_verdict()))
    assert isinstance(v, Verdict)
    assert (v.serve_id, v.doc_id, v.verdict) == ("s-81f2", "dec-204", "helped")
    assert v.ts == datetime(2026, 11, 28, 14, 10, 0)


@pytest.mark.parametrize("verdict", ["helped", "noise", "wrong"])
def test_each_of_the_three_verdicts_is_accepted(verdict):
    assert parse_line(line(a_verdict(verdict=verdict))).verdict == verdict


def test_strings_are_taken_verbatim_never_trimmed():
    s = parse_line(
        line(
            a_serve(
                serve_id=" s 1 ", project=" billing ", task="  Fix\tit  ", items=[ranked(" d1 ", doc_version=" v1 ")]
            )
        )
    )
    assert (s.serve_id, s.project, s.task) == (" s 1 ", " billing ", "  Fix\tit  ")
    assert (s.items[0].doc_id, s.items[0].doc_version) == (" d1 ", " v1 ")
    v = parse_line(line(a_verdict(serve_id=" s ", doc_id="d1 ")))
    assert (v.serve_id, v.doc_id) == (" s ", "d1 ")


@pytest.mark.parametrize("session_id", [None, 5, ["a"], {"x": 1}, ""])
def test_session_id_is_never_checked(session_id):
    assert isinstance(parse_line(line(a_serve(session_id=session_id))), Serve)


def test_unknown_fields_are_ignored_on_the_record_and_on_items():
    rec = a_serve(extra={"nested": [1, 2]}, items=[ranked("d1", why="because", rank=2)])
    assert isinstance(parse_line(line(rec)), Serve)
    assert isinstance(parse_line(line(a_verdict(comment=None, weight=3.5))), Verdict)


@pytest.mark.parametrize("score", ["high", None, True, [1], -3, 1e300])
def test_score_is_not_checked(score):
    assert parse_line(line(a_serve(items=[ranked("d1", score=score)]))).items[0].rank == 1


@pytest.mark.parametrize("rank", ["x", 0, 1.0, -2, True, None, ...])
def test_the_rank_of_an_always_item_is_not_checked(rank):
    s = parse_line(line(a_serve(items=[always("rule-1", rank=rank)])))
    assert s.items[0].channel == "always"


def test_an_optional_field_given_as_null_counts_as_absent():
    s = parse_line(line(a_serve(session_id=None)))
    assert s.session_id is None


def test_json_escapes_decode_to_the_same_strings():
    raw = (
        b'{"event":"verdict","serve_id":"s\\u002d1","doc_id":"d\\u00e9","verdict":"helped","ts":"2026-11-01T09:00:00Z"}'
    )
    v = parse_line(raw)
    assert (v.serve_id, v.doc_id) == ("s-1", "d\u00e9")


# --------------------------------------------------------------------------- invalid_json


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"not json", id="not-json"),
        pytest.param(b'{"event":"verdict"', id="truncated"),
        pytest.param(b"{'event':'verdict'}", id="single-quotes"),
        pytest.param(b'{"event":"verdict",}', id="trailing-comma"),
        pytest.param(b'{"event":"serve","score":NaN}', id="nan"),
        pytest.param(b'{"event":"serve","score":Infinity}', id="infinity"),
        pytest.param(b'{"event":"serve","score":-Infinity}', id="minus-infinity"),
        pytest.param(b'{"event":"verdict","event":"verdict"}', id="duplicate-top-level-key"),
        pytest.param(b'{"event":"serve","items":[{"doc_id":"a","doc_id":"b"}]}', id="duplicate-nested-key"),
        pytest.param(b'{"event":"verdict","doc_id":"caf\xe9"}', id="latin-1-byte"),
        pytest.param(b'{"event":"verdict","doc_id":"\xed\xa0\x80"}', id="utf-8-encoded-surrogate"),
        pytest.param(b'{"event":"verdict","doc_id":"\xc0\xaf"}', id="overlong-utf-8"),
        pytest.param(b'{"a":1} {"b":2}', id="two-values"),
        pytest.param(b"\xef\xbb\xbf{}", id="bom-inside-the-file"),
    ],
)
def test_a_line_that_is_not_strict_json_is_invalid_json(raw):
    assert reason_of(raw) == "invalid_json"


def test_duplicate_keys_are_found_even_when_a_string_holds_a_key_like_token():
    # A value containing `":` must not hide a duplicated key from the check.
    rec = line(a_verdict(note='x":'))[:-1] + b',"doc_id":"other"}'
    assert reason_of(rec) == "invalid_json"


def test_a_string_holding_a_key_like_token_without_duplicates_is_valid():
    v = parse_line(line(a_verdict(note='a": "b": "c":')))
    assert v.doc_id == "dec-204"


def test_a_nested_unknown_field_does_not_hide_a_valid_verdict():
    raw = line(a_verdict())[:-1] + b',"x":' + b"[" * 500 + b"]" * 500 + b"}"
    assert isinstance(parse_line(raw), Verdict)


def test_a_very_deeply_nested_line_is_parsed_or_rejected_without_killing_the_process():
    # Run in a child process: the failure mode is a segfault, which would take pytest down.
    depth = 300_000
    code = (
        "import sys\n"
        "from goldenset.records import Rejected, parse_line\n"
        f"raw = b'{{\"event\":\"verdict\",\"x\":' + b'[' * {depth} + b']' * {depth} + b'}}'\n"
        "try:\n"
        "    print(type(parse_line(raw)).__name__)\n"
        "except Rejected as exc:\n"
        "    print(exc.reason)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
    # Valid JSON of any depth lacks the verdict's fields; a depth cap would call it invalid_json.
    assert done.stdout.strip() in ("missing_field", "invalid_json")


def test_a_lone_surrogate_escape_in_a_serve_is_rejected_as_invalid_json():
    # "\ud800" decodes to a lone surrogate, which no UTF-8 text can hold.
    raw = line(a_serve()).replace(b'"Add retries', b'"\\ud800Add retries')
    assert reason_of(raw) == "invalid_json"


def test_a_lone_surrogate_escape_in_a_verdict_is_rejected_as_invalid_json():
    raw = line(a_verdict()).replace(b'"dec-204"', b'"dec\\udc00"')
    assert reason_of(raw) == "invalid_json"


def test_an_escaped_surrogate_pair_is_one_valid_character():
    raw = line(a_verdict()).replace(b'"dec-204"', b'"dec\\ud83d\\ude00"')
    assert parse_line(raw).doc_id == "dec\U0001f600"


# --------------------------------------------------------------------------- not_an_object


@pytest.mark.parametrize("raw", [b"[]", b'[{"event":"verdict"}]', b'"serve"', b"42", b"null", b"true"])
def test_a_top_level_value_other_than_an_object_is_not_an_object(raw):
    assert reason_of(raw) == "not_an_object"


def test_a_valid_serve_wrapped_in_an_array_is_not_an_object():
    assert reason_of(b"[" + line(a_serve()) + b"]") == "not_an_object"


# --------------------------------------------------------------------------- unknown_event


@pytest.mark.parametrize("event", [..., None, "Serve", "VERDICT", "click", "", 1, ["serve"]])
def test_a_missing_or_unknown_event_is_unknown_event(event):
    assert reason_of(line(a_serve(event=event))) == "unknown_event"


# --------------------------------------------------------------------------- missing_field


@pytest.mark.parametrize("field", ["serve_id", "ts", "project", "task", "items"])
@pytest.mark.parametrize("how", ["absent", "null"])
def test_a_serve_without_a_required_field_is_missing_field(field, how):
    rec = a_serve(**{field: ... if how == "absent" else None})
    assert reason_of(line(rec)) == "missing_field"


@pytest.mark.parametrize("field", ["serve_id", "doc_id", "verdict", "ts"])
@pytest.mark.parametrize("how", ["absent", "null"])
def test_a_verdict_without_a_required_field_is_missing_field(field, how):
    rec = a_verdict(**{field: ... if how == "absent" else None})
    assert reason_of(line(rec)) == "missing_field"


@pytest.mark.parametrize("field", ["doc_id", "doc_version", "channel"])
@pytest.mark.parametrize("how", ["absent", "null"])
def test_an_item_without_a_required_field_is_missing_field(field, how):
    rec = a_serve(items=[ranked("d1"), ranked("d2", **{field: ... if how == "absent" else None})])
    assert reason_of(line(rec)) == "missing_field"


@pytest.mark.parametrize("how", ["absent", "null"])
def test_a_ranked_item_without_a_rank_is_missing_field(how):
    rec = a_serve(items=[ranked("d1", rank=... if how == "absent" else None)])
    assert reason_of(line(rec)) == "missing_field"


def test_a_missing_field_is_reported_before_an_invalid_one():
    # serve_id and ts are invalid, but task is missing: missing_field comes first.
    rec = a_serve(serve_id="", ts="yesterday", task=...)
    assert reason_of(line(rec)) == "missing_field"


def test_a_missing_item_field_is_reported_before_an_invalid_serve_field():
    rec = a_serve(serve_id=5, ts="2026-11-28T14:03:11", items=[ranked("d1", rank=...)])
    assert reason_of(line(rec)) == "missing_field"


def test_a_missing_field_of_a_later_item_beats_an_invalid_field_of_an_earlier_item():
    rec = a_serve(items=[ranked("d1", rank=0), ranked("d2", doc_version=...)])
    assert reason_of(line(rec)) == "missing_field"


def test_an_unknown_event_is_reported_before_missing_fields():
    assert reason_of(b'{"event":"click"}') == "unknown_event"


def test_not_an_object_is_reported_before_an_unknown_event():
    assert reason_of(b'[{"event":"click"}]') == "not_an_object"


def test_invalid_json_is_reported_before_every_other_reason():
    assert reason_of(b"[NaN]") == "invalid_json"
    assert reason_of(b'{"event":"click","event":"click"}') == "invalid_json"
    assert reason_of(b'{"event":"serve","serve_id":NaN}') == "invalid_json"


# --------------------------------------------------------------------------- invalid_field: serve


@pytest.mark.parametrize("value", ["", 5, ["s1"], {"id": "s1"}, True])
def test_a_serve_id_that_is_not_a_non_empty_string_is_invalid_field(value):
    assert reason_of(line(a_serve(serve_id=value))) == "invalid_field"


@pytest.mark.parametrize("value", ["", 5, ["billing"]])
def test_a_project_that_is_not_a_non_empty_string_is_invalid_field(value):
    assert reason_of(line(a_serve(project=value))) == "invalid_field"


@pytest.mark.parametrize(
    "task",
    ["", " ", "\t\n\r", "\u3000", "\u00a0", "\u2003\u2028", " \u3000 \u00a0 ", 5, ["fix"], {"t": "x"}],
    ids=[
        "empty",
        "space",
        "ascii-ws",
        "ideographic-space",
        "nbsp",
        "em-space-line-sep",
        "mixed",
        "int",
        "list",
        "object",
    ],
)
def test_a_task_without_a_non_white_space_character_is_invalid_field(task):
    assert reason_of(line(a_serve(task=task))) == "invalid_field"


@pytest.mark.parametrize("task", ["x", " x ", "\u3000x", "\u200b"], ids=["x", "padded", "ideographic", "zwsp"])
def test_a_task_with_one_non_white_space_character_is_valid(task):
    # U+200B (zero width space) is not white space for Python's str.split().
    assert parse_line(line(a_serve(task=task))).task == task


@pytest.mark.parametrize(
    "items",
    [[], "d1", {"doc_id": "d1"}, [1], ["d1"], [None], [ranked("d1"), [always()]], 3],
    ids=["empty", "string", "object", "int-item", "string-item", "null-item", "nested-list", "int"],
)
def test_items_that_are_not_a_non_empty_array_of_objects_are_invalid_field(items):
    assert reason_of(line(a_serve(items=items))) == "invalid_field"


@pytest.mark.parametrize("field", ["doc_id", "doc_version"])
@pytest.mark.parametrize("value", ["", 3, ["x"]])
def test_an_item_doc_id_or_version_that_is_not_a_non_empty_string_is_invalid_field(field, value):
    assert reason_of(line(a_serve(items=[ranked("d0"), ranked("d1", **{field: value})]))) == "invalid_field"


@pytest.mark.parametrize("channel", ["Ranked", "ALWAYS", "other", "", 1, ["ranked"]])
def test_a_channel_other_than_ranked_or_always_is_invalid_field(channel):
    assert reason_of(line(a_serve(items=[ranked("d1", channel=channel)]))) == "invalid_field"


@pytest.mark.parametrize(
    "rank_literal",
    [b"1.0", b'"1"', b"true", b"false", b"0", b"-1", b"1e0", b"1E2", b"0.5", b"[1]", b"{}", b"-0"],
)
def test_a_ranked_item_whose_rank_is_not_an_integer_literal_of_at_least_1_is_invalid_field(rank_literal):
    raw = line(a_serve(items=[ranked("d1", rank=777)])).replace(b"777", rank_literal)
    assert reason_of(raw) == "invalid_field"


@pytest.mark.parametrize("rank", [1, 2, 10, 2**31, 2**63 - 1])
def test_a_ranked_item_with_an_integer_rank_of_at_least_1_is_valid(rank):
    assert parse_line(line(a_serve(items=[ranked("d1", rank=rank)]))).items[0].rank == rank


def test_a_rank_beyond_64_bits_is_still_an_integer_literal():
    raw = line(a_serve(items=[ranked("d1", rank=777)])).replace(b"777", b"18446744073709551616")
    assert isinstance(parse_line(raw), Serve)


def test_a_doc_id_served_twice_in_one_serve_is_invalid_field():
    rec = a_serve(items=[ranked("d1", rank=1), always("d1")])
    assert reason_of(line(rec)) == "invalid_field"


def test_doc_ids_differing_only_in_case_are_distinct_in_one_serve():
    s = parse_line(line(a_serve(items=[ranked("d1", rank=1), ranked("D1", rank=2)])))
    assert [i.doc_id for i in s.items] == ["d1", "D1"]


# --------------------------------------------------------------------------- invalid_field: verdict


@pytest.mark.parametrize("field", ["serve_id", "doc_id"])
@pytest.mark.parametrize("value", ["", 5, ["x"]])
def test_a_verdict_serve_id_or_doc_id_that_is_not_a_non_empty_string_is_invalid_field(field, value):
    assert reason_of(line(a_verdict(**{field: value}))) == "invalid_field"


@pytest.mark.parametrize("value", ["Helped", "HELPED", "good", "", " helped", 1, True])
def test_a_verdict_other_than_helped_noise_or_wrong_is_invalid_field(value):
    assert reason_of(line(a_verdict(verdict=value))) == "invalid_field"


# --------------------------------------------------------------------------- ts


@pytest.mark.parametrize(
    "ts, utc",
    [
        ("2026-11-28T14:03:11Z", datetime(2026, 11, 28, 14, 3, 11)),
        ("2026-11-28T15:03:11+01:00", datetime(2026, 11, 28, 14, 3, 11)),
        ("2026-11-28T13:03:11-01:00", datetime(2026, 11, 28, 14, 3, 11)),
        ("2026-11-28T14:03:11+00:00", datetime(2026, 11, 28, 14, 3, 11)),
        ("2026-11-28T14:03:11-00:00", datetime(2026, 11, 28, 14, 3, 11)),
        ("2026-11-28T19:33:11+05:30", datetime(2026, 11, 28, 14, 3, 11)),
        ("2026-11-01T00:30:00+01:00", datetime(2026, 10, 31, 23, 30)),
        ("2026-12-31T23:30:00-01:00", datetime(2027, 1, 1, 0, 30)),
        ("2028-02-29T12:00:00Z", datetime(2028, 2, 29, 12)),
        ("2026-11-28T14:03:11.5Z", datetime(2026, 11, 28, 14, 3, 11, 500000)),
        ("2026-11-28T14:03:11.123456Z", datetime(2026, 11, 28, 14, 3, 11, 123456)),
        ("2026-11-28T14:03:11.1234567Z", datetime(2026, 11, 28, 14, 3, 11, 123456)),
        ("2026-11-28T14:03:11.9999999999Z", datetime(2026, 11, 28, 14, 3, 11, 999999)),
        ("2026-11-28T14:03:11.000000Z", datetime(2026, 11, 28, 14, 3, 11)),
        ("2026-11-28T23:59:59.999999+00:00", datetime(2026, 11, 28, 23, 59, 59, 999999)),
    ],
)
def test_a_contract_ts_is_stored_as_its_utc_instant(ts, utc):
    assert parse_ts(ts) == utc
    assert parse_line(line(a_verdict(ts=ts))).ts == utc
    assert parse_line(line(a_serve(ts=ts))).ts == utc


def test_fractions_beyond_microseconds_are_truncated_not_rounded():
    assert parse_ts("2026-11-28T14:03:11.9999995Z").second == 11


def test_an_offset_and_z_naming_the_same_instant_are_equal():
    assert parse_ts("2026-11-28T15:10:00+01:00") == parse_ts("2026-11-28T14:10:00Z")
    assert parse_ts("2026-11-28T08:30:00-01:00") == parse_ts("2026-11-28T09:30:00Z")


@pytest.mark.parametrize(
    "ts",
    [
        pytest.param("2026-11-28T14:03:11", id="no-offset"),
        pytest.param("2026-11-28T14:03:11z", id="lowercase-z"),
        pytest.param("2026-11-28t14:03:11Z", id="lowercase-t"),
        pytest.param("2026-11-28 14:03:11Z", id="space-separator"),
        pytest.param("2026-11-28T14:03Z", id="no-seconds"),
        pytest.param("2026-11-28T14:03:11+0100", id="offset-without-colon"),
        pytest.param("2026-11-28T14:03:11+01", id="offset-hours-only"),
        pytest.param("2026-11-28T14:03:11.Z", id="dot-without-digits"),
        pytest.param("2026-11-28T14:03:11,5Z", id="comma-fraction"),
        pytest.param("2026-11-28T14:03:11Z ", id="trailing-space"),
        pytest.param(" 2026-11-28T14:03:11Z", id="leading-space"),
        pytest.param("2026-11-28T14:03:11Z\n", id="trailing-newline"),
        pytest.param("2026-11-28T14:03:11ZZ", id="double-z"),
        pytest.param("2026-11-28T14:03:11+01:00Z", id="offset-and-z"),
        pytest.param("2026-11-28T24:00:00Z", id="hour-24"),
        pytest.param("2026-11-28T23:60:00Z", id="minute-60"),
        pytest.param("2026-11-28T23:59:60Z", id="leap-second"),
        pytest.param("2026-02-30T12:00:00Z", id="feb-30"),
        pytest.param("2027-02-29T12:00:00Z", id="feb-29-non-leap"),
        pytest.param("2026-13-01T12:00:00Z", id="month-13"),
        pytest.param("2026-00-10T12:00:00Z", id="month-0"),
        pytest.param("2026-11-00T12:00:00Z", id="day-0"),
        pytest.param("0000-01-01T00:00:00Z", id="year-0"),
        pytest.param("2026-11-28T14:03:11+24:00", id="offset-hour-24"),
        pytest.param("2026-11-28T14:03:11+01:60", id="offset-minute-60"),
        pytest.param("9999-12-31T23:30:00-01:00", id="past-year-9999-in-utc"),
        pytest.param("0001-01-01T00:30:00+01:00", id="before-year-1-in-utc"),
        pytest.param("\u0662\u0660\u0662\u0666-11-28T14:03:11Z", id="arabic-indic-digits"),
        pytest.param("２０２６-11-28T14:03:11Z", id="fullwidth-digits"),
        pytest.param("2026-11-28T14:03:1\u0661Z", id="one-non-ascii-digit"),
        pytest.param("26-11-28T14:03:11Z", id="two-digit-year"),
        pytest.param("2026-11-28", id="date-only"),
        pytest.param("", id="empty"),
    ],
)
def test_a_ts_that_is_not_a_contract_timestamp_is_invalid_field(ts):
    assert reason_of(line(a_verdict(ts=ts))) == "invalid_field"
    assert reason_of(line(a_serve(ts=ts))) == "invalid_field"


@pytest.mark.parametrize("ts", [1764338591, 1764338591.5, ["2026-11-28T14:03:11Z"], True])
def test_a_ts_that_is_not_a_string_is_invalid_field(ts):
    assert reason_of(line(a_verdict(ts=ts))) == "invalid_field"


@pytest.mark.parametrize("ts", ["2026-11-28T14:03:11", "2026-13-01T00:00:00Z", 5])
def test_parse_ts_raises_value_error_for_a_bad_ts(ts):
    with pytest.raises(ValueError):
        parse_ts(ts)


# --------------------------------------------------------------------------- normalise_task, query_id


@pytest.mark.parametrize(
    "task, norm",
    [
        ("Fix the refund  window", "fix the refund window"),
        ("fix the REFUND window", "fix the refund window"),
        ("  fix\tthe\nrefund\r\nwindow  ", "fix the refund window"),
        ("fix\u00a0the\u3000refund\u2003window", "fix the refund window"),
        ("Ｆｕｌｌ-width query", "full-width query"),
        ("Straße", "strasse"),
        ("STRASSE", "strasse"),
        ("ﬁle", "file"),  # the ligature U+FB01 splits into two letters under NFKC
        ("Ⅻ", "xii"),  # a Roman numeral becomes letters under NFKC
        ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),  # casefold folds final sigma too
        ("e\u0301", "\u00e9"),  # NFKC composes
        ("x\u200by", "x\u200by"),  # a zero width space is not white space
        ("a\x1cb", "a b"),  # Python's str.split() treats U+001C as white space
    ],
)
def test_normalise_task_is_nfkc_then_casefold_then_collapsed_white_space(task, norm):
    assert normalise_task(task) == norm


def test_strasse_and_its_capitals_normalise_to_the_same_query():
    assert normalise_task("Straße") == normalise_task("STRASSE") == normalise_task("strasse")


@pytest.mark.parametrize(
    "task, norm",
    [
        ("\u1d2c\u1d2e", "ab"),  # modifier capitals: NFKC makes them "AB", casefold then "ab"
        ("\u03f9", "\u03c3"),  # capital lunate sigma: NFKC "Σ", casefold "σ" (casefold first gives "ς")
        ("x\u037ay", "x \u03b9y"),  # ypogegrammeni: NFKC " \u0345", casefold " ι", then split
    ],
)
def test_nfkc_comes_before_casefold(task, norm):
    # Each input normalises differently when casefold runs first.
    assert normalise_task(task) == norm
    assert " ".join(unicodedata.normalize("NFKC", task.casefold()).split()) != norm


def _reference_query_id(project: str, task: str) -> str:
    norm = " ".join(unicodedata.normalize("NFKC", task).casefold().split())
    return hashlib.sha256((project + "\x1f" + norm).encode("utf-8")).hexdigest()[:16]


def test_query_id_of_the_conformance_query():
    assert query_id("billing", "fix the refund window") == "07c6b23f1023f387"
    assert query_id("billing", normalise_task("Fix the refund  window")) == "07c6b23f1023f387"


@pytest.mark.parametrize(
    "project, task",
    [
        ("billing", "Fix the refund window"),
        ("search", "Ｆｕｌｌ-width query"),
        ("Billing", "x"),
        ("p\u00e9", "Straße"),
        ("", ""),
    ],
)
def test_query_id_is_the_first_16_hex_of_sha256_of_project_and_normalised_task(project, task):
    qid = query_id(project, normalise_task(task))
    assert qid == _reference_query_id(project, task)
    assert len(qid) == 16 and qid == qid.lower()


def test_query_id_separates_project_from_task_with_a_unit_separator():
    # "ab" + "c" and "a" + "bc" must not collide.
    assert query_id("ab", "c") != query_id("a", "bc")


def test_query_id_depends_on_the_project_case():
    assert query_id("billing", "x") != query_id("Billing", "x")


def test_a_serve_carries_the_query_id_of_its_normalised_task():
    s = parse_line(line(a_serve(project="billing", task="Fix the refund  window")))
    assert s.task_norm == "fix the refund window"
    assert s.query_id == "07c6b23f1023f387"


def test_a_missing_item_field_outranks_a_non_object_item():
    line = (
        b'{"event":"serve","serve_id":"s","ts":"2026-11-01T09:00:00Z","project":"p","task":"t",'
        b'"items":[5,{"doc_id":"d1","channel":"ranked","rank":1}]}'
    )
    with pytest.raises(Rejected) as exc:
        parse_line(line)
    assert exc.value.reason == "missing_field"


def test_a_gzip_checksum_error_keeps_every_line_before_it(tmp_path):
    import gzip

    from goldenset.logfiles import LogFile, read_file

    text = b"".join(b'{"n": %d}\n' % i for i in range(80))
    raw = bytearray(gzip.compress(text))
    raw[-6] ^= 0xFF  # the CRC-32 in the trailer
    folder = tmp_path / "dt=2026-11-01"
    folder.mkdir()
    (folder / "p.jsonl.gz").write_bytes(bytes(raw))
    content = read_file(LogFile(folder / "p.jsonl.gz", "2026-11-01", "p.jsonl.gz"))
    assert content.lines_read == 80 and content.fault_line == 81
    assert "corrupt" in content.fault
