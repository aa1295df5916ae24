"""The HTTP surface of the service: cited answers natively and as an OpenAI-compatible API.

A Starlette app (run by ``edaqa serve`` under uvicorn). It lives beside the service rather
than in the CLI because it is a surface of its own: the CLI only parses ``edaqa serve``'s
arguments and starts it, and the other server surfaces (an MCP server, an answer page) sit
beside it and call the same ``EdaqaService``. Routes:

* ``POST /ask`` ``{"question", "method"?, "k"?}`` -> the ``edaqa ask --json`` record;
* ``GET /v1/models`` -> the built methods as models;
* ``POST /v1/chat/completions`` ``{"model": METHOD, "messages": [...], "stream"?}`` -> the
  answer to the last user message as an assistant message (citations inline, sources listed),
  streamed as server-sent events when asked, so any OpenAI client or chat front end can ask;
* ``GET /health``.

Bad requests get the ``ServiceError``'s status with a message (OpenAI's ``{"error":
{"message", "type", "param", "code"}}`` shape on the ``/v1`` routes); ``guard.py`` checks the
Host header, the bearer token and the body (type, size, depth) before a route reads it.

Requests are answered concurrently, each in a worker thread: the retrievers hold no per-query
state and the encoders and indexes are read-only, so offline answers use every core. Model
calls are bounded by the LLM client's request slots (``llm/slots.py``), not by a lock here: a
single-slot local model queues its requests there while retrieval of other requests goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import TYPE_CHECKING, Any

from edaqa_pipeline.service.clients import answer_client, answerer_name
from edaqa_pipeline.service.core import EdaqaService
from edaqa_pipeline.service.errors import CONFLICT, ServiceError
from edaqa_pipeline.service.guard import GuardMiddleware, error_body, read_json
from edaqa_pipeline.service.requests import check_k

if TYPE_CHECKING:
    from edaqa_pipeline.retrieval.record import Retrieval

MAX_MESSAGES = 100  # turns of one chat request


class AnswerServer:
    """The service as ``edaqa serve`` and ``edaqa mcp`` offer it: its default method and k,
    and one answerer shared by concurrent requests."""

    def __init__(self, service: EdaqaService, answers: str | None, default_method: str | None,
                 k: int) -> None:
        from edaqa_pipeline.registry import DEFAULT_METHOD

        self.service = service
        methods = service.methods
        if not methods:
            raise ServiceError(f"no method is built under {service.storage}; run edaqa index first",
                               status=CONFLICT)
        self.default_method = default_method or (DEFAULT_METHOD if DEFAULT_METHOD in methods
                                                 else methods[0])
        if self.default_method not in methods:
            raise ServiceError(f"method {self.default_method!r} is not built under "
                               f"{service.storage} (built: {', '.join(methods)})", status=CONFLICT)
        self.llm = answer_client(answers)
        self.k = check_k(k)
        service.warm(answerer=self.llm)

    @classmethod
    def open(cls, storage: str, answers: str | None, default_method: str | None,
             k: int) -> AnswerServer:
        return cls(EdaqaService.open(storage), answers, default_method, k)

    @property
    def methods(self) -> list[str]:
        return self.service.methods

    @property
    def answerer(self) -> str:
        return answerer_name(self.llm)

    def request(self, question: Any, method: Any = None, k: Any = None) -> tuple[str, str, int]:
        """The checked ``(question, method, k)`` of a request, the server's defaults filled in."""
        method = self.default_method if method in (None, "") else method
        return self.service.check_request(question, method, self.k if k is None else k)

    def ask(self, question: Any, method: Any = None, k: Any = None) -> dict[str, Any]:
        """The ``ask --json`` record of one request (any number run at once)."""
        return self.service.answer(*self.request(question, method, k), self.llm)

    def search(self, question: Any, method: Any = None, k: Any = None) -> Retrieval:
        """The ranked evidence of one request, without an answer."""
        return self.service.retrieve(*self.request(question, method, k), self.llm)


