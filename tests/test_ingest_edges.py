"""Serve-log ingestion at its edges (contract section 1, seen through sections 3-4).

Files in, public tables out: each test writes a small LOGS tree, ingests it,
builds, and reads `golden_set`, `golden_builds`, `filter_funnel` and
`rejected_records`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from datetime import datetime
from pathlib import Path

import pytest

from goldenset.build import build_golden_set
from goldenset.checks import BuildChecks
from goldenset.errors import BuildBlocked
from goldenset.ingest import ingest_all
from goldenset.status import partition_stats
from goldenset.warehouse import connect
from tests.helpers import (
    always,
    doc,
    publish,
    ranked,
    rows,
    serve,
    split_whitespace,
    verdict,
    write_log,
)

DAY1, DAY2, DAY3 = "2026-11-01", "2026-11-02", "2026-11-03"
DOCS = [doc(f"d{i}") for i in range(1, 10)] + [doc("rule-1")]


def ts(hour: int, minute: int = 0, day: int = 1, offset: str = "Z") -> str:
    return f"2026-11-{day:02d}T{hour:02d}:{minute:02d}:00{offset}"


def text(rec) -> str:
    return rec if isinstance(rec, str) else json.dumps(rec, ensure_ascii=False)


def write_bytes(root: Path, dt: str, name: str, data: bytes) -> Path:
    folder = root / f"dt={dt}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return folder / name


def jsonl(records, newline: str = "\n") -> bytes:
    return "".join(text(r) + newline for r in records).encode("utf-8")


def golden(con):
    return rows(con, "SELECT serve_id, doc_id, verdict FROM golden_set ORDER BY serve_id, doc_id")


def rejected(con):
    return rows(con, "SELECT source_file, line, reason FROM rejected_records ORDER BY source_file, line")


def build_counts(con, *cols):
    sql = "SELECT " + ", ".join(cols) + " FROM golden_builds ORDER BY build_id DESC LIMIT 1"
    return rows(con, sql)[0]


def judged(con):
    """judgments_left of the funnel's first step in the latest build."""
    return rows(
        con,
        "SELECT judgments_left FROM filter_funnel WHERE step = 'judged' "
        "AND build_id = (SELECT max(build_id) FROM golden_builds)",
    )[0][0]


def bump_mtime(path: Path) -> None:
    # Rewrites in a test can land within one mtime tick; move it so the change is seen
    # the way a later write would be.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


S1 = serve("s1", ts(9), "Fix the refund window", [ranked("d1", 1), ranked("d2", 2)])
V1 = verdict("s1", "d1", "helped", ts(9, 5))
V2 = verdict("s1", "d2", "noise", ts(9, 6))


# --------------------------------------------------------------------------- lines


def test_a_bom_at_the_start_of_a_file_is_dropped(warehouse, log_root, tmp_path):
    write_bytes(log_root, DAY1, "part-0001.jsonl", b"\xef\xbb\xbf" + jsonl([S1, V1, V2]))
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == []
    assert golden(warehouse) == [("s1", "d1", "helped"), ("s1", "d2", "noise")]


def test_a_bom_at_the_start_of_a_gzip_file_is_dropped(warehouse, log_root, tmp_path):
    write_bytes(log_root, DAY1, "part-0001.jsonl.gz", gzip.compress(b"\xef\xbb\xbf" + jsonl([S1, V1])))
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == []
    assert golden(warehouse) == [("s1", "d1", "helped")]


def test_a_bom_at_the_start_of_a_later_line_is_invalid_json(warehouse, log_root):
    write_bytes(log_root, DAY1, "part-0001.jsonl", jsonl([S1]) + b"\xef\xbb\xbf" + jsonl([V1]))
    ingest_all(warehouse, log_root)
    assert rejected(warehouse) == [(f"dt={DAY1}/part-0001.jsonl", 2, "invalid_json")]


def test_crlf_line_endings_are_read_like_lf(warehouse, log_root, tmp_path):
    write_bytes(log_root, DAY1, "part-0001.jsonl", jsonl([S1, V1, "oops", V2], newline="\r\n"))
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == [("s1", "d1", "helped"), ("s1", "d2", "noise")]
    assert rows(warehouse, "SELECT line, reason, raw FROM rejected_records") == [(3, "invalid_json", "oops")]


def test_only_one_trailing_carriage_return_is_dropped(warehouse, log_root):
    # "\r\r\n": one \r belongs to the line ending, the other is JSON white space.
    write_bytes(log_root, DAY1, "part-0001.jsonl", jsonl([S1, "x\r"], newline="\r\n"))
    ingest_all(warehouse, log_root)
    assert rows(warehouse, "SELECT line, raw FROM rejected_records") == [(2, "x\r")]


BLANKS = ["", " ", "   ", "\t", "\r", " \t \r", "\u3000", "\u00a0 "]


def test_blank_lines_are_skipped_not_rejected_but_keep_their_numbers(warehouse, log_root, tmp_path):
    # Every kind of blank line, then a bad line whose number counts them all.
    write_log(log_root, DAY1, "part-0001.jsonl", [S1, *BLANKS, "bad", *BLANKS, V1, *BLANKS])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == [(f"dt={DAY1}/part-0001.jsonl", len(BLANKS) + 2, "invalid_json")]
    assert golden(warehouse) == [("s1", "d1", "helped")]


def test_only_a_newline_ends_a_line(warehouse, log_root, tmp_path):
    # U+2028, U+0085 and a lone \r end lines for str.splitlines(), not for the contract.
    odd = text(S1).replace("Fix the", "Fix\u2028the\u0085").replace(', "ts"', ',\r"ts"')
    write_bytes(log_root, DAY1, "part-0001.jsonl", (odd + "\n" + text(V1) + "\nbad\n").encode("utf-8"))
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == [(f"dt={DAY1}/part-0001.jsonl", 3, "invalid_json")]
    # The serve keeps its text as logged; the set shows its display form, where both are white space.
    assert rows(warehouse, "SELECT task FROM query_variants") == [("Fix\u2028the\u0085 refund window",)]
    assert rows(warehouse, "SELECT task FROM golden_set") == [("Fix the refund window",)]


def test_a_verdict_whose_ids_are_written_with_escapes_joins_its_serve(warehouse, log_root, tmp_path):
    escaped = text(V1).replace('"s1"', '"\\u0073\\u0031"').replace('"d1"', '"d\\u0031"')
    write_log(log_root, DAY1, "part-0001.jsonl", [S1, escaped])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == [("s1", "d1", "helped")]


def test_the_last_line_without_a_newline_is_read(warehouse, log_root, tmp_path):
    write_bytes(log_root, DAY1, "part-0001.jsonl", jsonl([S1]) + text(V1).encode())
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == [("s1", "d1", "helped")]


def test_a_line_of_invalid_utf8_is_rejected_and_the_rest_of_the_file_read(warehouse, log_root, tmp_path):
    write_bytes(log_root, DAY1, "part-0001.jsonl", jsonl([S1]) + b'{"event":"caf\xe9"}\n' + jsonl([V1]))
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == [(f"dt={DAY1}/part-0001.jsonl", 2, "invalid_json")]
    assert golden(warehouse) == [("s1", "d1", "helped")]


def test_a_rejected_line_keeps_its_source_file_line_reason_and_raw_text(warehouse, log_root):
    bad = '{"event":"verdict","serve_id":"s1","doc_id":"d1","verdict":"great","ts":"2026-11-01T09:00:00Z"}'
    write_log(log_root, DAY2, "part-0007.jsonl", [S1, "[1, 2]", bad, '{"event":"click"}', '{"event":"serve"}'])
    ingest_all(warehouse, log_root)
    src = f"dt={DAY2}/part-0007.jsonl"
    assert rows(warehouse, "SELECT source_file, line, reason, raw FROM rejected_records ORDER BY line") == [
        (src, 2, "not_an_object", "[1, 2]"),
        (src, 3, "invalid_field", bad),
        (src, 4, "unknown_event", '{"event":"click"}'),
        (src, 5, "missing_field", '{"event":"serve"}'),
    ]


