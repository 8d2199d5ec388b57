"""The LLM judge (contract 8.3): an OpenAI-compatible chat-completions client and the checks on its answers.

- Request: `POST {url}/v1/chat/completions` (a trailing `/v1` on the url is not
  doubled), body `{"model", "messages", "temperature": 0}`, header
  `Authorization: Bearer $GOLDENSET_JUDGE_API_KEY` when that variable is set
  and not empty. The prompt is versioned by PROMPT_VERSION, which is part of
  the judge scorer's version, so a new prompt never reuses cached answers.
- Time: one call (retries included) gets `timeout` seconds in all; each attempt
  gets what is left. Retries (at most `max_attempts` attempts, backoff
  `backoff * 2**(attempt-1)` seconds) follow transport errors, timeouts, HTTP
  429 and 5xx only. Any other HTTP status, or a 200 whose body is not a
  chat-completions object, is an error at once. What remains after the
  attempts is a `ScorerError`: an *error*, never an invalid answer.
- Answer: the message content, stripped of white space at both ends, must be
  exactly one strict JSON object (no NaN, no repeated key). Invalid, first
  reason that applies: `not_json`, `bad_score` (missing, or not the JSON
  integer 0, 1 or 2: 1.0, true and "1" are bad), `long_rationale` (more than
  30 words by str.split(); a rationale that is not a string is not a sentence
  either), `hallucinated_span` (score > 0 and the span empty, not a string, or
  not a verbatim substring of the passage: case and white space count). Other
  keys are ignored; a missing or null rationale or span is the empty string. An
  invalid answer is returned, never retried: asking again until it passes
  would turn the check into a lottery.
- Probe: before the first pair, `probe()` sends one `GET {url}/v1/models`. A
  transport failure (refused, no route, DNS, timeout) or HTTP 401/403 stops the
  run with one line instead of failing every pair after its retries; when the
  server lists its models and `--judge-model` is not among them (nor
  `MODEL:latest`, Ollama's spelling), that stops it too. Any other answer (a
  server without the listing: 404, 405, 501) lets the run go on: the listing is
  a courtesy of most servers, not part of the chat-completions API.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx

from goldenset.errors import UsageError
from goldenset.jsonstrict import StrictJSONError, loads
from goldenset.scoring import ScorerError

PROMPT_VERSION = "1"
ENV_API_KEY = "GOLDENSET_JUDGE_API_KEY"
REASONS = ("not_json", "bad_score", "long_rationale", "hallucinated_span")
MAX_RATIONALE_WORDS = 30
PROBE_TIMEOUT = 10.0
SCORES = (0, 1, 2)
_MISSING = object()

SYSTEM_PROMPT = """\
You judge whether a passage answers a query, for a retrieval test set.

Reply with exactly one JSON object and nothing else: no prose before or after it, no code fence.
The object has three keys:
- "score": 2 if the passage answers the query, 1 if it answers only part of it, 0 if it does not answer it.
- "rationale_summary": one sentence of at most 30 words saying why.
- "supporting_span": text copied verbatim from the passage that supports the score, character for \
character (not a paraphrase, not from the query); "" when the score is 0.

Example: {"score": 2, "rationale_summary": "The passage states the refund window.", \
"supporting_span": "Refunds are issued within 14 days."}"""


def build_messages(
    query: str, passage: str, *, task: str | None = None, as_of: str | None = None
) -> list[dict[str, str]]:
    """The chat messages of prompt version PROMPT_VERSION: the instructions, then the case to judge."""
    parts = []
    if task:
        parts.append(f"The system being tested: {' '.join(task.split())}")
    if as_of == "from_query":
        parts.append("The date that matters is part of the query: a passage not in force then does not answer.")
    elif as_of:
        parts.append(f"Judge as of {as_of}: a passage that is not in force on that date does not answer.")
    parts.append(f"Query:\n{query}")
    parts.append(f"Passage:\n{passage}")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n\n".join(parts)}]


@dataclass(frozen=True)
class JudgeAnswer:
    """A valid answer: the 0/1/2 score, the one-sentence reason and the verbatim span."""

    score: int
    rationale: str
    span: str


@dataclass(frozen=True)
class InvalidAnswer:
    """An answer that breaks 8.3's shape: the first reason that applies, what exactly, the raw content."""

    reason: str
    detail: str
    raw: str


