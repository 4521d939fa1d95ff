"""A small OpenAI-compatible HTTP server on 127.0.0.1 that records what the litellm backends send.

`serve()` runs one in a thread on a random port; tests/llm/conftest.py makes it the `openai_server` fixture.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EMBEDDING_DIM = 8
USAGE = {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}


@dataclass
class OpenAIServer:
    """What the server received, and the faults it is told to answer with next."""

    base_url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_with: list[int] = field(default_factory=list)  # status codes for the next requests, in order
    replies: list[tuple[int, dict[str, Any], dict[str, str]]] = field(default_factory=list)  # (status, body, headers)
    delay_s: float = 0.0
    forged_tool_args: dict[str, Any] = field(default_factory=dict)  # added to every tool call's arguments

    def tool_calls_made(self) -> list[dict[str, Any]]:
        """Every tool call the server answered with, in order."""
        return [c for r in self.requests for c in r.get("tool_calls", ())]

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"] == path]


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

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"path": self.path, "body": body, "authorization": self.headers["Authorization"]})
            if state.delay_s:
                time.sleep(state.delay_s)
            if state.replies:
                self._send(*state.replies.pop(0))
            elif state.fail_with:
                status = state.fail_with.pop(0)
                self._send(status, {"error": {"message": f"injected {status}", "type": "server_error", "code": status}})
            elif self.path == "/v1/chat/completions":
                calls = tool_calls_for(body, state.forged_tool_args)
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
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