def test_a_line_with_a_lone_surrogate_escape_is_quarantined_and_the_file_read_on(warehouse, log_root, tmp_path):
    bad = text(S1).replace("Fix the refund window", "Fix \\ud800")
    write_log(log_root, DAY1, "part-0001.jsonl", [bad, S1, V1])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == [(f"dt={DAY1}/part-0001.jsonl", 1, "invalid_json")]
    assert golden(warehouse) == [("s1", "d1", "helped")]


# --------------------------------------------------------------------------- line rules, end to end
# The rules of contract section 1 once more, through ingestion rather than parse_line:
# every line below goes into one file, and each must come out with its reason (None:
# accepted). Serve ids are numbered per line so that no two cases conflict.


def _verdict_line(**fields) -> str:
    rec = {"event": "verdict", "serve_id": "s-x", "doc_id": "d1", "verdict": "helped", "ts": "2026-11-01T09:00:00Z"}
    rec.update(fields)
    return json.dumps({k: v for k, v in rec.items() if v is not ...}, ensure_ascii=False)


def _serve_line(**fields) -> str:
    rec = {
        "event": "serve",
        "serve_id": "SID",
        "ts": "2026-11-01T09:00:00Z",
        "project": "billing",
        "task": "Fix it",
        "items": [{"doc_id": "d1", "doc_version": "v1", "channel": "ranked", "rank": 1, "score": 0.5}],
    }
    rec.update(fields)
    return json.dumps({k: v for k, v in rec.items() if v is not ...}, ensure_ascii=False)


def _item(**fields) -> list[dict]:
    item = {"doc_id": "d1", "doc_version": "v1", "channel": "ranked", "rank": 1}
    item.update(fields)
    return [{k: v for k, v in item.items() if v is not ...}]


RANK_777 = _serve_line(items=_item(rank=777))
ALWAYS_777 = _serve_line(items=_item(channel="always", rank=777))
LINE_RULES = [
    ("valid-verdict", _verdict_line(), None),
    ("valid-serve", _serve_line(), None),
    ("wrong-verdict", _verdict_line(verdict="wrong"), None),
    ("not-json", "not json", "invalid_json"),
    ("nan", _verdict_line()[:-1] + ', "x": NaN}', "invalid_json"),
    ("infinity", _verdict_line()[:-1] + ', "x": Infinity}', "invalid_json"),
    ("minus-infinity", _verdict_line()[:-1] + ', "x": [-Infinity]}', "invalid_json"),
    ("nan-score", _serve_line().replace("0.5", "NaN"), "invalid_json"),
    ("duplicate-key", _verdict_line()[:-1] + ', "doc_id": "d2"}', "invalid_json"),
    ("duplicate-key-same-value", _verdict_line()[:-1] + ', "verdict": "helped"}', "invalid_json"),
    ("duplicate-item-key", _serve_line().replace('"rank": 1', '"rank": 1, "rank": 1'), "invalid_json"),
    ("duplicate-key-behind-key-token", _verdict_line(note='x": 1')[:-1] + ', "doc_id": "d2"}', "invalid_json"),
    ("trailing-comma", _verdict_line()[:-1] + ",}", "invalid_json"),
    ("trailing-comma-in-items", _serve_line().replace("0.5}]", "0.5},]"), "invalid_json"),
    ("single-quotes", _verdict_line().replace('"', "'"), "invalid_json"),
    ("lone-surrogate", _serve_line(task="Fix \\ud800").replace("\\\\ud800", "\\ud800"), "invalid_json"),
    ("lone-surrogate-verdict", _verdict_line(doc_id="d\\udc00").replace("\\\\udc00", "\\udc00"), "invalid_json"),
    ("surrogate-pair", _verdict_line(doc_id="d\\ud83d\\ude00").replace("\\\\u", "\\u"), None),
    ("array", "[" + _verdict_line() + "]", "not_an_object"),
    ("string", '"serve"', "not_an_object"),
    ("number", "42", "not_an_object"),
    ("no-event", _verdict_line(event=...), "unknown_event"),
    ("null-event", _verdict_line(event=None), "unknown_event"),
    ("capital-event", _serve_line(event="Serve"), "unknown_event"),
    ("serve-without-task", _serve_line(task=...), "missing_field"),
    ("serve-null-items", _serve_line(items=None), "missing_field"),
    ("serve-null-project", _serve_line(project=None), "missing_field"),
    ("verdict-null-ts", _verdict_line(ts=None), "missing_field"),
    ("verdict-without-doc-id", _verdict_line(doc_id=...), "missing_field"),
    ("verdict-without-verdict", _verdict_line(verdict=...), "missing_field"),
    ("ranked-without-rank", _serve_line(items=_item(rank=...)), "missing_field"),
    ("ranked-null-rank", _serve_line(items=_item(rank=None)), "missing_field"),
    ("item-null-channel", _serve_line(items=_item(channel=None)), "missing_field"),
    ("item-without-version", _serve_line(items=_item(doc_version=...)), "missing_field"),
    ("missing-beats-invalid", _serve_line(serve_id="", ts="now", task=...), "missing_field"),
    ("missing-item-field-beats-invalid-serve-field", _serve_line(serve_id=5, items=_item(rank=...)), "missing_field"),
    ("rank-1.0", RANK_777.replace("777", "1.0"), "invalid_field"),
    ("rank-string", RANK_777.replace("777", '"1"'), "invalid_field"),
    ("rank-true", RANK_777.replace("777", "true"), "invalid_field"),
    ("rank-0", RANK_777.replace("777", "0"), "invalid_field"),
    ("rank-minus-1", RANK_777.replace("777", "-1"), "invalid_field"),
    ("rank-1e0", RANK_777.replace("777", "1e0"), "invalid_field"),
    ("rank-2", RANK_777.replace("777", "2"), None),
    ("rank-2-to-the-63", RANK_777.replace("777", str(2**63)), None),
    ("rank-2-to-the-64", RANK_777.replace("777", str(2**64)), None),
    ("always-rank-0", ALWAYS_777.replace("777", "0"), None),
    ("always-rank-string", ALWAYS_777.replace("777", '"x"'), None),
    ("always-rank-float", ALWAYS_777.replace("777", "1.5"), None),
    ("score-string", _serve_line().replace("0.5", '"high"'), None),
    ("duplicate-doc-id", _serve_line(items=_item() + _item(channel="always")), "invalid_field"),
    ("empty-items", _serve_line(items=[]), "invalid_field"),
    ("items-object", _serve_line(items={"doc_id": "d1"}), "invalid_field"),
    ("item-not-object", _serve_line(items=["d1"]), "invalid_field"),
    ("empty-task", _serve_line(task=""), "invalid_field"),
    ("blank-task", _serve_line(task=" \t "), "invalid_field"),
    ("ideographic-space-task", _serve_line(task="\u3000"), "invalid_field"),
    ("nbsp-task", _serve_line(task="\u00a0\u2003"), "invalid_field"),
    ("number-task", _serve_line(task=5), "invalid_field"),
    ("zero-width-space-task", _serve_line(task="\u200b"), None),
    ("empty-serve-id", _serve_line(serve_id=""), "invalid_field"),
    ("number-serve-id", _serve_line(serve_id=7), "invalid_field"),
    ("empty-project", _serve_line(project=""), "invalid_field"),
    ("empty-doc-version", _serve_line(items=_item(doc_version="")), "invalid_field"),
    ("number-doc-version", _serve_line(items=_item(doc_version=3)), "invalid_field"),
    ("number-doc-id", _serve_line(items=_item(doc_id=3)), "invalid_field"),
    ("capital-channel", _serve_line(items=_item(channel="Ranked")), "invalid_field"),
    ("capital-verdict", _verdict_line(verdict="Helped"), "invalid_field"),
    ("empty-verdict-doc-id", _verdict_line(doc_id=""), "invalid_field"),
    ("number-verdict-serve-id", _verdict_line(serve_id=1), "invalid_field"),
    ("session-id-number", _serve_line(session_id=5), None),
    ("unknown-fields", _serve_line(extra={"a": [1, None]}), None),
    ("deeply-nested-unknown-field", _verdict_line()[:-1] + ', "x": ' + "[" * 300 + "]" * 300 + "}", None),
    ("escaped-key", _verdict_line().replace('"event"', '"\\u0065vent"'), None),
    ("duplicate-key-written-with-an-escape", _verdict_line()[:-1] + ', "\\u0065vent": "verdict"}', "invalid_json"),
    ("escaped-values", _verdict_line().replace('"helped"', '"hel\\u0070ed"').replace("Z", "\\u005a"), None),
    ("white-space-around-colons", _verdict_line().replace('": ', '" :\t'), None),
    ("white-space-around-the-object", "\t " + _verdict_line() + " ", None),
    ("nested-object-with-an-event-key", _verdict_line(x={"event": "serve", "items": []}), None),
    ("key-holding-an-escaped-quote-and-colon", _verdict_line()[:-1] + ', "a\\":": 1}', None),
    ("raw-control-character-in-a-string", _verdict_line(doc_id="d\tx").replace("\\t", "\t"), "invalid_json"),
    ("escaped-nul-in-a-string", _verdict_line(doc_id="d\u0000x"), None),
    ("rank-leading-zero", RANK_777.replace("777", "01"), "invalid_json"),
    ("rank-plus-sign", RANK_777.replace("777", "+1"), "invalid_json"),
    ("rank-minus-zero", RANK_777.replace("777", "-0"), "invalid_field"),
    ("rank-10e-1", RANK_777.replace("777", "10E-1"), "invalid_field"),
    ("hex-number", _verdict_line()[:-1] + ', "x": 0x10}', "invalid_json"),
    ("comment", _verdict_line()[:-1] + " /* c */}", "invalid_json"),
    ("ts-no-offset", _verdict_line(ts="2026-11-01T09:00:00"), "invalid_field"),
    ("ts-lowercase-z", _verdict_line(ts="2026-11-01T09:00:00z"), "invalid_field"),
    ("ts-lowercase-t", _verdict_line(ts="2026-11-01t09:00:00Z"), "invalid_field"),
    ("ts-space", _verdict_line(ts="2026-11-01 09:00:00Z"), "invalid_field"),
    ("ts-trailing-space", _verdict_line(ts="2026-11-01T09:00:00Z "), "invalid_field"),
    ("ts-hour-24", _verdict_line(ts="2026-11-01T24:00:00Z"), "invalid_field"),
    ("ts-minute-60", _serve_line(ts="2026-11-01T23:60:00Z"), "invalid_field"),
    ("ts-second-60", _verdict_line(ts="2026-11-01T23:59:60Z"), "invalid_field"),
    ("ts-feb-30", _serve_line(ts="2026-02-30T12:00:00Z"), "invalid_field"),
    ("ts-feb-29-non-leap", _verdict_line(ts="2027-02-29T12:00:00Z"), "invalid_field"),
    ("ts-month-13", _verdict_line(ts="2026-13-01T12:00:00Z"), "invalid_field"),
    ("ts-day-0", _verdict_line(ts="2026-11-00T12:00:00Z"), "invalid_field"),
    ("ts-year-0", _verdict_line(ts="0000-01-01T12:00:00Z"), "invalid_field"),
    ("ts-past-9999", _verdict_line(ts="9999-12-31T23:30:00-01:00"), "invalid_field"),
    ("ts-offset-24", _verdict_line(ts="2026-11-01T09:00:00+24:00"), "invalid_field"),
    ("ts-offset-minute-60", _verdict_line(ts="2026-11-01T09:00:00+01:60"), "invalid_field"),
    ("ts-offset-no-colon", _verdict_line(ts="2026-11-01T09:00:00+0100"), "invalid_field"),
    ("ts-arabic-indic-digits", _verdict_line(ts="\u0662\u0660\u0662\u0666-11-01T09:00:00Z"), "invalid_field"),
    ("ts-fullwidth-digits", _serve_line(ts="２０２６-11-01T09:00:00Z"), "invalid_field"),
    ("ts-number", _verdict_line(ts=1764338591), "invalid_field"),
    ("ts-dot-without-digits", _verdict_line(ts="2026-11-01T09:00:00.Z"), "invalid_field"),
]
# Accepted timestamps and the UTC instant each must be stored as.
TS_INSTANTS = [
    ("2026-11-01T10:00:00+01:00", datetime(2026, 11, 1, 9, 0)),
    ("2026-11-01T09:00:00-00:00", datetime(2026, 11, 1, 9, 0)),
    ("2026-11-01T00:30:00+01:00", datetime(2026, 10, 31, 23, 30)),
    ("2026-11-01T14:30:00+05:30", datetime(2026, 11, 1, 9, 0)),
    ("2026-12-31T23:30:00-01:00", datetime(2027, 1, 1, 0, 30)),
    ("2028-02-29T12:00:00Z", datetime(2028, 2, 29, 12)),
    ("2026-11-01T09:00:00.5Z", datetime(2026, 11, 1, 9, 0, 0, 500000)),
    ("2026-11-01T09:00:00.1234567Z", datetime(2026, 11, 1, 9, 0, 0, 123456)),
    ("2026-11-01T09:00:00.9999999999Z", datetime(2026, 11, 1, 9, 0, 0, 999999)),
    ("2026-11-01T09:00:00.000001+00:00", datetime(2026, 11, 1, 9, 0, 0, 1)),
]


