"""The LLM judge (contract 8.3) against a local stub of its endpoint: good, malformed, slow and failing answers."""

from __future__ import annotations

import json
import time

import pytest
from judge_stub import Reply, answer, good

from goldenset.errors import UsageError
from goldenset.scoring import ScorerError
from goldenset.scoring.judge import (
    ENV_API_KEY,
    PROMPT_VERSION,
    InvalidAnswer,
    JudgeAnswer,
    JudgeClient,
    JudgeSettings,
    build_messages,
    hallucination_share,
    invalid_counts,
    validate_answer,
)

PASSAGE = "Refunds are issued within 14 days. Store credit never expires."
QUERY = "How long do refunds take?"


def client(stub_url, timeout=5.0, **kw):
    settings = JudgeSettings(stub_url, "stub-model", backoff=kw.pop("backoff", 0.01), **kw)
    return JudgeClient(settings, timeout=timeout)


# --------------------------------------------------------------------------- good answers and the request
def test_a_good_answer_comes_back_typed(judge_stub, monkeypatch):
    monkeypatch.delenv(ENV_API_KEY, raising=False)
    judge_stub.push(good(2, "The passage gives the refund window.", "Refunds are issued within 14 days."))
    got = client(judge_stub.url).ask(QUERY, PASSAGE)
    assert got == JudgeAnswer(2, "The passage gives the refund window.", "Refunds are issued within 14 days.")


def test_the_request_is_a_temperature_zero_chat_completion_with_the_prompt(judge_stub, monkeypatch):
    monkeypatch.delenv(ENV_API_KEY, raising=False)
    judge_stub.push(good(0))
    client(judge_stub.url + "/", task="Answers refund questions.", as_of="2026-08-01").ask(QUERY, PASSAGE)
    (seen,) = judge_stub.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.body["model"] == "stub-model"
    assert seen.body["temperature"] == 0
    system, user = seen.body["messages"]
    assert system["role"] == "system" and '"supporting_span"' in system["content"]
    assert user["role"] == "user"
    assert user["content"] == (
        "The system being tested: Answers refund questions.\n\n"
        "Judge as of 2026-08-01: a passage that is not in force on that date does not "
        f"answer.\n\nQuery:\n{QUERY}\n\nPassage:\n{PASSAGE}"
    )
    assert "authorization" not in seen.headers


def test_the_api_key_goes_in_a_bearer_header_when_set(judge_stub, monkeypatch):
    monkeypatch.setenv(ENV_API_KEY, "sk-test-123")
    judge_stub.push(good(0))
    client(judge_stub.url).ask(QUERY, PASSAGE)
    assert judge_stub.requests[0].headers["authorization"] == "Bearer sk-test-123"


def test_a_url_ending_in_v1_is_not_doubled(judge_stub):
    judge_stub.push(good(0))
    client(judge_stub.url + "/v1").ask(QUERY, PASSAGE)
    assert judge_stub.requests[0].path == "/v1/chat/completions"


def test_the_prompt_without_task_or_date_is_query_and_passage_only():
    system, user = build_messages("q?", "p.")
    assert user["content"] == "Query:\nq?\n\nPassage:\np."
    assert "at most 30 words" in system["content"]
    _, user = build_messages("q?", "p.", as_of="from_query")
    assert user["content"].startswith("The date that matters is part of the query")


def test_the_scorer_version_names_the_prompt_version(judge_stub):
    assert client(judge_stub.url).version == f"judge-prompt-v{PROMPT_VERSION}"


