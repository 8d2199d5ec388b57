"""Properties of the build over random small logs (contract sections 1 and 3).

"Where no tie is involved, line order and the split of lines into files do not
change the result", re-reading never duplicates anything, and a rebuild on
unchanged input adds a build but no label versions. The generated logs avoid
every tie: serve times are distinct, and so is every verdict time.

Hypothesis reuses function-scoped fixtures across examples, so each example
makes its own temporary folder and DuckDB file.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tempfile
import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from goldenset.ingest import ingest_all
from tests.helpers import always, doc, examples, new_warehouse, publish, ranked, rows, serve, verdict, write_log

pytestmark = pytest.mark.slow

EXAMPLES = settings(
    max_examples=examples(15),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
DAY1, DAY2 = "2026-11-01", "2026-11-02"
EPOCH = datetime(2026, 11, 1, 8, 0)

# d2 is served at v1 and v2 but v2 is current; d3 is retired; d4 is superseded by d5.
CORPUS = [
    doc("d1"),
    doc("d2", "v2"),
    doc("d3", status="retired"),
    doc("d4", superseded_by="d5"),
    doc("d5"),
    doc("d6"),
    doc("rule-1"),
]
SERVED_DOCS = ["d1", "d2", "d3", "d4", "d5", "d6", "rule-1"]
PROJECTS = ["billing", "search"]
TASKS = ["fix the refund window", "straße rules"]


# --------------------------------------------------------------------------- generating logs


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


TASK_VARIANTS = [
    lambda t: t,
    str.upper,
    str.title,
    lambda t: t.replace(" ", "  "),
    lambda t: "\t" + t.replace(" ", "\u00a0") + " ",
    lambda t: t.replace(" ", "\u3000"),
    _fullwidth,
    lambda t: t.replace("ß", "SS").upper(),
]


def ts_at(minutes: int, offset_hours: int) -> str:
    """The instant EPOCH + minutes, written with an offset of offset_hours."""
    local = EPOCH + timedelta(minutes=minutes, hours=offset_hours)
    suffix = "Z" if offset_hours == 0 else f"{offset_hours:+03d}:00"
    return local.strftime("%Y-%m-%dT%H:%M:%S") + suffix


offsets = st.sampled_from([0, 0, 1, -2])


def distinct_minutes(n: int, max_gap: int):
    """n distinct minute offsets in random order: no two serves (or verdicts) tie."""
    gaps = st.lists(st.integers(1, max_gap), min_size=n, max_size=n)
    return gaps.map(lambda g: [sum(g[: i + 1]) for i in range(n)]).flatmap(st.permutations)


@st.composite
def serve_logs(draw) -> list[str]:
    """The lines of a small tie-free log, in a random but fixed order."""
    n = draw(st.sampled_from(range(1, 7)))
    serve_minutes = draw(distinct_minutes(n, 30))
    records: list[dict] = []
    served: list[tuple[str, str]] = []
    for i, minute in enumerate(serve_minutes):
        serve_id = f"s{i}"
        task = draw(st.sampled_from(TASK_VARIANTS))(draw(st.sampled_from(TASKS)))
        docs = draw(st.lists(st.sampled_from(SERVED_DOCS), min_size=1, max_size=4, unique=True))
        items = []
        for rank, d in enumerate(docs, start=1):
            if d == "rule-1" or draw(st.sampled_from(["ranked"] * 5 + ["always"])) == "always":
                items.append(always(d))
            else:
                items.append(ranked(d, rank, draw(st.sampled_from(["v1", "v1", "v2"]))))
        records.append(
            serve(
                serve_id,
                ts_at(minute, draw(offsets)),
                task,
                items,
                project=draw(st.sampled_from(PROJECTS)),
                session_id=f"sess-{i}",
            )
        )
        served += [(serve_id, d) for d in docs]

    # Most served items get a verdict or two; a few verdicts are orphans ("ghost") or
    # name a doc their serve did not serve ("d9").
    targets = [pair for pair in served for _ in range(draw(st.sampled_from([0, 1, 1, 2])))]
    targets += draw(st.lists(st.sampled_from([("ghost", "d1"), ("s0", "d9")]), max_size=2))
    verdict_minutes = draw(distinct_minutes(len(targets), 90))
    for (serve_id, d), minute in zip(targets, verdict_minutes, strict=False):
        records.append(
            verdict(
                serve_id, d, draw(st.sampled_from(["helped", "helped", "noise", "wrong"])), ts_at(minute, draw(offsets))
            )
        )

    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    # Identical repeats of serves, written differently (keys reversed, another session).
    for k in draw(st.lists(st.integers(0, n - 1), max_size=2)):
        again = dict(reversed(list({**records[k], "session_id": "other"}.items())))
        lines.append(json.dumps(again))
    lines += [""] * draw(st.integers(0, 2))
    if draw(st.sampled_from([False] * 5 + [True])):
        lines.append("not json")
    return lines


def _shapes() -> list[str]:
    """A log by hand with each shape the generator draws now and then: one query written three
    ways (case, full width, offsets), a later verdict replacing an earlier one, an always-served
    item, retired, superseded and older-version documents, an orphan verdict, a verdict on an
    unserved item, a repeated serve written differently, blank lines and a line that is not JSON."""
    s0 = serve(
        "s0",
        ts_at(10, 0),
        "fix the refund window",
        [ranked("d1", 1), ranked("d2", 2), always("rule-1")],
        project="billing",
        session_id="sess-0",
    )
    s1 = serve(
        "s1",
        ts_at(40, 1),
        "FIX THE REFUND WINDOW",
        [ranked("d1", 1), ranked("d4", 2), ranked("d3", 3)],
        project="billing",
        session_id="sess-1",
    )
    s2 = serve(
        "s2", ts_at(25, -2), _fullwidth("straße rules"), [ranked("d6", 1, "v2"), ranked("d5", 2)], project="search"
    )
    records = [
        s0,
        s1,
        s2,
        verdict("s0", "d1", "helped", ts_at(50, 0)),
        verdict("s0", "d1", "wrong", ts_at(70, 1)),
        verdict("s0", "d2", "noise", ts_at(55, 0)),
        verdict("s0", "rule-1", "helped", ts_at(56, -2)),
        verdict("s1", "d1", "noise", ts_at(60, -2)),
        verdict("s1", "d4", "helped", ts_at(61, 0)),
        verdict("s1", "d3", "helped", ts_at(62, 0)),
        verdict("s2", "d6", "wrong", ts_at(63, 1)),
        verdict("s2", "d5", "helped", ts_at(64, 0)),
        verdict("ghost", "d1", "helped", ts_at(65, 0)),
        verdict("s0", "d9", "helped", ts_at(66, 0)),
    ]
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    lines.append(json.dumps(dict(reversed(list({**s1, "session_id": "other"}.items())))))
    return [*lines, "", "", "not json"]


SHAPES = _shapes()


# --------------------------------------------------------------------------- running the pipeline


def outcome(con):
    """What the latest build computed: sorted golden-set rows, its funnel and its counts."""
    return (
        golden_set_now(con),
        rows(
            con,
            "SELECT step, judgments_dropped, judgments_left, units_left FROM filter_funnel "
            "WHERE build_id = (SELECT max(build_id) FROM golden_builds) ORDER BY step_order",
        ),
        rows(
            con,
            "SELECT n_queries, n_projects, n_helped, n_noise, n_wrong, unjudged_items, orphan_verdicts, "
            "unserved_item_verdicts, lines_read, lines_rejected FROM golden_builds "
            "WHERE build_id = (SELECT max(build_id) FROM golden_builds)",
        ),
    )


def golden_set_now(con):
    return rows(
        con,
        "SELECT query_id, project, task, doc_id, doc_version, verdict, relevance, serve_id, "
        "judged_at, stale_reason FROM golden_set ORDER BY ALL",
    )


def run(files: dict[tuple[str, str], list[str]]):
    """Write the files into a fresh LOGS tree, ingest, build; the build's outcome."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for (dt, name), lines in files.items():
            write_log(tmp / "logs", dt, name, lines)
        con = new_warehouse(tmp / "g.duckdb")
        try:
            ingest_all(con, tmp / "logs")
            publish(con, tmp, CORPUS)
            return outcome(con)
        finally:
            con.close()