TS_SERVE = serve("ts-serve", "2026-11-01T08:00:00Z", "when", [ranked(f"t{i}", i + 1) for i in range(len(TS_INSTANTS))])


@pytest.fixture(scope="module")
def line_rules_ingested(tmp_path_factory):
    """LINE_RULES ingested as one file, then built with one helped verdict per TS_INSTANTS entry.

    Returns the reason of each rejected line, the ingest reports, the number of lines,
    and the judged_at of each TS_INSTANTS verdict (by doc t0, t1, ...).
    """
    tmp = tmp_path_factory.mktemp("line-rules")
    lines = [text.replace("SID", f"s{n}") for n, (_, text, _) in enumerate(LINE_RULES, start=1)]
    lines += [text(TS_SERVE)] + [
        _verdict_line(serve_id="ts-serve", doc_id=f"t{i}", ts=value) for i, (value, _) in enumerate(TS_INSTANTS)
    ]
    write_log(tmp / "logs", DAY1, "part-0001.jsonl", lines)
    con = connect(tmp / "g.duckdb")
    try:
        reports = ingest_all(con, tmp / "logs")
        reasons = dict(rows(con, "SELECT line, reason FROM rejected_records"))
        publish(con, tmp, DOCS + [doc(f"t{i}") for i in range(len(TS_INSTANTS))])
        judged_at = dict(rows(con, "SELECT doc_id, judged_at FROM golden_set WHERE serve_id = 'ts-serve'"))
    finally:
        con.close()
    return reasons, reports, len(lines), judged_at


@pytest.mark.parametrize("n, case", list(enumerate(LINE_RULES, start=1)), ids=[c[0] for c in LINE_RULES])
def test_ingestion_gives_each_line_the_first_reason_that_applies(line_rules_ingested, n, case):
    reasons = line_rules_ingested[0]
    assert reasons.get(n) == case[2]


def test_every_line_is_either_stored_or_rejected(line_rules_ingested):
    reasons, reports, n_lines, _ = line_rules_ingested
    (report,) = reports
    assert report.serves + report.verdicts + report.rejected == n_lines
    assert report.rejected == len(reasons) == sum(1 for case in LINE_RULES if case[2] is not None)


