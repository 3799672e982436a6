"""A loopback OpenAI-compatible provider that answers from a script (malformed, failing or hanging too):
real HTTP, reached through litellm."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from occusim.llm import ModelConfig

from ._chat_replies import chat_stream

STUB_KEY = "sk-stub-0123456789abcdef"


@dataclass
class Reply:
    """One scripted answer: an HTTP status and a JSON body (raw bytes are sent as they are)."""

    body: Any
    status: int = 200


HANG = object()  # a reply that never comes: the request is held until the stub shuts down

# How a stub answers: (1-based request number, request body, bearer key) -> a Reply or HANG.
Answer = Callable[[int, dict[str, Any], str], "Reply | object"]


def completion_body(content: str | None, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": "stub",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class ProviderStub:
    """Answers each POST /v1/chat/completions with `answer` (called in arrival order, one at a time) and
    keeps every request body; `latency` seconds pass before each answer is sent (requests overlap). A request
    with `stream: true` gets a successful chat.completion answer as an event stream, as OpenAI sends it."""

    def __init__(self, answer: Answer, *, latency: float = 0.0) -> None:
        self.answer = answer
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self._released = threading.Event()
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                payload = json.loads(self.rfile.read(length) or b"{}")
                key = (self.headers.get("authorization") or "").removeprefix("Bearer ")
                with stub._lock:
                    stub.requests.append(payload)
                    reply = stub.answer(len(stub.requests), payload, key)
                if reply is HANG:
                    stub._released.wait()
                    return
                if stub.latency:
                    stub._released.wait(stub.latency)
                assert isinstance(reply, Reply)
                streamed = payload.get("stream") is True and reply.status == 200 and isinstance(reply.body, dict)
                if streamed:
                    data = chat_stream(reply.body)
                else:
                    data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "text/event-stream" if streamed else "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL."""
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    @property
    def model(self) -> ModelConfig:
        return ModelConfig(model="openai/stub", api_base=self.url, api_key=STUB_KEY)

    @contextmanager
    def running(self) -> Iterator[ProviderStub]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._released.set()
            self._server.shutdown()
            self._server.server_close()


@contextmanager
def provider_stub(*replies: Reply | object) -> Iterator[ProviderStub]:
    """A running stub that gives `replies` in order, repeating the last."""
    script = list(replies)
    with ProviderStub(lambda number, _body, _key: script[min(number, len(script)) - 1]).running() as stub:
        yield stub