ONE_FILE = (DAY1, "part-0001.jsonl")


# --------------------------------------------------------------------------- the properties


LAYOUTS = {
    "one file": ((DAY1, "part-0001.jsonl"), (DAY1, "part-0001.jsonl")),
    "two files": ((DAY1, "part-0001.jsonl"), (DAY1, "part-0002.jsonl.gz")),
    "two partitions": ((DAY1, "part-0001.jsonl"), (DAY2, "part-0001.jsonl")),
    "later lines in the earlier partition": ((DAY2, "part-0001.jsonl"), (DAY1, "part-0009.jsonl.gz")),
}


# Every layout is compared for each drawn log (one reference build, four split builds), and
# the reference also meets the independent reading below.
@settings(EXAMPLES, max_examples=examples(6))
@given(st.data())
def test_line_order_and_the_split_into_files_do_not_change_the_build(data):
    # One contract sentence, one test: the variant permutes the lines and then cuts them
    # into two files or partitions (or none); the failure names the layout that broke.
    lines = data.draw(serve_logs())
    permuted = data.draw(st.permutations(lines))
    cut = data.draw(st.integers(0, len(lines)))
    reference = run({ONE_FILE: lines})
    assert sorted(reference[0], key=_row_key) == expected_golden_set(lines)
    for layout in sorted(LAYOUTS):
        first, second = LAYOUTS[layout]
        files = {first: permuted[:cut]}
        files[second] = files.get(second, []) + permuted[cut:]
        assert run(files) == reference, f"layout {layout!r}, cut at line {cut}"