@pytest.mark.parametrize("i, case", list(enumerate(TS_INSTANTS)), ids=[c[0] for c in TS_INSTANTS])
def test_ingestion_stores_a_ts_as_its_utc_instant(line_rules_ingested, i, case):
    judged_at = line_rules_ingested[3]
    assert judged_at[f"t{i}"] == case[1]


# --------------------------------------------------------------------------- the rejected share


def test_blank_lines_count_in_the_rejected_share(warehouse, log_root, tmp_path):
    # 1 rejected of 10 lines (7 blank) is 10%, not above the 10% line; of the 3 non-blank
    # lines it would be 33% and block.
    write_log(log_root, DAY1, "part-0001.jsonl", [S1, V1, "bad"] + [""] * 7)
    ingest_all(warehouse, log_root)
    result = publish(warehouse, tmp_path, DOCS, checks=BuildChecks())
    assert result.build_id == 1
    assert build_counts(warehouse, "lines_read", "lines_rejected") == (10, 1)


def test_a_rejected_share_above_ten_percent_blocks_the_build(warehouse, log_root, tmp_path):
    write_log(log_root, DAY1, "part-0001.jsonl", [S1, V1, "bad", "worse"] + [""] * 6)
    ingest_all(warehouse, log_root)
    with pytest.raises(BuildBlocked, match="2 of 10 log lines rejected at ingest"):
        publish(warehouse, tmp_path, DOCS, checks=BuildChecks())
    assert rows(warehouse, "SELECT count(*) FROM golden_builds") == [(0,)]
    assert len(rejected(warehouse)) == 2


def test_a_build_checkpoints_once_committed_and_keeps_the_checkpoint_threshold(warehouse, log_root, tmp_path):
    # The build holds DuckDB's checkpoint at commit off and checkpoints itself once its
    # staging tables are dropped: with the connection still open, the WAL is written into
    # the file, and the threshold the caller set is back, whether the build publishes or not.
    wal = tmp_path / "g.duckdb.wal"
    warehouse.execute("SET checkpoint_threshold = '8MiB'")
    write_log(log_root, DAY1, "part-0001.jsonl", [S1, V1, V2])
    ingest_all(warehouse, log_root)
    assert wal.exists() and wal.stat().st_size > 0  # ingestion left its commit in the WAL
    assert publish(warehouse, tmp_path, DOCS).build_id == 1
    assert not wal.exists() or wal.stat().st_size == 0
    assert rows(warehouse, "SELECT current_setting('checkpoint_threshold')") == [("8.0 MiB",)]

    write_log(log_root, DAY2, "part-0001.jsonl", ["bad"] * 5)
    ingest_all(warehouse, log_root)
    with pytest.raises(BuildBlocked):
        build_golden_set(warehouse, checks=BuildChecks(block_rejected_share=0.1))
    assert rows(warehouse, "SELECT current_setting('checkpoint_threshold')") == [("8.0 MiB",)]
    assert rows(warehouse, "SELECT count(*) FROM golden_builds") == [(1,)]


def test_raw_lines_are_stored_with_zstd_and_read_back_whole(warehouse, log_root, tmp_path):
    # The raw line columns are written with zstd (cheaper to store than DuckDB's default
    # for JSON text); what is read back is the line as written, byte for byte.
    first = json.dumps(S1, ensure_ascii=False)
    conflict = json.dumps(serve("s1", ts(9), "other task ü", [ranked("d1", 1)]), ensure_ascii=False)
    write_log(log_root, DAY1, "part-0001.jsonl", [first, V1, conflict, "not json"])
    ingest_all(warehouse, log_root)
    warehouse.execute("CHECKPOINT")
    for table in ("log_serves", "log_rejects"):
        kinds = {
            r[0]
            for r in warehouse.execute(
                "SELECT compression FROM pragma_storage_info(?) WHERE column_name = 'raw' AND segment_type = 'VARCHAR'",
                [table],
            ).fetchall()
        }
        assert kinds == {"ZSTD"}, (table, kinds)
    assert sorted(r[0] for r in warehouse.execute("SELECT raw FROM log_serves").fetchall()) == sorted([first, conflict])
    assert rows(warehouse, "SELECT reason, raw FROM rejected_records ORDER BY line") == [
        ("conflicting_duplicate_serve", conflict),
        ("invalid_json", "not json"),
    ]


def test_conflicting_duplicates_do_not_count_in_the_rejected_share(warehouse, log_root, tmp_path):
    conflicts = [serve("s1", ts(9), f"other task {i}", [ranked("d1", 1)]) for i in range(3)]
    write_log(log_root, DAY1, "part-0001.jsonl", [S1, V1, *conflicts])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS, checks=BuildChecks())
    assert [r[2] for r in rejected(warehouse)] == ["conflicting_duplicate_serve"] * 3
    assert build_counts(warehouse, "lines_rejected") == (0,)


# --------------------------------------------------------------------------- gzip


def test_a_gzip_file_is_read(warehouse, log_root, tmp_path):
    write_log(log_root, DAY1, "part-0001.jsonl.gz", [S1, V1, V2])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == [("s1", "d1", "helped"), ("s1", "d2", "noise")]


def test_concatenated_gzip_members_are_read_as_one_stream(warehouse, log_root, tmp_path):
    write_bytes(log_root, DAY1, "part-0001.jsonl.gz", gzip.compress(jsonl([S1])) + gzip.compress(jsonl([V1, V2])))
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == []
    assert golden(warehouse) == [("s1", "d1", "helped"), ("s1", "d2", "noise")]


@pytest.mark.parametrize("data", [b"", gzip.compress(b"")], ids=["zero-bytes", "empty-member"])
def test_an_empty_gzip_file_holds_no_lines_and_no_fault(warehouse, log_root, data):
    write_bytes(log_root, DAY1, "part-0001.jsonl.gz", data)
    ingest_all(warehouse, log_root)
    assert rejected(warehouse) == []