# --------------------------------------------------------------------------- malformed answers, over HTTP
_31 = " ".join(["word"] * 31)
_30 = " ".join(["word"] * 30)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('Sure! {"score": 2, "rationale_summary": "x", "supporting_span": "Refunds"}', "not_json"),
        ('{"score": 2, "rationale_summary": "x", "supporting_span": "Refunds"} Hope this helps.', "not_json"),
        ('```json\n{"score": 2, "rationale_summary": "x", "supporting_span": "Refunds"}\n```', "not_json"),
        ("The passage is relevant.", "not_json"),
        ("", "not_json"),
        ('{"score": NaN, "rationale_summary": "x"}', "not_json"),
        ('{"score": 1, "score": 2, "supporting_span": "Refunds"}', "not_json"),
        ('{"score": 0} {"score": 0}', "not_json"),
        ('[{"score": 0}]', "not_json"),
        ('{"score": 1.0, "rationale_summary": "x", "supporting_span": "Refunds"}', "bad_score"),
        ('{"score": true, "rationale_summary": "x", "supporting_span": "Refunds"}', "bad_score"),
        ('{"score": "1", "rationale_summary": "x", "supporting_span": "Refunds"}', "bad_score"),
        ('{"score": 3, "rationale_summary": "x", "supporting_span": "Refunds"}', "bad_score"),
        ('{"score": -1, "rationale_summary": "x"}', "bad_score"),
        ('{"rationale_summary": "x", "supporting_span": "Refunds"}', "bad_score"),
        (json.dumps({"score": 2, "rationale_summary": _31, "supporting_span": "Refunds"}), "long_rationale"),
        ('{"score": 0, "rationale_summary": 7}', "long_rationale"),
        (
            '{"score": 2, "rationale_summary": "x", "supporting_span": "Refunds are issued within 30 days."}',
            "hallucinated_span",
        ),
        ('{"score": 1, "rationale_summary": "x", "supporting_span": "refunds are issued"}', "hallucinated_span"),
        ('{"score": 2, "rationale_summary": "x", "supporting_span": ""}', "hallucinated_span"),
        ('{"score": 2, "rationale_summary": "x"}', "hallucinated_span"),
        ('{"score": 1, "rationale_summary": "x", "supporting_span": ["Refunds"]}', "hallucinated_span"),
    ],
)
def test_a_malformed_answer_is_invalid_with_its_reason(judge_stub, content, reason):
    judge_stub.push(answer(content))
    got = client(judge_stub.url).ask(QUERY, PASSAGE)
    assert isinstance(got, InvalidAnswer)
    assert got.reason == reason
    assert got.raw == content
    assert len(judge_stub.requests) == 1  # an invalid answer is never asked again


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            f'  \n{{"score": 2, "rationale_summary": "{_30}", "supporting_span": "Store credit never expires."}}\n ',
            JudgeAnswer(2, _30, "Store credit never expires."),
        ),
        ('{"score": 0}', JudgeAnswer(0, "", "")),
        # White space as str.strip() sees it, not only JSON's: a no-break space, an ideographic space.
        ('\u00a0{"score": 0}\u3000', JudgeAnswer(0, "", "")),
        (
            '{"score": 0, "rationale_summary": null, "supporting_span": "made up", "confidence": 0.9}',
            JudgeAnswer(0, "", "made up"),
        ),
        (
            '{"score": 1, "rationale_summary": "Partly.", "supporting_span": "14 days", "extra": {"a": 1}}',
            JudgeAnswer(1, "Partly.", "14 days"),
        ),
    ],
)
def test_answers_at_the_edges_are_valid(content, expected):
    # 30 words is the limit, not past it; a score-0 span is not checked; other keys are ignored.
    assert validate_answer(content, PASSAGE) == expected


def test_the_first_reason_that_applies_wins():
    assert validate_answer(json.dumps({"score": 3, "rationale_summary": _31}), PASSAGE).reason == "bad_score"
    assert (
        validate_answer(json.dumps({"score": 2, "rationale_summary": _31, "supporting_span": "nope"}), PASSAGE).reason
        == "long_rationale"
    )


def test_a_message_without_text_content_is_not_json(judge_stub):
    judge_stub.push(Reply(200, body=json.dumps({"choices": [{"message": {"role": "assistant", "content": None}}]})))
    got = client(judge_stub.url).ask(QUERY, PASSAGE)
    assert isinstance(got, InvalidAnswer) and got.reason == "not_json"


# --------------------------------------------------------------------------- transport
def test_a_slow_answer_beyond_the_timeout_is_an_error(judge_stub):
    judge_stub.push(Reply(200, content='{"score": 0}', delay=3.0))
    start = time.monotonic()
    with pytest.raises(ScorerError, match=r"failed after 1 attempt\(s\): no answer within 0.5 s"):
        client(judge_stub.url, timeout=0.5).ask(QUERY, PASSAGE)
    assert time.monotonic() - start < 2.0  # the budget covers the whole call, retries included


def test_http_500_then_success_is_retried(judge_stub):
    judge_stub.push(Reply(500, body="overloaded"), good(0))
    assert client(judge_stub.url).ask(QUERY, PASSAGE) == JudgeAnswer(0, "It states the rule.", "")
    assert len(judge_stub.requests) == 2


