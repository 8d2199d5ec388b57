"""Hostile log input through a real `goldenset build`: every bad line quarantined with its reason,
the good lines of the same file kept, and odd task texts round-tripped byte for byte.

One world is built once for the module: a file mixing good lines with non-UTF-8 bytes,
NaN and Infinity, huge numbers, a 10 MB line (valid and invalid), JSON nested 100,000
deep, and serves whose tasks hold quotes, SQL, tabs, newlines, NUL, emoji and RTL marks;
a truncated gzip file and a corrupt one, each with good lines before the fault.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import unicodedata
import zlib
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.helpers import examples, ranked, serve, verdict
from tests.reliability.harness import corpus_v1, log_day, make_world, ok, read_tables, write_corpus

# Every test here reads a world or a study run built once per module: seconds before the first.
pytestmark = pytest.mark.slow

MB10 = 10 * 1024 * 1024
DEEP = 100_000

# Task texts that break naive code: each is one golden query (distinct after normalisation).
ODD_TASKS = [
    "He said \"stop\" and she said 'go'",
    "'; DROP TABLE golden_set; --",
    "SELECT * FROM log_serves WHERE task = 'x' OR 1=1; -- \"quoted\"",
    "columns\tseparated\tby\ttabs",
    "first line\nsecond line\r\nthird line\rfourth",
    "deploy 🚀 then 👩‍👩‍👧‍👦 and 🇩🇪 flags 🏳️‍🌈",
    "RTL override \u202eevil\u202c and Hebrew שלום \u200fmark\u200e and Arabic مرحبا",
    "  leading and trailing white space  ",
    "zero\u200bwidth and non\u00a0breaking and ideographic\u3000space",
    "NUL \u0000 inside and a bell \u0007 and escape \u001b[31m",
    "backslashes \\ \\\\ \\n (not a newline) and slash / and %s %d {0} ${HOME} $(rm -rf /)",
    "line\u2028separator and paragraph\u2029separator and next-line\u0085char",
    "<script>alert('x')</script> &amp; <b>bold</b>",
    "combining e\u0301 vs \u00e9 and ligature \ufb01 and full-width \uff21\uff22\uff23",
    "x" * 5000 + " a long task",
]
ODD_PROJECT = "team 'ops'; DROP\tTABLE"


def _serve_line(sid: str, task: str, project: str = "billing", **extra) -> str:
    return json.dumps(
        serve(sid, "2026-11-01T09:00:00Z", task, [ranked("d1", 1), ranked("d2", 2)], project=project, **extra),
        ensure_ascii=False,
    )


def _helped(sid: str, doc_id: str = "d1") -> str:
    return json.dumps(verdict(sid, doc_id, "helped", "2026-11-01T10:00:00Z"))


def _head(sid: str) -> str:
    """The start of a serve line of `sid`, without its closing brace (extra fields go after)."""
    return _serve_line(sid, f"task of {sid}")[:-1]


# The mixed file: (line bytes, expected outcome). An outcome is a reject reason, or "ok".
MIXED: list[tuple[bytes, str]] = [
    (_serve_line("h1", "a plain task").encode(), "ok"),
    (_helped("h1").encode(), "ok"),
    (
        b'{"event":"verdict","serve_id":"h1","doc_id":"d2","verdict":"noise\xff\xfe","ts":"2026-11-01T10:00:00Z"}',
        "invalid_json",
    ),
    (b"\x80\x81 not even close to text \xc3\x28", "invalid_json"),
    ((_head("h2") + ',"items2":[{"score":NaN}]}').encode(), "invalid_json"),
    (
        b'{"event":"verdict","serve_id":"h1","doc_id":"d1","verdict":"helped","ts":"2026-11-01T10:00:00Z","x":Infinity}',
        "invalid_json",
    ),
    (
        b'{"event":"verdict","serve_id":"h1","doc_id":"d1","verdict":"helped","ts":"2026-11-01T10:00:00Z","x":-Infinity}',
        "invalid_json",
    ),
    ((_head("h3") + ',"big":1e400,"neg":-1e999,"int":' + "9" * 400 + "}").encode(), "ok"),
    (_helped("h3").encode(), "ok"),
    (
        json.dumps(
            serve(
                "h4",
                "2026-11-01T09:00:00Z",
                "task of h4",
                [
                    ranked("d1", 2**70),
                    {
                        "doc_id": "d2",
                        "doc_version": "v1",
                        "channel": "ranked",
                        "rank": 1,
                        "score": 1.7976931348623157e308,
                    },
                ],
            )
        ).encode(),
        "ok",
    ),
    (_helped("h4").encode(), "ok"),
    ((_head("h5") + ',"pad":"' + "p" * MB10 + '"}').encode(), "ok"),
    (_helped("h5").encode(), "ok"),
    (('{"event":"serve","serve_id":"h6","pad":"' + "q" * MB10).encode(), "invalid_json"),
    ((_head("h7") + ',"deep":' + "[" * DEEP + "]" * DEEP + "}").encode(), "ok"),
    (_helped("h7").encode(), "ok"),
    (_serve_line("h8", "lone surrogate \\ud800 here").replace("\\\\ud800", "\\ud800").encode(), "invalid_json"),
    (b'{"event":"serve","serve_id":"h9","serve_id":"h9b","ts":"2026-11-01T09:00:00Z"}', "invalid_json"),
]
for i, task in enumerate(ODD_TASKS):
    MIXED.append((_serve_line(f"odd{i}", task).encode(), "ok"))
    MIXED.append((_helped(f"odd{i}").encode(), "ok"))
MIXED.append((_serve_line("oddp", "a task of an odd project", project=ODD_PROJECT).encode(), "ok"))
MIXED.append((_helped("oddp").encode(), "ok"))
MIXED.append((_serve_line("last", "the last line has no newline").encode(), "ok"))
LAST = _helped("last").encode()  # written without a trailing newline


def _good_lines(prefix: str, n: int) -> list[bytes]:
    out = []
    for i in range(n):
        out.append(_serve_line(f"{prefix}{i}", f"{prefix} task {i}").encode())
        out.append(_helped(f"{prefix}{i}").encode())
    return out


def _gz(lines: list[bytes]) -> bytes:
    return gzip.compress(b"".join(line + b"\n" for line in lines), mtime=0)


TRUNCATED = _good_lines("trunc", 20)
_truncated_bytes = _gz(TRUNCATED)
TRUNCATED_FILE = _truncated_bytes[: len(_truncated_bytes) * 2 // 3]

# Two gzip members: the first whole, the second with its deflate data overwritten.
CORRUPT_GOOD = _good_lines("corr", 5)
_second = bytearray(_gz(_good_lines("lost", 20)))
_second[12:40] = b"\xff" * 28
CORRUPT_FILE = _gz(CORRUPT_GOOD) + bytes(_second)


def _line_by_line(data: bytes) -> tuple[list[bytes], str]:
    """What Python's gzip module yields line by line before it fails (the rule in docs/reference/decisions.md)."""
    out = []
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            for line in fh:
                out.append(line)
    except (EOFError, OSError, zlib.error) as exc:
        return [x.rstrip(b"\n") for x in out if x.endswith(b"\n")], type(exc).__name__
    raise AssertionError("the file was meant to break")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A world with the hostile files, built once by a real `goldenset build`."""
    world = make_world(tmp_path_factory.mktemp("hostile") / "world")
    day1 = world.logs / "dt=2026-11-01"
    day1.mkdir(parents=True)
    (day1 / "mixed.jsonl").write_bytes(b"".join(line + b"\n" for line, _ in MIXED) + LAST)
    filler = [json.dumps(r).encode() for r in log_day(1) + log_day(2)]
    (day1 / "filler.jsonl").write_bytes(b"\n".join(filler) + b"\n")
    day2 = world.logs / "dt=2026-11-02"
    day2.mkdir(parents=True)
    (day2 / "truncated.jsonl.gz").write_bytes(TRUNCATED_FILE)
    (day2 / "corrupt.jsonl.gz").write_bytes(CORRUPT_FILE)
    write_corpus(world.corpus, corpus_v1())
    built = ok(world.build())
    export = ok(world.run("export", "--out", str(world.root / "export"), "--db", str(world.db)))
    return world, built, export


def _rows(world, sql: str, params=()) -> list[tuple]:
    con = duckdb.connect(str(world.db), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def _rejects(world, file: str) -> dict[int | None, tuple[str, str | None]]:
    return {
        line: (reason, raw)
        for line, reason, raw in _rows(
            world, "SELECT line, reason, raw FROM rejected_records WHERE source_file = ?", [file]
        )
    }


def test_a_hostile_log_is_built_and_published_without_a_traceback(hostile):
    world, built, _ = hostile
    assert "Traceback" not in built.stderr
    assert "build 1 published" in built.stdout


def test_each_bad_line_of_a_mixed_file_is_quarantined_with_its_reason_and_its_raw_text(hostile):
    world, _, _ = hostile
    rejects = _rejects(world, "dt=2026-11-01/mixed.jsonl")
    expected = {n: reason for n, (_, reason) in enumerate(MIXED, start=1) if reason != "ok"}
    assert {n: r for n, (r, _) in rejects.items()} == expected
    for n in expected:
        line = MIXED[n - 1][0]
        raw = rejects[n][1]
        try:
            assert raw == line.decode("utf-8")  # text lines are kept exactly, 10 MB included
        except UnicodeDecodeError:
            assert raw is not None and raw == line.decode("utf-8", errors="replace")


def test_the_good_lines_of_a_mixed_file_are_all_kept(hostile):
    world, _, _ = hostile
    serves = {
        line for (line,) in _rows(world, "SELECT line FROM log_serves WHERE source_file = 'dt=2026-11-01/mixed.jsonl'")
    }
    verdicts = {
        line
        for (line,) in _rows(world, "SELECT line FROM log_verdicts WHERE source_file = 'dt=2026-11-01/mixed.jsonl'")
    }
    good = {n for n, (_, outcome) in enumerate(MIXED, start=1) if outcome == "ok"} | {len(MIXED) + 1}
    assert serves | verdicts == good
    assert not serves & verdicts


def test_huge_numbers_are_valid_and_a_rank_past_64_bits_is_stored_as_null(hostile):
    world, _, _ = hostile
    assert _rows(world, "SELECT doc_id, rank FROM log_serve_items WHERE serve_id = 'h4' ORDER BY doc_id") == [
        ("d1", None),
        ("d2", 1),
    ]
    assert _rows(world, "SELECT count(*) FROM log_serves WHERE serve_id = 'h3'") == [(1,)]


def test_a_valid_10_mb_line_is_accepted_and_an_invalid_one_is_kept_whole_in_the_quarantine(hostile):
    world, _, _ = hostile
    assert _rows(world, "SELECT count(*) FROM golden_set WHERE serve_id = 'h5'") == [(1,)]
    [(length,)] = _rows(world, "SELECT length(raw) FROM rejected_records WHERE raw LIKE '%\"h6\"%'")
    assert length == len('{"event":"serve","serve_id":"h6","pad":"') + MB10


def test_a_serve_nesting_arrays_100000_deep_in_an_unknown_field_is_accepted(hostile):
    world, _, _ = hostile
    assert _rows(world, "SELECT count(*) FROM golden_set WHERE serve_id = 'h7'") == [(1,)]


def test_a_truncated_gzip_keeps_the_lines_before_the_fault_and_records_one_unreadable_file_row(hostile):
    world, _, _ = hostile
    kept, _ = _line_by_line(TRUNCATED_FILE)
    assert 0 < len(kept) < len(TRUNCATED)
    file = "dt=2026-11-02/truncated.jsonl.gz"
    lines = _rows(
        world,
        "SELECT line FROM log_serves WHERE source_file = ? UNION ALL "
        "SELECT line FROM log_verdicts WHERE source_file = ?",
        [file, file],
    )
    assert sorted(n for (n,) in lines) == list(range(1, len(kept) + 1))
    rejects = _rejects(world, file)
    assert list(rejects) == [len(kept) + 1] and rejects[len(kept) + 1][0] == "unreadable_file"


def test_a_corrupt_gzip_member_keeps_the_whole_members_before_it_and_records_one_unreadable_file_row(hostile):
    world, _, _ = hostile
    kept, _ = _line_by_line(CORRUPT_FILE)
    assert len(kept) >= len(CORRUPT_GOOD)
    file = "dt=2026-11-02/corrupt.jsonl.gz"
    serves = _rows(world, "SELECT serve_id FROM log_serves WHERE source_file = ? ORDER BY line", [file])
    assert [s for (s,) in serves][: len(CORRUPT_GOOD) // 2] == [f"corr{i}" for i in range(len(CORRUPT_GOOD) // 2)]
    assert not any(s.startswith("lost") for (s,) in serves)
    rejects = _rejects(world, file)
    assert [r for r, _ in rejects.values()] == ["unreadable_file"]
    (line,) = rejects
    assert line == len(kept) + 1


def _norm(task: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", task).casefold().split())


def _qid(project: str, task: str) -> str:
    return hashlib.sha256(f"{project}\x1f{_norm(task)}".encode()).hexdigest()[:16]


ODD = {f"odd{i}": ("billing", task) for i, task in enumerate(ODD_TASKS)} | {
    "oddp": (ODD_PROJECT, "a task of an odd project")
}


def _display(task: str) -> str:
    """Contract v5: the display form (NFKC, white space folded as str.split() sees it, case kept)."""
    return " ".join(unicodedata.normalize("NFKC", task).split())


def test_odd_task_texts_come_out_of_golden_set_byte_for_byte_under_their_query_ids(hostile):
    world, _, _ = hostile
    rows = {
        sid: (qid, project, task)
        for sid, qid, project, task in _rows(
            world, "SELECT serve_id, query_id, project, task FROM golden_set WHERE serve_id LIKE 'odd%'"
        )
    }
    raw = {(qid, task) for qid, task in _rows(world, "SELECT query_id, task FROM query_variants")}
    assert rows.keys() == ODD.keys()
    for sid, (project, task) in ODD.items():
        qid, got_project, got_task = rows[sid]
        # The set shows the display text (one serve each: its own form); the raw text stays byte for byte.
        assert got_task.encode("utf-8") == _display(task).encode("utf-8"), sid
        assert (qid, task) in raw, sid
        assert got_project.encode("utf-8") == project.encode("utf-8"), sid
        assert qid == _qid(project, task), sid


def _export(world) -> Path:
    return world.root / "export"


def test_every_export_file_round_trips_odd_task_texts_and_keys_qrels_by_query_id(hostile):
    world, _, _ = hostile
    out = _export(world)
    golden = _rows(world, "SELECT query_id, project, task, doc_id, relevance FROM golden_set")
    tasks = {(q, p, t) for q, p, t, _, _ in golden}

    raw = (out / "queries.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    records = [json.loads(line) for line in raw[:-1].split(b"\n")]  # one record a line: newlines escaped
    assert {(r["_id"], r["metadata"]["project"], r["text"]) for r in records} == tasks
    assert len(records) == len(tasks)
    by_id = {r["_id"]: r["text"] for r in records}
    for project, task in ODD.values():
        assert by_id[_qid(project, task)].encode("utf-8") == _display(task).encode("utf-8")

    labels = {(q, d, r) for q, _, _, d, r in golden}
    tsv = (out / "qrels" / "test.tsv").read_bytes().decode("utf-8").split("\n")
    assert tsv[0] == "query-id\tcorpus-id\tscore" and tsv[-1] == ""
    assert {tuple(line.split("\t")) for line in tsv[1:-1]} == {(q, d, str(r)) for q, d, r in labels}
    assert len(tsv) - 2 == len(labels)
    trec = (out / "qrels.trec").read_bytes().decode("utf-8").split("\n")
    assert trec[-1] == ""
    assert {tuple(line.split(" ")) for line in trec[:-1]} == {(q, "0", d, str(r)) for q, d, r in labels}


def test_the_manifest_counts_the_hostile_build(hostile):
    world, _, export = hostile
    manifest = json.loads((_export(world) / "manifest.json").read_text(encoding="utf-8"))
    [(n_queries, n_labels)] = _rows(world, "SELECT count(DISTINCT query_id), count(*) FROM golden_set")
    assert manifest["build_id"] == 1
    assert manifest["counts"]["n_queries"] == n_queries
    assert sum(manifest["labels_by_source"].values()) == n_labels
    assert f"{n_queries} queries, {n_labels} labels" in export.stdout


def test_rejects_lists_every_quarantined_line_with_reason_and_a_cut_raw_line(hostile):
    world, _, _ = hostile
    listed = ok(world.run("rejects", "--json", "--limit", "0", "--db", str(world.db)))
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    stored = read_tables(world.db, {"r": "SELECT source_file, line, reason FROM rejected_records ORDER BY ALL"})["r"]
    assert len(rows) == len(stored)
    assert {(r["source_file"], r["line"], r["reason"]) for r in rows} == set(stored)
    table = ok(world.run("rejects", "--width", "40", "--limit", "0", "--db", str(world.db)))
    assert "invalid_json" in table.stdout and "unreadable_file" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) < 400  # the 10 MB line is cut


# What the contract's rules say of lines that only the nesting makes odd: standard JSON
# nested 100,000 deep is judged like any other line, on either path.
DEEP_CASES = [
    pytest.param(
        (_head("dobj") + ',"deep":' + '{"a":' * DEEP + "1" + "}" * DEEP + "}").encode(),
        "ok",
        id="serve-with-objects-100000-deep-in-an-unknown-field",
    ),
    pytest.param(
        b'{"event":"verdict","serve_id":"h1","doc_id":"d1","verdict":"helped","ts":"2026-11-01T10:00:00Z",'
        b'"deep":' + b'{"a":' * DEEP + b"1" + b"}" * DEEP + b"}",
        "ok",
        id="verdict-with-objects-100000-deep-in-an-unknown-field",
    ),
    pytest.param(b"[" * DEEP + b"]" * DEEP, "not_an_object", id="top-level-array-100000-deep"),
    pytest.param(b'{"a":' * DEEP + b"1" + b"}" * DEEP, "unknown_event", id="object-100000-deep-without-event"),
]


@pytest.mark.parametrize(("line", "outcome"), DEEP_CASES)
def test_json_nested_100000_deep_is_judged_by_the_contracts_rules_not_by_the_parsers_depth(line, outcome, tmp_path):
    from goldenset.ingest import ingest_all
    from goldenset.warehouse import connect

    day = tmp_path / "logs" / "dt=2026-11-01"
    day.mkdir(parents=True)
    (day / "a.jsonl").write_bytes(line + b"\n")
    con = connect(tmp_path / "g.duckdb")
    try:
        (report,) = ingest_all(con, tmp_path / "logs")
    finally:
        con.close()
    assert report.reasons == ({} if outcome == "ok" else {outcome: 1})


# Bytes around the edges of UTF-8: continuation bytes, overlong and surrogate leads, the
# last code points, bytes that never occur (no line breaks: the line stays one line).
_EDGE_BYTES = st.lists(
    st.sampled_from([0x41, 0x7F, 0x80, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF])
    | st.integers(0x00, 0xFF).filter(lambda b: b not in (0x0A, 0x0D)),
    max_size=8,
).map(bytes)
_AROUND = (
    b'{"event":"serve","serve_id":"s1","ts":"2026-11-01T09:00:00Z","project":"p","task":"t",'
    b'"items":[{"doc_id":"d1","doc_version":"v1","channel":"ranked","rank":1}]}\n'
)
_AFTER = b'{"event":"verdict","serve_id":"s1","doc_id":"d1","verdict":"helped","ts":"2026-11-01T09:05:00Z"}\n'


# Each byte class that decides how a line is judged, written out so that every run tries it;
# the random examples add mixtures of them.
@example(middle=b"")
@example(middle=b"A\x7f")  # ASCII up to DEL: valid
@example(middle="é\uff5e😀".encode())  # two-, three- and four-byte sequences: valid
@example(middle=b"\xef\xbb\xbf")  # a byte order mark inside a string: valid
@example(middle=b"\x80")  # a continuation byte without a lead
@example(middle=b"\xc2")  # a lead byte cut short by the closing quote
@example(middle=b"\xf0\x9f\x98")  # a four-byte sequence cut short
@example(middle=b"\xc0\x80")  # an overlong NUL
@example(middle=b"\xe0\x80\xaf")  # an overlong three-byte slash
@example(middle=b"\xed\xa0\x80")  # a UTF-16 surrogate
@example(middle=b"\xf4\x90\x80\x80")  # past U+10FFFF
@example(middle=b"\xf5\xff")  # bytes that never occur in UTF-8
@example(middle=b"\x00")  # NUL: a control character JSON forbids in a string
@example(middle=b"\x1f")  # the last control character
@example(middle=b'"')  # a quote ends the string early
@example(middle=b"\\")  # a backslash escapes the closing quote
@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(middle=_EDGE_BYTES)
def test_a_line_of_any_bytes_is_judged_as_the_exact_rules_judge_it(tmp_path_factory, middle):
    # DuckDB checks each chunk's UTF-8; a chunk it refuses is read again by the exact
    # rules. Either way the odd line is accepted or rejected as records.parse_line
    # decides, and the lines around it are kept.
    from goldenset.ingest import ingest_all
    from goldenset.records import Rejected, parse_line
    from goldenset.warehouse import connect

    line = (
        b'{"event":"verdict","serve_id":"s1","doc_id":"d' + middle + b'","verdict":"noise","ts":"2026-11-01T09:07:00Z"}'
    )
    try:
        parse_line(line)
        expected: list = []
    except Rejected as exc:
        expected = [(2, exc.reason)]
    day = tmp_path_factory.mktemp("logs") / "dt=2026-11-01"
    day.mkdir()
    (day / "part-0001.jsonl").write_bytes(_AROUND + line + b"\n" + _AFTER)
    con = connect(tmp_path_factory.mktemp("db") / "g.duckdb")
    try:
        ingest_all(con, day.parent)
        assert con.execute("SELECT line, reason FROM log_rejects").fetchall() == expected
        assert con.execute("SELECT count(*) FROM log_verdicts").fetchall() == [(2 - len(expected),)]
        assert con.execute("SELECT serve_id FROM log_serves").fetchall() == [("s1",)]
    finally:
        con.close()