def test_a_truncated_gzip_file_is_one_unreadable_file_row_and_keeps_the_lines_before_the_fault(
    warehouse, log_root, tmp_path
):
    lines = [serve(f"s{i:03d}", ts(9), f"task {i}", [ranked("d1", 1)]) for i in range(300)]
    full = gzip.compress(jsonl(lines))
    cut = full[: len(full) // 2]
    write_bytes(log_root, DAY1, "part-0001.jsonl.gz", cut)
    # What a decompressor can give before the stream ends: complete lines, then a torn one.
    partial = zlib.decompressobj(wbits=31).decompress(cut)
    complete = partial.count(b"\n")
    assert 0 < complete < 300

    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rows(warehouse, "SELECT source_file, line, reason FROM rejected_records") == [
        (f"dt={DAY1}/part-0001.jsonl.gz", complete + 1, "unreadable_file")
    ]
    assert build_counts(warehouse, "unjudged_items") == (complete,)


def test_a_gzip_file_cut_after_a_newline_reports_the_next_line_as_the_first_not_read(warehouse, log_root):
    # A raw deflate stream flushed after two whole lines, with no gzip trailer.
    comp = zlib.compressobj(wbits=31)
    data = comp.compress(jsonl([S1, V1])) + comp.flush(zlib.Z_SYNC_FLUSH)
    write_bytes(log_root, DAY1, "part-0001.jsonl.gz", data)
    ingest_all(warehouse, log_root)
    assert rejected(warehouse) == [(f"dt={DAY1}/part-0001.jsonl.gz", 3, "unreadable_file")]


def test_a_file_named_gz_that_is_not_gzip_is_one_unreadable_file_row_with_no_line(warehouse, log_root):
    write_bytes(log_root, DAY1, "part-0001.jsonl.gz", jsonl([S1, V1]))
    ingest_all(warehouse, log_root)
    assert rows(warehouse, "SELECT source_file, line, reason, raw FROM rejected_records") == [
        (f"dt={DAY1}/part-0001.jsonl.gz", None, "unreadable_file", None)
    ]


def test_an_unreadable_file_does_not_stop_the_other_files(warehouse, log_root, tmp_path):
    write_bytes(log_root, DAY1, "part-0001.jsonl.gz", b"\x1f\x8b garbage")
    write_log(log_root, DAY1, "part-0002.jsonl", [S1, V1])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert [r[2] for r in rejected(warehouse)] == ["unreadable_file"]
    assert golden(warehouse) == [("s1", "d1", "helped")]


def test_a_truncated_gzip_completed_later_replaces_its_unreadable_row(warehouse, log_root, tmp_path):
    full = gzip.compress(jsonl([S1, V1, V2] + [serve(f"x{i}", ts(8), "t", [ranked("d3", 1)]) for i in range(50)]))
    path = write_bytes(log_root, DAY1, "part-0001.jsonl.gz", full[: len(full) - 20])
    ingest_all(warehouse, log_root)
    assert [r[2] for r in rejected(warehouse)] == ["unreadable_file"]
    path.write_bytes(full)
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == []
    assert golden(warehouse) == [("s1", "d1", "helped"), ("s1", "d2", "noise")]


def test_a_days_lines_add_up_with_unreadable_files_which_are_no_lines_read(warehouse, log_root):
    # plain: S1, blank, `not json`, V1, blank, blank (a final \n starts no line): 6 lines.
    write_bytes(log_root, DAY1, "a.jsonl", jsonl([S1]) + b"\n" + b"not json\n" + jsonl([V1]) + b"\n\n")
    write_bytes(log_root, DAY1, "b.jsonl", b"a\n\n\n")  # 3 lines: `a` (invalid JSON) and two blank ones
    # A gzip stream broken after two whole lines: those 2 are read, and one unreadable_file row.
    comp = zlib.compressobj(wbits=31)
    serve_2, verdict_2 = serve("s2", ts(10), "other", [ranked("d1", 1)]), verdict("s2", "d1", "helped", ts(11))
    write_bytes(
        log_root, DAY1, "c.jsonl.gz", comp.compress(jsonl([serve_2, verdict_2])) + comp.flush(zlib.Z_SYNC_FLUSH)
    )
    write_bytes(log_root, DAY1, "d.jsonl.gz", b"not gzip at all")  # unreadable from its start: 0 lines
    ingest_all(warehouse, log_root)
    st = partition_stats(warehouse, [DAY1])[DAY1]
    assert (st.lines_read, st.serves, st.verdicts, st.blank_lines) == (11, 2, 2, 5)
    assert st.rejected_by_reason == {"invalid_json": 2, "unreadable_file": 2} and st.unreadable_files == 2
    assert (
        st.lines_read
        == st.serves + st.verdicts + st.log_lines_rejected_at_ingest - st.unreadable_files + st.blank_lines
    )
    assert dict(rows(warehouse, "SELECT file_name, lines_total FROM log_files ORDER BY 1")) == {
        "a.jsonl": 6,
        "b.jsonl": 3,
        "c.jsonl.gz": 2,
        "d.jsonl.gz": 0,
    }


# --------------------------------------------------------------------------- what is read


IGNORED_FILES = [
    "part-0001.json",
    "part-0001.jsonl.bak",
    "part-0001.txt",
    "part-0001.jsonl.gz.tmp",
    "part-0001.jsonl.zst",
    "part-0001",
    "jsonl",
]
IGNORED_FOLDERS = [
    "dt=2026-11-1",
    "dt=2026-11-010",
    "dt=20261102",
    "date=2026-11-02",
    "DT=2026-11-02",
    "dt=2026-11-02x",
    "xdt=2026-11-02",
    "dt=２０２６-11-02",
    "2026-11-02",
    "dt=2026-11-02 ",
]


def test_files_not_ending_in_jsonl_or_jsonl_gz_are_ignored(warehouse, log_root, tmp_path):
    write_log(log_root, DAY1, "part-0000.jsonl", [S1])
    for name in IGNORED_FILES:
        # Each holds a verdict and a bad line naming it: read by mistake, it shows up.
        write_bytes(log_root, DAY1, name, jsonl([V1, f"read by mistake: {name}"]))
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == []
    assert golden(warehouse) == []
    assert build_counts(warehouse, "unjudged_items", "lines_read") == (2, 1)


def test_folders_not_named_dt_yyyy_mm_dd_are_ignored(warehouse, log_root, tmp_path):
    write_log(log_root, DAY1, "part-0001.jsonl", [S1])
    for folder in IGNORED_FOLDERS:
        (log_root / folder).mkdir()
        (log_root / folder / "part-0001.jsonl").write_bytes(jsonl([V1, f"read by mistake: {folder}"]))
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == []
    assert build_counts(warehouse, "unjudged_items", "lines_read") == (2, 1)


def test_a_folder_inside_a_partition_is_not_read(warehouse, log_root, tmp_path):
    write_log(log_root, DAY1, "part-0001.jsonl", [S1])
    nested = log_root / f"dt={DAY1}" / "sub"
    nested.mkdir()
    (nested / "part-0002.jsonl").write_bytes(jsonl([V1, "bad"]))
    (log_root / f"dt={DAY1}" / "dir.jsonl").mkdir()
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == []
    assert golden(warehouse) == []


def test_a_dt_folder_is_read_whatever_its_date(warehouse, log_root, tmp_path):
    write_log(log_root, "2026-13-45", "part-0001.jsonl", [S1, V1, "bad"])
    write_log(log_root, "1970-01-01", "part-0001.jsonl", [V2])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == [("dt=2026-13-45/part-0001.jsonl", 3, "invalid_json")]
    assert golden(warehouse) == [("s1", "d1", "helped"), ("s1", "d2", "noise")]


# --------------------------------------------------------------------------- re-reading


def _public_state(con):
    """What a re-read could disturb: the quarantine (with its timestamps) and the latest build."""
    return {
        "rejected": rows(
            con, "SELECT source_file, line, reason, raw, rejected_at FROM rejected_records ORDER BY source_file, line"
        ),
        "golden": rows(con, "SELECT * FROM golden_set ORDER BY ALL"),
        "funnel": rows(
            con,
            "SELECT step, judgments_dropped, judgments_left, units_left FROM filter_funnel "
            "WHERE build_id = (SELECT max(build_id) FROM golden_builds) ORDER BY step_order",
        ),
        "counts": build_counts(
            con,
            "n_queries",
            "n_helped",
            "n_noise",
            "n_wrong",
            "unjudged_items",
            "orphan_verdicts",
            "unserved_item_verdicts",
            "lines_read",
            "lines_rejected",
        ),
    }


@pytest.mark.parametrize("rehash", [False, True], ids=["stat", "rehash"])
def test_re_ingesting_unchanged_files_changes_nothing(warehouse, log_root, tmp_path, rehash):
    write_log(log_root, DAY1, "part-0001.jsonl", [S1, V1, "bad"])
    write_log(log_root, DAY2, "part-0001.jsonl.gz", [V2, '{"event":"serve"}', verdict("s9", "d1", "helped", ts(9))])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    before = _public_state(warehouse)
    reports = ingest_all(warehouse, log_root, rehash=rehash)
    assert [(r.files_ingested, r.files_unchanged) for r in reports] == [(0, 1), (0, 1)]
    publish(warehouse, tmp_path, DOCS)
    assert _public_state(warehouse) == before
    assert golden(warehouse) == [("s1", "d1", "helped"), ("s1", "d2", "noise")]


def test_a_touched_but_unchanged_file_is_not_re_ingested(warehouse, log_root, tmp_path):
    path = write_log(log_root, DAY1, "part-0001.jsonl", [S1, V1, "bad"])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    before = _public_state(warehouse)
    bump_mtime(path)
    reports = ingest_all(warehouse, log_root)
    assert (reports[0].files_ingested, reports[0].files_unchanged) == (0, 1)
    publish(warehouse, tmp_path, DOCS)
    assert _public_state(warehouse) == before


def test_an_appended_file_replaces_its_earlier_rows(warehouse, log_root, tmp_path):
    path = write_log(log_root, DAY1, "part-0001.jsonl", [S1, "bad one"])
    ingest_all(warehouse, log_root)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text(V1) + "\n" + "bad two\n")
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    src = f"dt={DAY1}/part-0001.jsonl"
    assert rejected(warehouse) == [(src, 2, "invalid_json"), (src, 4, "invalid_json")]
    assert golden(warehouse) == [("s1", "d1", "helped")]
    # s1 counted once: one judged item, one unjudged.
    assert (judged(warehouse), build_counts(warehouse, "unjudged_items")) == (1, (1,))


