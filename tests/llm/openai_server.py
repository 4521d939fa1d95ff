"""A small OpenAI-compatible HTTP server on 127.0.0.1 that records what the litellm backends send.

`serve()` runs one in a thread on a random port; tests/llm/conftest.py makes it the `openai_server` fixture.
A test that needs a server too slow for a client's timeout clears `answering` (no answer until it is set again)
rather than sleeping longer than the timeout, and waits for what reached the server with `wait_for_requests`.
It is strict as OpenAI's chat completions endpoint is: a request OpenAI refuses (`request_problem`) gets
HTTP 400 with OpenAI's error body, and its reason is kept in `OpenAIServer.rejected`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EMBEDDING_DIM = 8
USAGE = {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
# The content part types each role may send (OpenAI's chat completions API reference, "messages").
PART_TYPES = {
    "system": {"text"},
    "developer": {"text"},
    "user": {"text", "image_url", "input_audio", "file"},
    "assistant": {"text", "refusal"},
    "tool": {"text"},
}
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # a tool's name, as OpenAI validates it
PARTICIPANT_NAME = re.compile(r"^[^\s<|\\/>]+$")  # a message's `name`, as OpenAI validates it


@dataclass
class OpenAIServer:
    """What the server received, and the faults it is told to answer with next."""

    base_url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_with: list[int] = field(default_factory=list)  # status codes for the next requests, in order
    fail_after: int = 0  # requests answered before `fail_with` applies (a failure mid-run)
    fail_when: Callable[[dict[str, Any]], bool] | None = None  # `fail_with` applies only to bodies it accepts
    # (status, body, headers); a bytes body is sent as it is (a malformed reply), with the headers' Content-Type
    replies: list[tuple[int, dict[str, Any] | bytes, dict[str, str]]] = field(default_factory=list)
    delay_s: float = 0.0
    answering: threading.Event = field(default_factory=threading.Event)  # cleared: every answer waits until set
    arrived: threading.Condition = field(default_factory=threading.Condition)  # notified as each request is recorded
    forged_tool_args: dict[str, Any] = field(default_factory=dict)  # added to every tool call's arguments
    forged_tool_name: str | None = None  # every tool call's name instead of its own (a model that misnames a tool)
    strict: bool = True  # refuse, as OpenAI does, a chat request that breaks its rules
    rejected: list[str] = field(default_factory=list)  # the reason of each request refused with a 400, in order

    def __post_init__(self) -> None:
        self.answering.set()

    def record(self, request: dict[str, Any]) -> None:
        """Keep a request that reached the server, waking whoever waits for it (`wait_for_requests`)."""
        with self.arrived:
            self.requests.append(request)
            self.arrived.notify_all()

    def wait_for_requests(self, n: int, timeout_s: float = 60.0) -> bool:
        """Whether `n` requests have reached the server, waiting for them (`timeout_s` bounds a hang, no timing):
        a handler thread may read a request after the client that sent it gave up."""
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.requests) >= n, timeout_s)

    def tool_calls_made(self) -> list[dict[str, Any]]:
        """Every tool call the server answered with, in order."""
        return [c for r in self.requests for c in r.get("tool_calls", ())]

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"] == path]


def _content_problem(message: dict[str, Any], at: str) -> str | None:
    """Why OpenAI refuses this message's content: a string, or a list of typed parts; null only beside tool_calls."""
    role, content = message["role"], message.get("content")
    if content is None:
        if role == "assistant" and (message.get("tool_calls") or message.get("function_call")):
            return None
        return f"Invalid value for '{at}.content': expected a string or an array of content parts, got null."
    if isinstance(content, str):
        return None
    if not isinstance(content, list) or not content:
        return f"Invalid type for '{at}.content': expected a string or a non-empty array of content parts."
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in PART_TYPES.get(role, set()) or kind not in part:
            return f"Invalid content part '{at}.content[{j}]' for role '{role}': {json.dumps(part)[:80]}"
    return None


def _tool_call_problem(call: Any, at: str) -> str | None:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or call.get("type") != "function" or not isinstance(call.get("id"), str):
        return f"Invalid '{at}': expected an object with id, type 'function' and function."
    if not isinstance(function.get("name"), str) or not isinstance(function.get("arguments"), str):
        return f"Invalid '{at}.function': expected a name and arguments, both strings."
    return None


def _tools_problem(tools: Any) -> str | None:
    """Why OpenAI refuses the `tools` parameter: each a function with a valid name and a JSON-schema object."""
    if not isinstance(tools, list) or not tools:
        return "Invalid 'tools': empty array. Expected an array with minimum length 1."
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or tool.get("type") != "function":
            return f"Invalid 'tools[{i}]': expected an object with type 'function' and function."
        name = function.get("name")
        if not isinstance(name, str) or not FUNCTION_NAME.match(name):
            return f"Invalid 'tools[{i}].function.name': string does not match pattern '{FUNCTION_NAME.pattern}'."
        if "description" in function and not isinstance(function["description"], str):
            return f"Invalid type for 'tools[{i}].function.description': expected a string."
        parameters = function.get("parameters", {"type": "object"})
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            return f"Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"'."
        if not isinstance(parameters.get("properties", {}), dict):
            return f"Invalid schema for function '{name}': 'properties' must be an object."
    return None


def _unanswered(pending: set[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(sorted(pending))}"
    )