def test_http_429_is_retried(judge_stub):
    judge_stub.push(Reply(429, body="slow down"), good(0))
    assert isinstance(client(judge_stub.url).ask(QUERY, PASSAGE), JudgeAnswer)
    assert len(judge_stub.requests) == 2


def test_always_500_is_an_error_after_the_bounded_retries(judge_stub):
    judge_stub.push(*[Reply(500, body="down")] * 5)
    with pytest.raises(ScorerError, match=r"failed after 3 attempt\(s\): HTTP 500"):
        client(judge_stub.url, max_attempts=3).ask(QUERY, PASSAGE)
    assert len(judge_stub.requests) == 3


def test_a_client_error_status_is_an_error_without_retry(judge_stub):
    judge_stub.push(Reply(401, body='{"error": "bad key"}'), good(0))
    with pytest.raises(ScorerError, match=f"answered HTTP 401.*check --judge-url, --judge-model and {ENV_API_KEY}"):
        client(judge_stub.url).ask(QUERY, PASSAGE)
    assert len(judge_stub.requests) == 1


def test_a_200_that_is_not_a_chat_completion_is_an_error(judge_stub):
    judge_stub.push(Reply(200, body="<html>proxy login</html>"))
    with pytest.raises(ScorerError, match="without choices"):
        client(judge_stub.url).ask(QUERY, PASSAGE)


def test_connection_refused_is_an_error_after_the_retries(closed_port_url):
    with pytest.raises(ScorerError, match=r"failed after 3 attempt\(s\): ConnectError"):
        client(closed_port_url).ask(QUERY, PASSAGE)


@pytest.mark.parametrize(
    ("url", "model", "message"),
    [
        ("127.0.0.1:8080", "m", "is not an http"),
        ("http://127.0.0.1:8080", "", "--judge-model is empty"),
    ],
)
def test_bad_judge_settings_are_usage_errors(url, model, message):
    with pytest.raises(UsageError, match=message):
        JudgeSettings(url, model)


# --------------------------------------------------------------------------- health
def test_health_is_the_share_of_hallucinated_spans_among_answers():
    answers = [
        JudgeAnswer(2, "", "x"),
        InvalidAnswer("hallucinated_span", "", ""),
        InvalidAnswer("not_json", "", ""),
        JudgeAnswer(0, "", ""),
    ]
    assert hallucination_share(answers) == 0.25
    assert hallucination_share([]) == 0.0
    assert invalid_counts(answers) == {"not_json": 1, "bad_score": 0, "long_rationale": 0, "hallucinated_span": 1}


# --------------------------------------------------------------------------- the probe
def test_the_probe_passes_when_the_server_lists_the_model(judge_stub):
    client(judge_stub.url).probe()
    assert judge_stub.probes == ["/v1/models"]
    assert judge_stub.requests == []  # a probe asks no chat completion


def test_the_probe_refuses_a_model_the_server_does_not_list(judge_stub):
    judge_stub.models = ["qwen2.5-7b-instruct", "llama3:latest"]
    with pytest.raises(
        ScorerError,
        match=r"does not serve model 'stub-model' \(it serves qwen2.5-7b-instruct, "
        r"llama3:latest\); pass one of those as --judge-model",
    ):
        client(judge_stub.url).probe()


def test_the_probe_accepts_ollamas_latest_spelling(judge_stub):
    judge_stub.models = ["stub-model:latest"]
    assert client(judge_stub.url).probe() is None  # raised ScorerError before the :latest spelling
    assert judge_stub.probes == ["/v1/models"]
    # Only the `:latest` tag stands for the bare name: another tag is another model.
    judge_stub.models = ["stub-model:7b"]
    with pytest.raises(ScorerError, match=r"does not serve model 'stub-model' \(it serves stub-model:7b\)"):
        client(judge_stub.url).probe()


def test_the_probe_lets_a_server_without_a_model_listing_through(judge_stub):
    judge_stub.models = None  # GET /v1/models answers 404
    assert client(judge_stub.url).probe() is None
    assert judge_stub.probes == ["/v1/models"]  # it did ask, and took the 404 as "no listing"
    assert judge_stub.requests == []


def test_the_probe_of_a_closed_port_is_one_line_naming_the_url(closed_port_url):
    with pytest.raises(ScorerError) as exc:
        client(closed_port_url).probe()
    message = str(exc.value)
    assert message.startswith(f"judge at {closed_port_url} is unreachable (ConnectError")
    assert message.endswith("check --judge-url and that the server is up")
    assert "\n" not in message