def test_a_rewritten_file_drops_the_rows_it_no_longer_holds(warehouse, log_root, tmp_path):
    path = write_log(log_root, DAY1, "part-0001.jsonl", [S1, V1, V2, "bad"])
    ingest_all(warehouse, log_root)
    write_log(
        log_root,
        DAY1,
        "part-0001.jsonl",
        [S1, verdict("s1", "d1", "wrong", ts(9, 5)), verdict("s1", "d2", "helped", ts(9, 6))],
    )
    bump_mtime(path)
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == []
    assert golden(warehouse) == [("s1", "d1", "wrong"), ("s1", "d2", "helped")]


def test_a_deleted_file_keeps_its_rows(warehouse, log_root, tmp_path):
    path = write_log(log_root, DAY1, "part-0001.jsonl", [S1, V1, "bad"])
    write_log(log_root, DAY2, "part-0001.jsonl", [V2])
    ingest_all(warehouse, log_root)
    path.unlink()
    ingest_all(warehouse, log_root, rehash=True)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == [(f"dt={DAY1}/part-0001.jsonl", 3, "invalid_json")]
    assert golden(warehouse) == [("s1", "d1", "helped"), ("s1", "d2", "noise")]


def test_ingesting_named_partitions_leaves_the_others_unread(warehouse, log_root, tmp_path):
    write_log(log_root, DAY1, "part-0001.jsonl", [S1])
    write_log(log_root, DAY2, "part-0001.jsonl", [V1])
    ingest_all(warehouse, log_root, partitions=[DAY1])
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == []
    ingest_all(warehouse, log_root, partitions=[DAY2])
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == [("s1", "d1", "helped")]


# --------------------------------------------------------------------------- duplicate serves


def _variant(base: dict, **changes) -> dict:
    rec = json.loads(json.dumps(base))
    rec.update(changes)
    return rec


S_BASE = serve(
    "s1", ts(9), "Fix the refund window", [always("rule-1"), ranked("d1", 1), ranked("d2", 2)], session_id="sess-1"
)


@pytest.mark.parametrize(
    "again",
    [
        pytest.param(text(S_BASE), id="same-line"),
        pytest.param(json.dumps(dict(reversed(list(S_BASE.items())))), id="keys-reordered"),
        pytest.param(_variant(S_BASE, session_id="sess-2"), id="other-session"),
        pytest.param(_variant(S_BASE, session_id=None), id="null-session"),
        pytest.param(_variant(S_BASE, extra_field=[1, 2]), id="unknown-field"),
        pytest.param(_variant(S_BASE, items=list(reversed(S_BASE["items"]))), id="items-reordered"),
        pytest.param(
            _variant(
                S_BASE,
                items=[
                    always(
                        "rule-1",
                    ),
                    {**ranked("d1", 1), "score": 0.9},
                    ranked("d2", 2),
                ],
            ),
            id="other-score",
        ),
        pytest.param(
            _variant(S_BASE, items=[{**always("rule-1"), "rank": 7}, ranked("d1", 1), ranked("d2", 2)]),
            id="always-item-rank",
        ),
        pytest.param(_variant(S_BASE, ts="2026-11-01T10:00:00+01:00"), id="same-instant-other-offset"),
        pytest.param(_variant(S_BASE, ts="2026-11-01T09:00:00.0000009Z"), id="sub-microsecond-fraction"),
        pytest.param(_variant(S_BASE, ts="2026-11-01T09:00:00.000000Z"), id="zero-fraction"),
        pytest.param(text(S_BASE).replace("refund", "\\u0072efund"), id="task-written-with-escapes"),
        # A string holding a key-like token sends the line down the careful path; the
        # plain first line takes the quick one. Both must agree on identity.
        pytest.param(_variant(S_BASE, note='a": "b'), id="unknown-field-holding-a-key-token"),
        pytest.param(text(S_BASE)[:-1] + ', "x": 1e400}', id="unknown-field-out-of-float-range"),
    ],
)
def test_an_identical_duplicate_serve_counts_once(warehouse, log_root, tmp_path, again):
    write_log(log_root, DAY1, "part-0001.jsonl", [S_BASE, verdict("s1", "d1", "helped", ts(9, 5))])
    write_log(log_root, DAY2, "part-0001.jsonl", [again])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == []
    assert judged(warehouse) == 1
    assert build_counts(warehouse, "unjudged_items") == (2,)


@pytest.mark.parametrize(
    "again",
    [
        pytest.param(_variant(S_BASE, task="Fix the refund window "), id="task-trailing-space"),
        pytest.param(_variant(S_BASE, task="fix the refund window"), id="task-case"),
        pytest.param(_variant(S_BASE, project="Billing"), id="project"),
        pytest.param(_variant(S_BASE, ts=ts(9, 0, offset="+01:00")), id="ts-instant"),
        pytest.param(_variant(S_BASE, ts="2026-11-01T09:00:00.000001Z"), id="ts-one-microsecond"),
        pytest.param(
            _variant(S_BASE, items=[always("rule-1"), ranked("d1", 1), ranked("d2", 2, "v2")]), id="doc-version"
        ),
        pytest.param(_variant(S_BASE, items=[always("rule-1"), ranked("d1", 1), always("d2")]), id="channel"),
        pytest.param(_variant(S_BASE, items=[always("rule-1"), ranked("d1", 2), ranked("d2", 1)]), id="ranks"),
        pytest.param(_variant(S_BASE, items=[always("rule-1"), ranked("d1", 1)]), id="item-removed"),
        pytest.param(_variant(S_BASE, items=S_BASE["items"] + [ranked("d3", 3)]), id="item-added"),
        pytest.param(_variant(S_BASE, items=[always("rule-1"), ranked("d1", 1), ranked("d9", 2)]), id="doc-id"),
    ],
)
def test_a_serve_repeated_with_other_content_is_a_conflicting_duplicate(warehouse, log_root, tmp_path, again):
    write_log(log_root, DAY1, "part-0001.jsonl", [S_BASE, verdict("s1", "d1", "helped", ts(9, 5)), again])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rows(warehouse, "SELECT source_file, line, reason, raw FROM rejected_records") == [
        (f"dt={DAY1}/part-0001.jsonl", 3, "conflicting_duplicate_serve", text(again))
    ]
    assert rows(warehouse, "SELECT task, doc_version FROM golden_set") == [("Fix the refund window", "v1")]
    assert build_counts(warehouse, "unjudged_items", "conflicting_serves") == (2, 1)


@pytest.mark.parametrize("rank", [2**63, 2**64], ids=["2-to-the-63", "2-to-the-64"])
def test_serves_differing_only_in_a_rank_beyond_64_bits_conflict(warehouse, log_root, rank):
    first = serve("s1", ts(9), "t", [{**ranked("d1", 1), "rank": rank}])
    second = serve("s1", ts(9), "t", [{**ranked("d1", 1), "rank": rank + 1}])
    write_log(log_root, DAY1, "part-0001.jsonl", [first, second])
    ingest_all(warehouse, log_root)
    assert rejected(warehouse) == [(f"dt={DAY1}/part-0001.jsonl", 2, "conflicting_duplicate_serve")]