def request_problem(body: dict[str, Any]) -> str | None:
    """Why OpenAI's chat completions endpoint answers this body with a 400, or None when it accepts it.

    Its rules on messages and tools: a non-empty `messages`; known roles; content a string or typed parts
    (null only on an assistant message with tool_calls); a `name` without spaces or ``<|\\/>``; every
    assistant `tool_calls` answered by `tool` messages before any other message, and every `tool` message
    answering a call of the assistant message just before its run of results; valid `tools`.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array."
    pending: set[str] = set()  # ids of the last assistant message's tool calls not answered yet
    answerable: set[str] = set()  # ids a tool message may answer here
    for i, message in enumerate(messages):
        at = f"messages[{i}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            return f"Invalid value for '{at}.role': {role!r}. Supported values are: {', '.join(ROLES)}."
        if role != "tool" and pending:
            return _unanswered(pending)
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in answerable:
                return (
                    f"Invalid parameter: '{at}' with role 'tool' must be a response to a preceding message with "
                    f"'tool_calls' (tool_call_id {call_id!r} answers none)."
                )
            pending.discard(call_id)
        elif role != "function":
            answerable = set()
        problem = _content_problem(message, at) if role != "function" else None
        if problem:
            return problem
        name = message.get("name")
        if name is not None and (not isinstance(name, str) or not PARTICIPANT_NAME.match(name)):
            return f"Invalid '{at}.name': string does not match pattern '{PARTICIPANT_NAME.pattern}'."
        calls = message.get("tool_calls") if role == "assistant" else None
        if calls is not None:
            if not isinstance(calls, list) or not calls:
                return f"Invalid '{at}.tool_calls': empty array. Expected an array with minimum length 1."
            for j, call in enumerate(calls):
                problem = _tool_call_problem(call, f"{at}.tool_calls[{j}]")
                if problem:
                    return problem
            answerable = {c["id"] for c in calls}
            pending = set(answerable)
    if pending:
        return _unanswered(pending)
    if "tools" in body:
        return _tools_problem(body["tools"])
    return None


def text_reply(text: str, finish_reason: str = "stop") -> tuple[int, dict[str, Any], dict[str, str]]:
    """A canned chat completion answering `text` (for `OpenAIServer.replies`); ``length``: cut at max_tokens."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "test-model", "usage": USAGE}
    return 200, {**body, "choices": [choice]}, {}


def reply_to(body: dict[str, Any]) -> str:
    """The server's deterministic answer: the last message's content, reversed word by word."""
    return " ".join(reversed(str(body["messages"][-1]["content"]).split()))


def tool_calls_for(body: dict[str, Any], forged: dict[str, Any]) -> list[dict[str, Any]]:
    """The server's deterministic tool use: when tools are offered and the user just spoke, one call.

    A question gets ``memory_search`` (query: the question), a statement ``memory_save`` (content:
    the statement); after a tool result, or with no such tool offered, no call (a text reply).
    """
    last = body["messages"][-1]
    offered = {t["function"]["name"] for t in body.get("tools") or ()}
    if last["role"] != "user" or not offered:
        return []
    text = str(last["content"])
    name, args = ("memory_search", {"query": text}) if "?" in text else ("memory_save", {"content": text})
    if name not in offered:
        return []
    n = len(body["messages"])
    arguments = json.dumps({**args, **forged})
    return [{"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": arguments}}]


def embedding_of(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 - 0.5 for b in digest[:EMBEDDING_DIM]]


def _handler(state: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def _send(self, status: int, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            headers = {"Content-Type": "application/json", **(headers or {})}
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            headers = {name.lower(): value for name, value in self.headers.items()}  # every header, by lower-case name
            authorization = headers.get("authorization")
            state.record({"path": self.path, "body": body, "authorization": authorization, "headers": headers})
            if state.delay_s:
                time.sleep(state.delay_s)
            state.answering.wait()
            problem = request_problem(body) if state.strict and self.path == "/v1/chat/completions" else None
            if problem:
                state.rejected.append(problem)
                error = {"message": problem, "type": "invalid_request_error", "param": None, "code": None}
                self._send(400, {"error": error})
            elif state.replies:
                self._send(*state.replies.pop(0))
            elif (
                state.fail_with
                and len(state.requests) > state.fail_after
                and (state.fail_when is None or state.fail_when(body))
            ):
                status = state.fail_with.pop(0)
                self._send(status, {"error": {"message": f"injected {status}", "type": "server_error", "code": status}})
            elif self.path == "/v1/chat/completions":
                calls = tool_calls_for(body, state.forged_tool_args)
                for call in calls if state.forged_tool_name is not None else ():
                    call["function"]["name"] = state.forged_tool_name
                state.requests[-1]["tool_calls"] = calls
                message: dict[str, Any] = {"role": "assistant", "content": None if calls else reply_to(body)}
                if calls:
                    message["tool_calls"] = calls
                choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
                self._send(
                    200,
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [choice],
                        "usage": USAGE,
                    },
                )
            elif self.path == "/v1/embeddings":
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [{"object": "embedding", "index": i, "embedding": embedding_of(t)} for i, t in enumerate(inputs)]
                usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
                self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

    return Handler


@contextlib.contextmanager
def serve() -> Iterator[OpenAIServer]:
    """A running server and its recorded state; shut down on exit."""
    state = OpenAIServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.answering.set()  # a held answer goes out (to a client long gone) and its handler thread ends
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