def _shown(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)[:60]
    except (TypeError, ValueError):
        return repr(value)[:60]


def validate_answer(content: Any, passage: str) -> JudgeAnswer | InvalidAnswer:
    """Check one message content against 8.3; the first failing reason wins."""
    if not isinstance(content, str):
        return InvalidAnswer("not_json", f"the message content is {_shown(content)}, not text", "")
    raw = content
    try:
        obj = loads(content.strip().encode("utf-8"))
    except StrictJSONError as exc:
        return InvalidAnswer("not_json", f"not exactly one strict JSON object ({exc})", raw)
    if not isinstance(obj, dict):
        return InvalidAnswer("not_json", f"a JSON {type(obj).__name__}, not an object", raw)
    score = obj.get("score", _MISSING)
    if score is _MISSING:
        return InvalidAnswer("bad_score", "score is missing", raw)
    # type() rather than isinstance: true is a bool, and bool is an int subclass.
    if type(score) is not int or score not in SCORES:
        return InvalidAnswer("bad_score", f"score is {_shown(score)}, not the JSON integer 0, 1 or 2", raw)
    rationale = obj.get("rationale_summary")
    rationale = "" if rationale is None else rationale
    if not isinstance(rationale, str):
        return InvalidAnswer("long_rationale", f"rationale_summary is {_shown(rationale)}, not a sentence", raw)
    words = len(rationale.split())
    if words > MAX_RATIONALE_WORDS:
        return InvalidAnswer(
            "long_rationale", f"rationale_summary has {words} words, more than {MAX_RATIONALE_WORDS}", raw
        )
    span = obj.get("supporting_span")
    span = "" if span is None else span
    if score > 0:
        if not isinstance(span, str) or not span:
            return InvalidAnswer("hallucinated_span", f"score {score} with supporting_span {_shown(span)}", raw)
        if span not in passage:
            return InvalidAnswer(
                "hallucinated_span", f"supporting_span {_shown(span)} is not a verbatim substring of the passage", raw
            )
    return JudgeAnswer(score, rationale, span if isinstance(span, str) else "")


def invalid_counts(answers: Iterable[JudgeAnswer | InvalidAnswer]) -> dict[str, int]:
    """Invalid answers by reason, every reason present (0 included), in 8.3's order."""
    counts = dict.fromkeys(REASONS, 0)
    for a in answers:
        if isinstance(a, InvalidAnswer):
            counts[a.reason] = counts.get(a.reason, 0) + 1
    return counts


def hallucination_share(answers: Iterable[JudgeAnswer | InvalidAnswer]) -> float:
    """The judge's health figure: hallucinated spans over answers received (errors are not answers); 0 if none."""
    items = list(answers)
    if not items:
        return 0.0
    return sum(1 for a in items if isinstance(a, InvalidAnswer) and a.reason == "hallucinated_span") / len(items)


@dataclass(frozen=True)
class JudgeSettings:
    """Where the judge is and what it is told: --judge-url, --judge-model, the rubric's task and as_of."""

    url: str
    model: str
    task: str | None = None
    as_of: str | None = None
    max_attempts: int = 3
    backoff: float = 0.5

    def __post_init__(self):
        if not self.url.startswith(("http://", "https://")):
            raise UsageError(f"--judge-url {self.url!r} is not an http(s) URL; use e.g. http://127.0.0.1:8080")
        if not self.model:
            raise UsageError("--judge-model is empty; name the model the server serves, e.g. qwen2.5-7b-instruct")
        if self.max_attempts < 1:
            raise UsageError(f"judge max_attempts {self.max_attempts!r} must be at least 1")

    @property
    def base(self) -> str:
        """The server root: the url without a trailing `/` or `/v1`."""
        base = self.url.rstrip("/")
        return base[: -len("/v1")] if base.endswith("/v1") else base

    @property
    def endpoint(self) -> str:
        return f"{self.base}/v1/chat/completions"

    @property
    def models_endpoint(self) -> str:
        return f"{self.base}/v1/models"