def question_of(messages: Any) -> str:
    """The text of the last user message (string content or a list of text parts)."""
    if not isinstance(messages, list) or not messages:
        raise ServiceError("'messages' must be a non-empty list", param="messages")
    if len(messages) > MAX_MESSAGES:
        raise ServiceError(f"'messages' has {len(messages)} messages; at most {MAX_MESSAGES}",
                           param="messages")
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
                if not all(isinstance(p, str) for p in parts):
                    raise ServiceError("a text part of the user message has no string 'text'",
                                       param="messages")
                content = " ".join(parts)
            if isinstance(content, str) and content.strip():
                return content
            break
    raise ServiceError("no user message with text content in 'messages'", param="messages")


def chat_content(record: dict[str, Any]) -> str:
    """The assistant message: the cited answer, then the sources it cites."""
    cited = [e for e in record["evidence"] if "id" in e and any(
        e["id"] in c["evidence_ids"] for c in record["claims"])]
    lines = [record["answer"]]
    if cited:
        lines += ["", "Sources:"] + [f"- {e['citation']} ({e['id']})" for e in cited]
    return "\n".join(lines)


def create_app(server: AnswerServer, *, host: str = "127.0.0.1", port: int = 8000,
               token: str | None = None) -> Any:
    """The app of ``server`` (routes in the module docstring) behind ``guard.GuardMiddleware``
    for a server bound to ``host``:``port`` that requires ``token`` (None: no token)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    def error(exc: ServiceError, openai_shape: bool) -> JSONResponse:
        return JSONResponse(error_body("/v1" if openai_shape else "/", exc), status_code=exc.status)


    async def ask(request: Request) -> JSONResponse:
        try:
            body = await read_json(request)
            record = await run_in_threadpool(server.ask, body.get("question"),
                                             body.get("method"), body.get("k"))
        except ServiceError as exc:
            return error(exc, openai_shape=False)
        return JSONResponse(record)

    async def models(request: Request) -> JSONResponse:
        del request
        return JSONResponse({"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "edaqa"} for m in server.methods]})

    async def chat(request: Request) -> Any:
        try:
            body = await read_json(request)
            question = question_of(body.get("messages"))
            if "model" not in body:
                raise ServiceError("'model' is required (a method name; see GET /v1/models)",
                                   param="model")
            record = await run_in_threadpool(server.ask, question, body.get("model"))
        except ServiceError as exc:
            return error(exc, openai_shape=True)
        content = chat_content(record)
        tokens = record["tokens"]
        base = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "created": int(time.time()),
                "model": record["method"], "system_fingerprint": record["answerer"]}
        usage = {"prompt_tokens": tokens["prompt_tokens"],
                 "completion_tokens": tokens["completion_tokens"],
                 "total_tokens": tokens["prompt_tokens"] + tokens["completion_tokens"]}
        if body.get("stream"):
            async def events() -> Any:
                chunk = {**base, "object": "chat.completion.chunk"}
                for delta, finish in (({"role": "assistant", "content": content}, None), ({}, "stop")):
                    choice = {"index": 0, "delta": delta, "finish_reason": finish}
                    yield f"data: {json.dumps({**chunk, 'choices': [choice]})}\n\n"
                    await asyncio.sleep(0)
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")
        return JSONResponse({**base, "object": "chat.completion", "usage": usage, "choices": [
            {"index": 0, "finish_reason": "stop",
             "message": {"role": "assistant", "content": content}}], "edaqa": record})

    async def health(request: Request) -> JSONResponse:
        del request
        return JSONResponse({"status": "ok", "methods": server.methods,
                             "default_method": server.default_method, "answerer": server.answerer})

    app = Starlette(routes=[
        Route("/ask", ask, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
    ])
    return GuardMiddleware(app, host=host, port=port, token=token)
