"""`goldenset judge label` end to end: the queue of a real build and pool, the judge a local stub (judge_stub.py).

The queue (fixed_rankers.py over world.py) holds 12 pooled pairs: Q1 x d1 .. d4, Q2 x
d5 .. d8, Q3 x d9, p1 .. p3. The stub answers by passage (REPLIES): good answers of
each score, malformed ones of every kind, a slow one and a failing one.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from judge_stub import Reply, answer, good, passage_of
from world import DOC_OF, Q1, Q3, RUBRIC, TEXT, judge_label

from goldenset.labelling.lines import parse_label_line
from goldenset.labelling.rubric import load_rubric

# Each request's timeout: d8's reply (2.5 s) comes too late, the others in time.
STUB_TIMEOUT = "0.5"
SPAN = {d: TEXT[d].split(":")[0] for d in TEXT}  # "Policy text of d1": verbatim in the passage
LONG = " ".join(["word"] * 31)
REPLIES = {
    "d1": good(2, "It gives the refund window.", SPAN["d1"]),
    "d2": good(1, "Only half of it.", SPAN["d2"]),
    "d3": good(0, "Off topic.", ""),
    "d4": good(2, "States it.", SPAN["d4"]),
    "d5": answer('Sure! {"score": 2, "rationale_summary": "x", "supporting_span": ""}'),
    "d6": good(2, "States it.", "refunds within 99 days"),
    "d7": good(1, LONG, SPAN["d7"]),
    "d8": answer('{"score": 0, "rationale_summary": "late", "supporting_span": ""}', delay=2.5),  # > --timeout
    "d9": answer('{"score": 3, "rationale_summary": "very", "supporting_span": "Policy"}'),
    "p1": Reply(500, body='{"error": "overloaded"}'),  # every attempt
    "p2": answer('```json\n{"score": 0, "rationale_summary": "no", "supporting_span": ""}\n```'),
    "p3": good(0, "No.", ""),
}
EXPECTED_JSON = {
    "scored": 12,
    "labels_written": 5,
    "invalid": {"not_json": 2, "bad_score": 1, "long_rationale": 1, "hallucinated_span": 1, "no_label_for_grade": 0},
    "errors": 2,
}


@pytest.fixture
def queued(tmp_path, worlds):
    """A build of the world and a pool over it: 12 pairs in the labelling queue (world.pool_world)."""
    return worlds(tmp_path / "w", pooled=True)


def lines_of(world, annotator="qwen"):
    files = sorted(world.labels.glob(f"dt=*/judge-{annotator}.jsonl"))
    return files, [json.loads(x) for f in files for x in f.read_text().splitlines()]


@pytest.fixture
def stub_by_passage(judge_stub):
    judge_stub.answer_by(lambda body: REPLIES[DOC_OF[passage_of(body)]])
    return judge_stub


@pytest.mark.slow
def test_json_counts_labels_written_every_invalid_reason_and_transport_errors(capsys, queued, stub_by_passage):
    # 2 s a row leaves room for p1's retries (backoff 0.5 s, then 1 s); d8 answers after 2.5 s.
    # 7 of the 12 rows are unusable (5 invalid, 2 errors): above half, so the run is incomplete (exit 6,
    # contract 13.1), after printing its JSON and writing its 5 lines.
    assert judge_label(queued, stub_by_passage.url, "--json", timeout="2") == 6
    assert json.loads(capsys.readouterr().out) == EXPECTED_JSON
    # p1's 500 is retried (3 attempts); d8's timeout used the whole budget (1 attempt).
    asked = [DOC_OF[passage_of(r.body)] for r in stub_by_passage.requests]
    assert sorted(set(asked)) == sorted(REPLIES)
    assert asked.count("p1") == 3 and asked.count("d8") == 1


@pytest.mark.slow
def test_each_valid_answer_is_a_label_line_the_build_accepts(capsys, queued, stub_by_passage):
    before = datetime.now(UTC).replace(tzinfo=None)
    assert judge_label(queued, stub_by_passage.url, "--json", "--max-unusable", "1", timeout=STUB_TIMEOUT) == 0
    after = datetime.now(UTC).replace(tzinfo=None)
    files, lines = lines_of(queued)
    today = before.date().isoformat()
    assert [f.relative_to(queued.labels).as_posix() for f in files] == [f"dt={today}/judge-qwen.jsonl"]
    rubric = load_rubric(RUBRIC)
    by_doc = {line["doc_id"]: line for line in lines}
    # grade 2 -> relevant (pass-only rule: the first dimension decides); 1 -> partial (its fail
    # clause names coverage); 0 -> irrelevant (any_fail: answerability comes first).
    assert {d: (x["query_id"], x["label"], x["decided_by"]) for d, x in by_doc.items()} == {
        "d1": (Q1, "relevant", "answerability"),
        "d2": (Q1, "partial", "coverage"),
        "d3": (Q1, "irrelevant", "answerability"),
        "d4": (Q1, "relevant", "answerability"),
        "p3": (Q3, "irrelevant", "answerability"),
    }
    for line in lines:
        rec = parse_label_line(json.dumps(line).encode(), rubric)
        assert (rec.kind, rec.annotator, rec.rubric, rec.doc_version) == ("judge", "qwen", "support-policies", "v1")
        assert before <= rec.ts <= after
        assert line["ts"].endswith("Z") and len(line["ts"]) == len("2026-12-01T10:00:00.123456Z")
        assert (line["judge_model"], line["judge_prompt_version"]) == ("stub-model", "1")
    assert (by_doc["d1"]["rationale_summary"], by_doc["d1"]["supporting_span"]) == (
        "It gives the refund window.",
        "Policy text of d1",
    )
    assert by_doc["d3"]["supporting_span"] == ""


@pytest.mark.slow
def test_the_readable_report_gives_the_hallucinated_span_share_as_the_health_figure(capsys, queued, stub_by_passage):
    assert judge_label(queued, stub_by_passage.url, "--max-unusable", "1", timeout=STUB_TIMEOUT) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("judge qwen: asked 12 of 12 queue rows; 5 label lines written to ")
    # 12 asked - 2 transport errors = 10 answers; one has a hallucinated span.
    assert out[1] == "health: 1 hallucinated span in 10 answers (10.0%); 2 transport errors"
    rows = {tuple(c.strip() for c in line.strip("│").split("│")) for line in out if line.startswith("│")}
    assert ("no_label_for_grade", "0") in rows and ("not_json", "2") in rows


@pytest.mark.slow
def test_the_prompt_carries_the_rubrics_task_and_date_and_the_golden_task(capsys, queued, stub_by_passage):
    assert judge_label(queued, stub_by_passage.url, "--json", "--max-unusable", "1", timeout=STUB_TIMEOUT) == 0
    body = next(r.body for r in stub_by_passage.requests if DOC_OF[passage_of(r.body)] == "d5")
    user = body["messages"][1]["content"]
    assert user.startswith("The system being tested: A support-agent-facing assistant that answers")
    assert "Judge as of 2026-08-01" in user
    assert f"Query:\nWhen do API tokens expire?\n\nPassage:\n{TEXT['d5']}" in user
    assert (body["model"], body["temperature"]) == ("stub-model", 0)


def test_a_score_no_rubric_label_has_is_invalid_no_label_for_grade(capsys, queued, judge_stub, tmp_path):
    rubric = tmp_path / "two-grades.yaml"
    rubric.write_text(
        "name: support-policies\ntask: Answer policy questions.\ndimensions:\n"
        "  answerability: The passage answers it.\nlabels:\n"
        "  relevant: {grade: 2, pass: [answerability]}\n"
        "  irrelevant: {grade: 0, fail: [answerability]}\n"
    )
    judge_stub.answer_by(lambda body: good(1, "Half.", SPAN[DOC_OF[passage_of(body)]]))
    # Nothing usable came back: the run is incomplete (exit 6, contract 13.1), not a silent 0.
    assert judge_label(queued, judge_stub.url, "--json", rubric=rubric, timeout=STUB_TIMEOUT) == 6
    out = json.loads(capsys.readouterr().out)
    assert out == {
        "scored": 12,
        "labels_written": 0,
        "invalid": {
            "not_json": 0,
            "bad_score": 0,
            "long_rationale": 0,
            "hallucinated_span": 0,
            "no_label_for_grade": 12,
        },
        "errors": 0,
    }
    assert lines_of(queued) == ([], [])


def test_two_labels_of_one_grade_give_the_first_in_file_order(capsys, queued, judge_stub, tmp_path):
    # Contract: the judge's score maps to the first rubric label, in file order, of that grade.
    rubric = tmp_path / "shared-grade.yaml"
    rubric.write_text(
        "name: support-policies\ntask: Answer policy questions.\ndimensions:\n"
        "  answerability: The passage answers it.\n  coverage: Every clause is addressed.\nlabels:\n"
        "  answers: {grade: 2, pass: [answerability], fail: [coverage]}\n"
        "  relevant: {grade: 2, pass: [answerability, coverage]}\n"
        "  irrelevant: {grade: 0, fail: [answerability]}\n"
    )
    judge_stub.answer_by(lambda body: good(2, "States it.", SPAN[DOC_OF[passage_of(body)]]))
    assert judge_label(queued, judge_stub.url, "--json", rubric=rubric, timeout=STUB_TIMEOUT) == 0
    assert json.loads(capsys.readouterr().out)["labels_written"] == 12
    _, lines = lines_of(queued)
    assert sorted(line["doc_id"] for line in lines) == sorted(REPLIES)  # the 12 queued pairs
    assert {line["label"] for line in lines} == {"answers"}


def test_a_second_run_appends_to_the_days_file(capsys, queued, judge_stub):
    judge_stub.answer_by(lambda body: good(0))
    assert judge_label(queued, judge_stub.url, "--json", timeout=STUB_TIMEOUT) == 0
    assert judge_label(queued, judge_stub.url, "--json", timeout=STUB_TIMEOUT) == 0
    files, lines = lines_of(queued)
    assert len(files) == 1 and len(lines) == 24
    assert [x["doc_id"] for x in lines[:12]] == [x["doc_id"] for x in lines[12:]]


def test_an_empty_queue_asks_nothing_and_says_to_pool(tmp_path, capsys, judge_stub, worlds):
    world = worlds(tmp_path / "w")
    assert judge_label(world, judge_stub.url, "--json", timeout=STUB_TIMEOUT) == 0
    got = capsys.readouterr()
    assert json.loads(got.out) == {
        "scored": 0,
        "labels_written": 0,
        "invalid": {
            "not_json": 0,
            "bad_score": 0,
            "long_rationale": 0,
            "hallucinated_span": 0,
            "no_label_for_grade": 0,
        },
        "errors": 0,
    }
    assert "the labelling queue is empty: run `goldenset pool` first" in got.err
    assert judge_stub.requests == [] and judge_stub.probes == []


def test_a_judge_that_cannot_be_reached_exits_1_before_writing_anything(capsys, queued, closed_port_url):
    assert judge_label(queued, closed_port_url, "--json", timeout=STUB_TIMEOUT) == 1
    got = capsys.readouterr()
    assert got.out == ""
    assert got.err.startswith(f"Error: judge at {closed_port_url} is unreachable (ConnectError")
    assert got.err.count("\n") == 1
    assert lines_of(queued) == ([], [])


def test_a_model_the_server_does_not_serve_exits_1(capsys, queued, judge_stub):
    judge_stub.models = ["qwen2.5-7b-instruct"]
    assert judge_label(queued, judge_stub.url, timeout=STUB_TIMEOUT) == 1
    assert capsys.readouterr().err == (
        f"Error: judge at {judge_stub.url} does not serve model 'stub-model' "
        "(it serves qwen2.5-7b-instruct); pass one of those as --judge-model\n"
    )
    assert judge_stub.requests == []


@pytest.mark.slow
def test_every_row_failing_in_transport_exits_1(capsys, queued, judge_stub):
    judge_stub.answer_by(lambda body: Reply(503, body="{}"))
    assert judge_label(queued, judge_stub.url, "--json", timeout="0.2") == 1
    got = capsys.readouterr()
    assert json.loads(got.out)["errors"] == 12
    assert got.err.startswith("Error: the judge answered none of the 12 rows asked: judge at ")


# 65 characters: the labelling page and the Label Studio import refuse it, and so does the judge.
@pytest.mark.parametrize("name", ["a/b", "", "ana smith", "../x", "j" * 65])
def test_an_annotator_name_that_cannot_name_a_file_is_wrong_usage(capsys, queued, judge_stub, name):
    assert judge_label(queued, judge_stub.url, annotator=name, timeout=STUB_TIMEOUT) == 2
    assert capsys.readouterr().err.startswith(f"Error: --annotator {name!r} must match [A-Za-z0-9._-]{{1,64}}")
    assert not queued.labels.exists()


def test_an_open_rubric_is_refused(capsys, queued, judge_stub):
    from pathlib import Path

    import goldenset

    open_rubric = Path(goldenset.__file__).parent / "data" / "open-rubric.yaml"
    assert judge_label(queued, judge_stub.url, rubric=open_rubric, timeout=STUB_TIMEOUT) == 1
    assert "is open" in capsys.readouterr().err
    assert judge_stub.requests == []