def quarantine(con):
    return rows(con, "SELECT source_file, line, reason, raw FROM rejected_records ORDER BY ALL")


@settings(EXAMPLES, max_examples=examples(8))
@example(lines=SHAPES, data=None)
@given(serve_logs(), st.data())
def test_re_reading_the_logs_never_duplicates_anything(lines, data):
    # Three ways back over the same lines: an unchanged re-run (skipped by size and
    # mtime), a rehash of unchanged bytes, and a recompressed file (new bytes, same
    # lines) that must replace its rows rather than add to them.
    cut = len(lines) // 2 if data is None else data.draw(st.integers(0, len(lines)))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        logs = tmp / "logs"
        write_log(logs, DAY1, "part-0001.jsonl", lines[:cut])
        gz = logs / f"dt={DAY2}" / "part-0001.jsonl.gz"
        gz.parent.mkdir(parents=True)
        gz.write_bytes(gzip.compress("".join(line + "\n" for line in lines[cut:]).encode(), mtime=1))
        con = new_warehouse(tmp / "g.duckdb")
        try:
            ingest_all(con, logs)
            publish(con, tmp, CORPUS)
            first, quarantined = outcome(con), quarantine(con)

            ingest_all(con, logs)
            ingest_all(con, logs, partitions=[DAY1], rehash=True)
            gz.write_bytes(gzip.compress("".join(line + "\n" for line in lines[cut:]).encode(), mtime=2))
            ingest_all(con, logs, partitions=[DAY2], rehash=True)
            publish(con, tmp, CORPUS)
            assert outcome(con) == first
            assert quarantine(con) == quarantined
        finally:
            con.close()


