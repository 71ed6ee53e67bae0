"""A local OpenAI-compatible chat-completions server, scripted per test.

This is the one test double of the control plane's tests, allowed because no language
model can be reached from these machines. It is written from the documented wire format of
`POST /v1/chat/completions` (non-streaming): the request's `model`, `messages` and `tools`
(`{"type": "function", "function": {"name", "description", "parameters"}}`, names matching
`^[a-zA-Z0-9_-]{1,64}$` or the API answers 400), the bearer key (401 when wrong), and the
answer `{"id", "object": "chat.completion", "created", "model", "choices": [{"index",
"message": {"role": "assistant", "content", "tool_calls": [{"id", "type": "function",
"function": {"name", "arguments"}}]}, "finish_reason": "stop"|"tool_calls"}], "usage"}`;
errors are `{"error": {"message", "type", "param", "code"}}` with their HTTP status, and
429 carries `retry-after-ms` as the API does. Tests drive it with the REAL `openai` client
(through `OpenAICompatibleClient`), so the client's encoding, retries and parsing are the
real ones.

A script is a list of replies taken in order, or a function of the request; each request is
recorded (`server.requests`). Replies: `tool_call(name, arguments)`, `text(content)`,
`error(status)`, `garbage(body)`, `hold(event)` (answers only once `event` is set, for
tests that stop a gateway while it waits for the model).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ids = itertools.count(1)


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # a dict (JSON) or a str (sent as is)
    headers: dict[str, str] = field(default_factory=dict)
    hold: threading.Event | None = None
    then: Reply | None = None  # what to answer once `hold` is set


def _completion(model: str, message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def tool_call(name: str, arguments: dict[str, Any] | str, content: str | None = None) -> Reply:
    """The model calls function `name` (the name as offered, e.g. cortex__add_entity); a str is sent raw."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    call = {"id": f"call_{next(_ids)}", "type": "function", "function": {"name": name, "arguments": raw}}
    return Reply(
        body={
            "message": {"role": "assistant", "content": content, "tool_calls": [call]},
            "finish": "tool_calls",
        }
    )


def text(content: str) -> Reply:
    return Reply(body={"message": {"role": "assistant", "content": content}, "finish": "stop"})


def json_text(value: Any) -> Reply:
    return text(json.dumps(value, ensure_ascii=False))


def error(status: int, message: str = "scripted failure") -> Reply:
    kinds = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_exceeded"}
    headers = {"retry-after-ms": "10"} if status == 429 else {}
    body = {
        "error": {"message": message, "type": kinds.get(status, "server_error"), "param": None, "code": None}
    }
    return Reply(status=status, body=body, headers=headers)


def garbage(body: str) -> Reply:
    return Reply(body=body)


def hold(event: threading.Event, then: Reply) -> Reply:
    return Reply(hold=event, then=then)


Script = list[Reply] | Callable[[dict[str, Any]], Reply]


def request_kind(body: dict[str, Any]) -> str:
    """What the control plane asked: route (tools offered), plan, revise or evaluate (by the prompt)."""
    if body.get("tools"):
        return "route"
    prompt = " ".join(str(m.get("content")) for m in body.get("messages", []))
    if '{"steps"' in prompt and "You plan tool use" in prompt:
        return "plan"
    if "Does the rest of the plan still fit" in prompt:
        return "revise"
    if "You judge whether a goal is achieved" in prompt:
        return "evaluate"
    return "chat"


class FakeOpenAI:
    def __init__(self, script: Script, *, api_key: str = "sk-test-fake-key-0123456789") -> None:
        self.script = script
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def kinds(self) -> list[str]:
        return [request_kind(body) for body in self.requests]

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if callable(self.script):
                return self.script(body)
            if not self.script:
                return error(500, "the test's script has no reply left for this request")
            return self.script.pop(0)

    def _check(self, body: Any, auth: str | None) -> Reply | None:
        """What the real API refuses before any model runs."""
        if auth != f"Bearer {self.api_key}":
            return error(401, "Incorrect API key provided.")
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return error(400, "you must provide a model parameter")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return error(400, "'messages' must be a non-empty array")
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in (
                "system",
                "user",
                "assistant",
                "tool",
                "developer",
            ):
                return error(400, f"Invalid value for 'messages[{index}].role'")
        if body.get("stream"):
            return error(400, "this fake answers non-streaming requests only")
        for index, tool in enumerate(body.get("tools") or []):
            function = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(function, dict) or tool.get("type") != "function":
                return error(400, f"Invalid 'tools[{index}]': expected a function tool")
            if not FUNCTION_NAME.match(str(function.get("name", ""))):
                return error(
                    400,
                    f"Invalid 'tools[{index}].function.name': string does not match pattern '^[a-zA-Z0-9_-]{{1,64}}$'",
                )
            parameters = function.get("parameters", {"type": "object"})
            if not isinstance(parameters, dict) or parameters.get("type") != "object":
                return error(
                    400,
                    f"Invalid schema for function '{function.get('name')}': schema must be a JSON Schema of 'type: \"object\"'",
                )
        if len(body.get("tools") or []) > 128:
            return error(400, "Invalid 'tools': array too long. Expected an array with maximum length 128")
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(error(404, f"Unknown request URL: POST {self.path}"), "")
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(error(400, "We could not parse the JSON body of your request."), "")
                    return
                refused = fake._check(body, self.headers.get("Authorization"))
                if refused is not None:
                    self._send(refused, body.get("model", "") if isinstance(body, dict) else "")
                    return
                reply = fake._next(body)
                if reply.hold is not None:
                    reply.hold.wait(60)
                    reply = reply.then or error(500, "held without a reply")
                self._send(reply, body["model"])

            def _send(self, reply: Reply, model: str) -> None:
                if isinstance(reply.body, str):
                    payload = reply.body.encode()
                elif reply.status == 200 and isinstance(reply.body, dict) and "message" in reply.body:
                    payload = json.dumps(
                        _completion(model, reply.body["message"], reply.body["finish"])
                    ).encode()
                else:
                    payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client went away (a killed gateway)
                    pass

        return Handler


@contextmanager
def fake_openai(script: Script, **kwargs: Any) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(script, **kwargs).start()
    try:
        yield server
    finally:
        server.stop()