def _retryable(status: int) -> bool:
    return status == 429 or status >= 500


class JudgeClient:
    """One judge endpoint: `ask(query, passage)` returns a JudgeAnswer or InvalidAnswer, or raises ScorerError."""

    def __init__(
        self,
        settings: JudgeSettings,
        *,
        timeout: float = 30.0,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ):
        if not timeout > 0:
            raise UsageError(f"--timeout {timeout!r} must be a positive number of seconds, e.g. 30")
        self.settings = settings
        self.timeout = float(timeout)
        key = api_key if api_key is not None else os.environ.get(ENV_API_KEY, "")
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._http = httpx.Client(headers=headers, timeout=httpx.Timeout(self.timeout), transport=transport)

    @property
    def version(self) -> str:
        return f"judge-prompt-v{PROMPT_VERSION}"

    def request_body(self, query: str, passage: str) -> dict[str, Any]:
        """The JSON body posted for one pair."""
        s = self.settings
        return {
            "model": s.model,
            "messages": build_messages(query, passage, task=s.task, as_of=s.as_of),
            "temperature": 0,
        }

    def ask(self, query: str, passage: str) -> JudgeAnswer | InvalidAnswer:
        """Post one pair; retry transport failures, 429 and 5xx within the time budget; check the answer."""
        s = self.settings
        body = self.request_body(query, passage)
        deadline = time.monotonic() + self.timeout
        last = "no attempt made"
        attempts = 0
        for attempt in range(1, s.max_attempts + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            attempts = attempt
            try:
                resp = self._http.post(s.endpoint, json=body, timeout=httpx.Timeout(remaining))
            except httpx.TimeoutException:
                last = f"no answer within {self.timeout:g} s"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if resp.status_code == 200:
                    return validate_answer(self._content(resp), passage)
                if not _retryable(resp.status_code):
                    raise ScorerError(
                        f"judge at {s.endpoint} answered HTTP {resp.status_code}: "
                        f"{resp.text[:200]!r}; check --judge-url, --judge-model and {ENV_API_KEY}"
                    )
                last = f"HTTP {resp.status_code}"
            if attempt < s.max_attempts:
                pause = min(s.backoff * 2 ** (attempt - 1), max(0.0, deadline - time.monotonic()))
                time.sleep(pause)
        raise ScorerError(
            f"judge at {s.endpoint} failed after {attempts} attempt(s): {last}; "
            "check that the server is up, or raise --timeout"
        )

    def probe(self) -> None:
        """Check once that the server answers and serves the model; ScorerError (one line) when not."""
        s = self.settings
        try:
            resp = self._http.get(s.models_endpoint, timeout=httpx.Timeout(min(self.timeout, PROBE_TIMEOUT)))
        except httpx.TransportError as exc:
            raise ScorerError(
                f"judge at {s.url} is unreachable ({type(exc).__name__}: {exc}); check --judge-url "
                "and that the server is up"
            ) from None
        if resp.status_code in (401, 403):
            raise ScorerError(
                f"judge at {s.url} refused the request (HTTP {resp.status_code}); set {ENV_API_KEY} to a key it accepts"
            )
        if resp.status_code != 200:
            return
        try:
            served = [str(m["id"]) for m in resp.json()["data"]]
        except (ValueError, KeyError, TypeError):
            return
        if served and s.model not in served and f"{s.model}:latest" not in served:
            shown = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
            raise ScorerError(
                f"judge at {s.url} does not serve model {s.model!r} (it serves {shown}); "
                "pass one of those as --judge-model"
            )

    def _content(self, resp: httpx.Response) -> Any:
        try:
            data = resp.json()
            return data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ScorerError(
                f"judge at {self.settings.endpoint} answered 200 without choices[0].message.content "
                f"({type(exc).__name__}): {resp.text[:200]!r}; is it an OpenAI-compatible server?"
            ) from None

    def close(self) -> None:
        self._http.close()
