"""A local stand-in for an OpenAI-compatible judge: a real HTTP server on 127.0.0.1, scripted per request.

The LLM is a service outside this machine, so this stub is the one fake the tests
allow. Each chat request takes the next scripted `Reply` (status, message content or
raw body, delay before answering) and is recorded with its path, headers and
JSON body. With the script empty, `answer_by(fn)` picks the reply from the request
body (so a test can answer per passage, whatever order the pairs come in). An
unscripted request gets HTTP 599, which no test expects.

`GET /v1/models` (the judge's probe) lists `models` (default: stub-model), or
answers 404 when `models` is None; probes are recorded apart, in `probes`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    status: int = 200
    content: str | None = None  # the message content, wrapped in a chat-completions body
    body: str | None = None  # a raw body instead
    delay: float = 0.0


def answer(content: str, delay: float = 0.0) -> Reply:
    return Reply(200, content=content, delay=delay)


def good(score: int = 2, rationale: str = "It states the rule.", span: str = "") -> Reply:
    return answer(json.dumps({"score": score, "rationale_summary": rationale, "supporting_span": span}))


def passage_of(body: dict) -> str:
    """The passage a chat request asks about (the text after 'Passage:' in the user message)."""
    return body["messages"][-1]["content"].split("Passage:\n", 1)[1]


@dataclass(frozen=True)
class Seen:
    path: str
    headers: dict[str, str]
    body: dict


class JudgeStub:
    """Start with `start()`; `url` is the server root; `push` scripts replies; `requests` lists what came."""

    def __init__(self):
        self.script: deque[Reply] = deque()
        self.requests: list[Seen] = []
        self.probes: list[str] = []
        self.models: list[str] | None = ["stub-model"]
        self.chooser: Callable[[dict], Reply] | None = None
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                with stub._lock:
                    stub.requests.append(
                        Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"{}"))
                    )
                    body = stub.requests[-1].body
                    if stub.script:
                        reply = stub.script.popleft()
                    elif stub.chooser is not None:
                        reply = stub.chooser(body)
                    else:
                        reply = Reply(599, body="stub: no scripted reply")
                self._send(reply)

            def do_GET(self):
                with stub._lock:
                    stub.probes.append(self.path)
                    models = stub.models
                if self.path != "/v1/models" or models is None:
                    self._send(Reply(404, body='{"error": "not found"}'))
                else:
                    self._send(
                        Reply(
                            200,
                            body=json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in models]}),
                        )
                    )

            def _send(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.body is not None:
                    payload = reply.body.encode()
                else:
                    payload = json.dumps(
                        {
                            "id": "stub",
                            "object": "chat.completion",
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": reply.content},
                                    "finish_reason": "stop",
                                }
                            ],
                        }
                    ).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to tell it

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True  # a handler still sleeping must not hold up stop()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer_by(self, chooser: Callable[[dict], Reply]) -> JudgeStub:
        """Answer requests the script does not cover with chooser(request body)."""
        self.chooser = chooser
        return self

    def push(self, *replies: Reply) -> JudgeStub:
        with self._lock:
            self.script.extend(replies)
        return self

    def start(self) -> JudgeStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