@settings(EXAMPLES, max_examples=examples(8))
@example(SHAPES)
@given(serve_logs())
def test_rebuilding_on_unchanged_input_adds_a_build_but_no_label_versions(lines):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_log(tmp / "logs", *ONE_FILE, lines)
        con = new_warehouse(tmp / "g.duckdb")
        try:
            ingest_all(con, tmp / "logs")
            publish(con, tmp, CORPUS)
            first = outcome(con)
            history = rows(con, "SELECT * FROM label_history ORDER BY ALL")
            assert len(history) == len(golden_set_now(con))

            publish(con, tmp, CORPUS)
            assert rows(con, "SELECT build_id FROM golden_builds ORDER BY build_id") == [(1,), (2,)]
            assert rows(con, "SELECT * FROM label_history ORDER BY ALL") == history
            assert rows(con, "SELECT count(*) FROM label_changes WHERE to_build = 2") == [(0,)]
            assert outcome(con) == first
        finally:
            con.close()


# --------------------------------------------------------------------------- an independent reading


def _instant(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)


def _norm(task: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", task).casefold().split())


def expected_golden_set(lines: list[str]) -> list[tuple]:
    """Contract section 3 on a tie-free log, written out in plain Python."""
    serves, winners = {}, {}
    for text in lines:
        try:
            rec = json.loads(text)
        except ValueError:
            continue
        if rec["event"] == "serve":
            serves.setdefault(rec["serve_id"], rec)
        elif (key := (rec["serve_id"], rec["doc_id"])) not in winners or _instant(rec["ts"]) > _instant(
            winners[key]["ts"]
        ):
            winners[key] = rec
    active = {d["doc_id"]: d for d in CORPUS if d["status"] == "active"}
    judgments = [
        (s, item, winners[(s["serve_id"], item["doc_id"])])
        for s in serves.values()
        for item in s["items"]
        if (s["serve_id"], item["doc_id"]) in winners and item["channel"] == "ranked" and item["doc_id"] in active
    ]
    latest = lambda j: (_instant(j[0]["ts"]), j[0]["serve_id"])  # noqa: E731
    queries: dict[tuple[str, str], dict[str, tuple]] = {}
    for j in judgments:
        labels = queries.setdefault((j[0]["project"], _norm(j[0]["task"])), {})
        if j[1]["doc_id"] not in labels or latest(j) > latest(labels[j[1]["doc_id"]]):
            labels[j[1]["doc_id"]] = j
    out = []
    for (project, norm), labels in queries.items():
        if not any(v["verdict"] == "helped" for _, _, v in labels.values()):
            continue
        qid = hashlib.sha256(f"{project}\x1f{norm}".encode()).hexdigest()[:16]
        # Contract v5: the display form (NFKC, white space folded, case kept) most serves carried,
        # ties to the form whose latest serve is later.
        forms: dict[str, list[tuple]] = {}
        for s in serves.values():
            if (s["project"], _norm(s["task"])) == (project, norm):
                form = " ".join(unicodedata.normalize("NFKC", s["task"]).split())
                forms.setdefault(form, []).append((_instant(s["ts"]), s["serve_id"]))
        task = max(forms, key=lambda f: (len(forms[f]), max(forms[f])))
        for s, item, v in labels.values():
            d = active[item["doc_id"]]
            stale = (
                "superseded"
                if d["superseded_by"]
                else "version_changed"
                if d["version"] != item["doc_version"]
                else None
            )
            out.append(
                (
                    qid,
                    project,
                    task,
                    item["doc_id"],
                    item["doc_version"],
                    v["verdict"],
                    int(v["verdict"] == "helped"),
                    s["serve_id"],
                    _instant(v["ts"]),
                    stale,
                )
            )
    return sorted(out, key=lambda r: tuple("" if x is None else x for x in r[:8]))


def _row_key(row: tuple) -> tuple:
    return tuple("" if x is None else x for x in row[:8])


@settings(EXAMPLES, max_examples=examples(12))
@example(SHAPES)
@given(serve_logs())
def test_the_golden_set_matches_an_independent_reading_of_the_contract(lines):
    got = run({ONE_FILE: lines})[0]
    assert sorted(got, key=_row_key) == expected_golden_set(lines)