def _conflict_pair():
    first = serve("s1", ts(9), "first task", [ranked("d1", 1)])
    second = serve("s1", ts(9), "second task", [ranked("d1", 1)])
    return first, second


@pytest.mark.parametrize(
    "first_at, second_at",
    [
        pytest.param((DAY1, "part-0002.jsonl"), (DAY2, "part-0001.jsonl"), id="earlier-dt-wins-over-file-name"),
        pytest.param((DAY1, "part-0001.jsonl"), (DAY1, "part-0002.jsonl"), id="earlier-file-name"),
        pytest.param((DAY1, "part-10.jsonl"), (DAY1, "part-9.jsonl"), id="code-point-not-numeric"),
        pytest.param((DAY1, "a.jsonl"), (DAY1, "a.jsonl.gz"), id="full-file-name"),
        pytest.param((DAY1, "B.jsonl"), (DAY1, "a.jsonl"), id="upper-case-first"),
    ],
)
def test_the_first_serve_in_dt_file_line_order_is_kept(warehouse, log_root, tmp_path, first_at, second_at):
    first, second = _conflict_pair()
    # Written (and ingested) in the opposite order, so arrival order cannot explain the result.
    write_log(log_root, *second_at, [second, verdict("s1", "d1", "helped", ts(9, 5))])
    ingest_all(warehouse, log_root)
    write_log(log_root, *first_at, [first])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == [(f"dt={second_at[0]}/{second_at[1]}", 1, "conflicting_duplicate_serve")]
    assert rows(warehouse, "SELECT task FROM golden_set") == [("first task",)]


def test_a_backfilled_earlier_partition_takes_over_a_conflicting_serve(warehouse, log_root, tmp_path):
    first, second = _conflict_pair()
    write_log(log_root, DAY2, "part-0001.jsonl", [second, verdict("s1", "d1", "helped", ts(9, 5))])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rows(warehouse, "SELECT task FROM golden_set") == [("second task",)]
    assert rejected(warehouse) == []

    write_log(log_root, DAY1, "part-0001.jsonl", [first])
    ingest_all(warehouse, log_root, partitions=[DAY1])
    publish(warehouse, tmp_path, DOCS)
    assert rows(warehouse, "SELECT task FROM golden_set") == [("first task",)]
    assert rejected(warehouse) == [(f"dt={DAY2}/part-0001.jsonl", 1, "conflicting_duplicate_serve")]


@pytest.mark.slow
def test_status_counts_rejected_lines_as_rejected_records_does_before_and_after_a_build(warehouse, log_root, tmp_path):
    # Status takes the conflicting duplicates from the latest build when nothing was
    # ingested since; at every step it must say what the view says now.
    from goldenset.status import golden_status

    def view():
        return dict(rows(warehouse, "SELECT reason, count(*) FROM rejected_records GROUP BY reason"))

    first, second = _conflict_pair()
    write_log(log_root, DAY1, "part-0001.jsonl", [first, second, verdict("s1", "d1", "helped", ts(9, 5))])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert golden_status(warehouse).rejected_by_reason == view() == {"conflicting_duplicate_serve": 1}
    # Ingested, not built: two more conflicts and a bad line the build has not seen.
    late = serve("s1", ts(9), "third task", [ranked("d1", 1)])
    write_log(log_root, DAY2, "part-0001.jsonl", [late, "not json", second])
    ingest_all(warehouse, log_root)
    assert build_counts(warehouse, "conflicting_serves") == (1,)
    assert (
        golden_status(warehouse).rejected_by_reason == view() == {"conflicting_duplicate_serve": 3, "invalid_json": 1}
    )
    publish(warehouse, tmp_path, DOCS)
    assert golden_status(warehouse).rejected_by_reason == view()
    # The later file replaced by one without conflicts: fewer again, before and after the build.
    write_log(log_root, DAY2, "part-0001.jsonl", ["not json"])
    ingest_all(warehouse, log_root)
    assert (
        golden_status(warehouse).rejected_by_reason == view() == {"conflicting_duplicate_serve": 1, "invalid_json": 1}
    )
    publish(warehouse, tmp_path, DOCS)
    assert golden_status(warehouse).rejected_by_reason == view()


def test_later_lines_are_compared_with_the_kept_serve_not_with_each_other(warehouse, log_root):
    first, second = _conflict_pair()
    write_log(log_root, DAY1, "part-0001.jsonl", [first, second, text(second), text(first)])
    ingest_all(warehouse, log_root)
    assert rejected(warehouse) == [
        (f"dt={DAY1}/part-0001.jsonl", 2, "conflicting_duplicate_serve"),
        (f"dt={DAY1}/part-0001.jsonl", 3, "conflicting_duplicate_serve"),
    ]


def test_a_verdict_on_a_doc_only_a_rejected_duplicate_served_is_an_unserved_item_verdict(warehouse, log_root, tmp_path):
    write_log(
        log_root,
        DAY1,
        "part-0001.jsonl",
        [
            serve("s1", ts(9), "t", [ranked("d1", 1)]),
            serve("s1", ts(9), "t", [ranked("d2", 1)]),
            verdict("s1", "d2", "helped", ts(9, 5)),
        ],
    )
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == []
    assert build_counts(warehouse, "unserved_item_verdicts", "orphan_verdicts", "unjudged_items") == (1, 0, 1)


# --------------------------------------------------------------------------- verdicts


def test_a_late_verdict_in_a_later_partition_joins_its_serve(warehouse, log_root, tmp_path):
    write_log(log_root, DAY1, "part-0001.jsonl", [S1])
    write_log(log_root, DAY3, "part-0001.jsonl.gz", [verdict("s1", "d1", "helped", ts(8, day=3))])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == [("s1", "d1", "helped")]
    assert build_counts(warehouse, "orphan_verdicts") == (0,)


def test_an_orphan_verdict_is_judged_once_its_serve_arrives_in_a_later_ingest(warehouse, log_root, tmp_path):
    write_log(log_root, DAY2, "part-0001.jsonl", [V1])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == []
    assert build_counts(warehouse, "orphan_verdicts") == (1,)

    write_log(log_root, DAY3, "part-0001.jsonl", [S1])
    ingest_all(warehouse, log_root, partitions=[DAY3])
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == [("s1", "d1", "helped")]
    assert build_counts(warehouse, "orphan_verdicts") == (0,)


def test_an_orphan_verdict_joins_a_serve_backfilled_into_an_earlier_partition(warehouse, log_root, tmp_path):
    write_log(log_root, DAY3, "part-0001.jsonl", [V1])
    ingest_all(warehouse, log_root)
    write_log(log_root, DAY1, "part-0001.jsonl", [S1])
    ingest_all(warehouse, log_root, partitions=[DAY1])
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == [("s1", "d1", "helped")]


def test_the_latest_verdict_ts_wins_whatever_the_line_order(warehouse, log_root, tmp_path):
    write_log(log_root, DAY1, "part-0001.jsonl", [S1, verdict("s1", "d1", "helped", ts(11))])
    # Later in (dt, file, line) order but earlier in time, and an offset that hides it.
    write_log(log_root, DAY2, "part-0001.jsonl", [verdict("s1", "d1", "wrong", ts(11, 30, offset="+01:00"))])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rows(warehouse, "SELECT verdict, judged_at FROM golden_set") == [("helped", datetime(2026, 11, 1, 11))]


