"""A scripted OpenAI-compatible server for fault tests: plays back replies in order.

It speaks just enough of the chat-completions API (plain and server-sent streaming) to play
back faults: HTTP errors, slow replies, invalid JSON, slowly "generating" streams, and it
records what went over the wire (request bodies, requests in flight at once, streams the
client closed), so retry, budget and cancellation behaviour is asserted at the server.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer. ``status`` != 200 sends an error body; ``delay_s`` sleeps first;
    otherwise a chat completion whose single tool call has ``arguments`` (a string, sent as is).

    A streamed request (``"stream": true``, what the client sends) gets the arguments as
    ``pieces`` server-sent chunks, ``token_delay_s`` apart (a generating model); ``usage``
    False leaves out the final usage chunk, as llama.cpp's Python server does.
    """

    status: int = 200
    arguments: str | None = None
    delay_s: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    prompt_tokens: int = 11
    completion_tokens: int = 7
    pieces: int = 3
    token_delay_s: float = 0.0
    usage: bool = True


def ok(arguments: dict[str, Any] | str, **kw: Any) -> Reply:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Reply(arguments=text, **kw)


def http_error(status: int = 500, **kw: Any) -> Reply:
    return Reply(status=status, **kw)


def slow(arguments: dict[str, Any] | str, delay_s: float) -> Reply:
    return ok(arguments, delay_s=delay_s)


def generating(arguments: dict[str, Any] | str, pieces: int, token_delay_s: float) -> Reply:
    """A reply streamed as ``pieces`` tokens, ``token_delay_s`` apart."""
    return ok(arguments, pieces=pieces, token_delay_s=token_delay_s, completion_tokens=pieces)


def client_of(server: ScriptedServer, **kw: Any) -> Any:
    """An ``OpenAICompatibleClient`` of ``server`` with fast, retry-free defaults (``kw``
    overrides them): what the answer tests ask the scripted model through."""
    from edaqa_pipeline.llm import OpenAICompatibleClient

    params = {"base_url": server.base_url, "api_key": None, "model": "scripted",
              "timeout_s": 5.0, "max_retries": 0, "validation_retries": 1, "backoff_s": 0.01}
    return OpenAICompatibleClient(**{**params, **kw})


@dataclass
class ScriptedServer:
    """An OpenAI-compatible server on 127.0.0.1 that plays ``script`` in order.

    After the script runs out it keeps answering with ``default``. ``requests`` holds every
    ``/v1/chat/completions`` body received, in order (the ground truth for retry counts);
    ``max_in_flight`` the most requests it was handling at once; ``disconnects`` how many
    streamed replies stopped because the client closed the connection;
    ``streams_finished_at`` when each streamed reply sent its last token.
    """

    script: Sequence[Reply]
    default: Reply = field(default_factory=lambda: http_error(500))
    requests: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    disconnects: int = 0
    streams_finished_at: list[float] = field(default_factory=list)  # time.monotonic() of each last token

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
            return self.script[index] if index < len(self.script) else self.default

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: dict[str, Any], headers: Sequence = ()) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers:
                        self.send_header(name, value)
                    self.end_headers()
                    self._done()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def _done(self) -> None:
                """The request stops counting as in flight: before its last bytes are written,
                so a client that has read them (and starts its next request) never overlaps it
                in ``max_in_flight``. Once per request."""
                if getattr(self, "_counted", False):
                    with server._lock:
                        server.in_flight -= 1
                    self._counted = False

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "scripted"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                body = json.loads(raw or b"{}")
                reply = server._next(body)
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                self._counted = True
                try:
                    if reply.delay_s and server._stop.wait(reply.delay_s):
                        return
                    if reply.status != 200:
                        error = {"message": f"scripted HTTP {reply.status}", "type": "server_error"}
                        self._send(reply.status, {"error": error}, reply.headers)
                        return
                    if body.get("stream"):
                        self._stream(body, reply)
                        return
                    self._send(200, _completion(body, reply), reply.headers)
                finally:
                    self._done()

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    for name, value in reply.headers:
                        self.send_header(name, value)
                    self.end_headers()
                    for chunk in _chunks(body, reply):
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        if reply.token_delay_s and self._wait_or_closed(reply.token_delay_s):
                            raise ConnectionResetError("client closed the stream")
                    with server._lock:
                        server.streams_finished_at.append(time.monotonic())
                    self._done()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    with server._lock:  # the client closed the stream: stop "generating"
                        server.disconnects += 1

            def _wait_or_closed(self, seconds: float) -> bool:
                """Sleep like a model generating a token; True as soon as the client hangs up
                (a real server notices the closed connection between two tokens)."""
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline and not server._stop.is_set():
                    readable, _, _ = select.select([self.connection], [], [], 0.01)
                    if readable:
                        try:
                            if not self.connection.recv(1, socket.MSG_PEEK):
                                return True
                        except OSError:
                            return True
                return server._stop.is_set()

        return Handler


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    tools = body.get("tools") or [{"function": {"name": "tool"}}]
    name = tools[0]["function"]["name"]
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_0",
                            "type": "function",
                            "function": {"name": name, "arguments": reply.arguments or "{}"},
                        }
                    ],
                },
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def _chunks(body: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
    """The server-sent chunks of a streamed tool call (role, argument pieces, finish, usage);
    a request without tools gets the text as content pieces."""
    tools = body.get("tools") or [{"function": {"name": "tool"}}]
    name = tools[0]["function"]["name"]
    text = reply.arguments or "{}"
    n = max(min(reply.pieces, len(text)), 1)
    size = -(-len(text) // n)
    base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": body.get("model", "scripted")}
    yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None},
                                "finish_reason": None}]}
    for i in range(0, len(text), size):
        if not body.get("tools"):  # a plain-text request: the text streams as content
            yield {**base, "choices": [{"index": 0, "delta": {"content": text[i:i + size]},
                                        "finish_reason": None}]}
            continue
        call: dict[str, Any] = {"index": 0, "function": {"arguments": text[i:i + size]}}
        if i == 0:
            call.update(id="call_0", type="function")
            call["function"]["name"] = name
        yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]},
                                    "finish_reason": None}]}
    finish = "tool_calls" if body.get("tools") else "stop"
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    if reply.usage:
        yield {**base, "choices": [], "usage": {
            "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens}}