@pytest.mark.parametrize(
    "earlier_at, later_at",
    [
        pytest.param((DAY1, "part-0001.jsonl"), (DAY1, "part-0001.jsonl"), id="same-file-later-line"),
        pytest.param((DAY1, "part-0001.jsonl"), (DAY1, "part-0002.jsonl"), id="later-file"),
        pytest.param((DAY1, "part-9.jsonl"), (DAY1, "part-90.jsonl"), id="later-file-by-code-point"),
        pytest.param((DAY1, "part-0009.jsonl"), (DAY2, "part-0001.jsonl"), id="later-dt"),
    ],
)
@pytest.mark.parametrize("ingest_later_first", [False, True], ids=["in-order", "later-ingested-first"])
def test_tied_verdicts_keep_the_later_line(warehouse, log_root, tmp_path, earlier_at, later_at, ingest_later_first):
    # d2 helped keeps the query in the golden set, so d1's winning verdict shows there.
    write_log(log_root, DAY1, "part-0000.jsonl", [S1, verdict("s1", "d2", "helped", ts(8))])
    early = verdict("s1", "d1", "noise", ts(10, offset="+01:00"))
    late = verdict("s1", "d1", "wrong", ts(9))  # the same instant
    if earlier_at == later_at:
        write_log(log_root, *earlier_at, [early, late])
        ingest_all(warehouse, log_root)
    else:
        order = [(earlier_at, early), (later_at, late)]
        for at, rec in reversed(order) if ingest_later_first else order:
            write_log(log_root, *at, [rec])
            ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rows(warehouse, "SELECT verdict FROM golden_set WHERE doc_id = 'd1'") == [("wrong",)]


def test_a_later_line_does_not_beat_a_later_ts(warehouse, log_root, tmp_path):
    # 09:00-00:01 is 09:01Z, one minute after the later line's 09:00Z.
    write_log(
        log_root,
        DAY1,
        "part-0001.jsonl",
        [
            S1,
            V2.copy() | {"verdict": "helped"},
            verdict("s1", "d1", "wrong", ts(9, 0, offset="-00:01")),
            verdict("s1", "d1", "noise", ts(9)),
        ],
    )
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rows(warehouse, "SELECT verdict FROM golden_set WHERE doc_id = 'd1'") == [("wrong",)]


def test_tied_serve_times_keep_the_larger_serve_id_in_code_point_order(warehouse, log_root, tmp_path):
    # "s-9" > "s-10" in code-point order, though 9 < 10.
    write_log(
        log_root,
        DAY1,
        "part-0001.jsonl",
        [
            serve("s-9", ts(9), "Fix the refund window", [ranked("d1", 1)]),
            serve("s-10", ts(10, offset="+01:00"), "fix the  REFUND window", [ranked("d1", 1)]),
            verdict("s-9", "d1", "helped", ts(9, 5)),
            verdict("s-10", "d1", "noise", ts(9, 6)),
        ],
    )
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rows(warehouse, "SELECT serve_id, verdict, task FROM golden_set") == [
        ("s-9", "helped", "Fix the refund window")
    ]
    assert rows(warehouse, "SELECT judgments_dropped FROM filter_funnel WHERE step = 'repeats'") == [(1,)]


def test_the_latest_serve_wins_a_repeat_even_when_its_verdict_is_older(warehouse, log_root, tmp_path):
    write_log(
        log_root,
        DAY1,
        "part-0001.jsonl",
        [
            serve("a", ts(10), "Fix it", [ranked("d1", 1)]),
            serve("b", ts(9), "fix IT", [ranked("d1", 1)]),
            verdict("a", "d1", "helped", ts(10, 1)),
            verdict("b", "d1", "noise", ts(12)),
        ],
    )
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rows(warehouse, "SELECT serve_id, verdict, task FROM golden_set") == [("a", "helped", "Fix it")]


# --------------------------------------------------------------------------- side counts


def test_unjudged_orphan_and_unserved_verdict_counts(warehouse, log_root, tmp_path):
    write_log(
        log_root,
        DAY1,
        "part-0001.jsonl",
        [
            serve("s1", ts(9), "t", [always("rule-1"), ranked("d1", 1), ranked("d2", 2), ranked("d3", 3)]),
            serve("s2", ts(9, 1), "u", [always("rule-1"), ranked("d4", 1)]),
            verdict("s1", "d1", "helped", ts(9, 5)),
            verdict("s1", "d1", "noise", ts(9, 6)),  # a second verdict on a judged item: no new item
            verdict("s2", "rule-1", "helped", ts(9, 5)),
            verdict("s1", "d7", "helped", ts(9, 5)),  # s1 never served d7
            verdict("s1", "d7", "noise", ts(9, 7)),
            verdict("s404", "d1", "helped", ts(9, 5)),  # no such serve
            verdict("s404", "d1", "helped", ts(9, 8)),
            verdict("s405", "d2", "wrong", ts(9, 5)),
        ],
    )
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    # Unjudged: s1's rule-1, d2, d3 and s2's d4, across both channels.
    assert build_counts(warehouse, "unjudged_items", "orphan_verdicts", "unserved_item_verdicts") == (4, 3, 2)
    assert judged(warehouse) == 2


def test_an_orphan_verdict_for_a_rejected_serve_stays_an_orphan(warehouse, log_root, tmp_path):
    write_log(
        log_root,
        DAY1,
        "part-0001.jsonl",
        [
            serve("s1", "2026-11-01T09:00:00", "t", [ranked("d1", 1)]),  # no offset: invalid_field
            V1,
        ],
    )
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert build_counts(warehouse, "orphan_verdicts", "unjudged_items") == (1, 0)
    assert [r[2] for r in rejected(warehouse)] == ["invalid_field"]


def test_unserved_item_verdicts_are_kept_out_of_the_golden_set(warehouse, log_root, tmp_path):
    write_log(log_root, DAY1, "part-0001.jsonl", [S1, V1, verdict("s1", "d5", "helped", ts(9, 5))])
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert golden(warehouse) == [("s1", "d1", "helped")]
    assert build_counts(warehouse, "unserved_item_verdicts") == (1,)


def test_a_same_size_rewrite_in_the_tick_it_was_read_is_still_noticed(warehouse, log_root):
    import os

    from goldenset.ingest import ingest_all

    path = log_root / "dt=2026-11-01" / "part-0001.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"event":"verdict","serve_id":"s1","doc_id":"d1","verdict":"helped","ts":"2026-11-01T09:00:00Z"}\n'
    )
    ingest_all(warehouse, log_root)
    stat = path.stat()
    # Same size, same mtime, other content: only "written within the tick it was read" gives it away.
    path.write_text(
        '{"event":"verdict","serve_id":"s1","doc_id":"d1","verdict":"wrong!","ts":"2026-11-01T09:00:00Z"}\n'
    )
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    ingest_all(warehouse, log_root)
    assert warehouse.execute("SELECT reason FROM rejected_records").fetchall() == [("invalid_field",)]


def test_one_task_in_every_white_space_case_and_nfkc_form_is_one_golden_query(warehouse, log_root, tmp_path):
    # Written with each character str.split() splits on, in upper and lower case, with the
    # "ﬁ" ligature and full-width letters (NFKC), and padded: the contract's rule gives one
    # normalised task, "fix the file", so one golden query. ASCII-only forms take the SQL
    # path and the others the Python one: both must land on the same query.
    forms = []
    for w in split_whitespace():
        forms += [f"Fix{w}the{w}file", f"{w}FIX the{w}{w}ﬁle{w}", f"Ｆｉｘ{w}THE file"]
    records = []
    for k, task in enumerate(forms):
        records += [
            serve(f"s{k:03d}", ts(9, k % 60, day=1 + k // 60), task, [ranked("d1", 1)]),
            verdict(f"s{k:03d}", "d1", "helped", ts(10, k % 60, day=1 + k // 60)),
        ]
    write_log(log_root, DAY1, "part-0001.jsonl", records)
    ingest_all(warehouse, log_root)
    publish(warehouse, tmp_path, DOCS)
    assert rejected(warehouse) == []
    want = hashlib.sha256(b"billing\x1ffix the file").hexdigest()[:16]
    assert rows(warehouse, "SELECT DISTINCT query_id FROM golden_set") == [(want,)]
    assert rows(warehouse, "SELECT count(*) FROM log_serves") == [(len(forms),)]
