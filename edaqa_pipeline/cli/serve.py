"""``edaqa serve``: cited answers over HTTP, natively and as an OpenAI-compatible API.

A Starlette app run by uvicorn (both come with dagster-webserver, so no new dependency),
bound to 127.0.0.1 unless ``--host`` says otherwise. The index is loaded once at start; each
method's retriever is built on first use and kept. Routes:

* ``POST /ask`` ``{"question", "method"?, "k"?}`` -> the ``edaqa ask --json`` record;
* ``GET /v1/models`` -> the built methods as models;
* ``POST /v1/chat/completions`` ``{"model": METHOD, "messages": [...], "stream"?}`` -> the
  answer to the last user message as an assistant message (citations inline, sources listed),
  streamed as server-sent events when asked, so any OpenAI client or chat front end can ask;
* ``GET /health``.

Bad requests get a 4xx with a message (OpenAI's ``{"error": {"message", "type", "param",
"code"}}`` shape on the ``/v1`` routes). Answers are computed one at a time (a lock): the
encoders and a local model serve one request at a time anyway, and it keeps the retrievers'
state out of races.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
import uuid
from typing import Any

from edaqa_pipeline.cli.query import (
    QueryError,
    answer_client,
    answers_argument,
    ask_record,
    build_retrievers,
    load_snapshot,
    storage_argument,
    warm,
)

MAX_K = 50


class RequestError(ValueError):
    """A bad request: ``status`` and a message for the client."""

    def __init__(self, message: str, status: int = 400, param: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.param, self.code = status, param, code


class EdaqaService:
    """The loaded index, the answering client and the retrievers built so far."""

    def __init__(self, storage: str, answers: str | None, default_method: str | None, k: int) -> None:
        from edaqa_pipeline.registry import DEFAULT_METHOD, available_methods

        self.snapshot = load_snapshot(storage)
        self.methods = available_methods(self.snapshot.storage)
        if not self.methods:
            raise QueryError(f"no method is built under {storage}; run edaqa index first")
        self.default_method = default_method or (DEFAULT_METHOD if DEFAULT_METHOD in self.methods
                                                 else self.methods[0])
        if self.default_method not in self.methods:
            raise QueryError(f"method {self.default_method!r} is not built under {storage} "
                             f"(built: {', '.join(self.methods)})")
        self.llm = answer_client(answers)
        self.k = k
        self._retrievers: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.snapshot.base.encode(["warm up"])

    @property
    def answerer(self) -> str:
        return f"llm:{self.llm.model}" if self.llm is not None else "extractive"

    def ask(self, question: Any, method: Any = None, k: Any = None) -> dict[str, Any]:
        if not isinstance(question, str) or not question.strip():
            raise RequestError("'question' must be a non-empty string", param="question")
        method = self.default_method if method in (None, "") else method
        if not isinstance(method, str) or method not in self.methods:
            raise RequestError(f"unknown or unbuilt method {method!r}; available: "
                               f"{', '.join(self.methods)}", status=404, param="model",
                               code="model_not_found")
        k = self.k if k is None else k
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
            raise RequestError(f"'k' must be an integer from 1 to {MAX_K}", param="k")
        with self._lock:
            if method not in self._retrievers:
                try:
                    built = build_retrievers([method], self.snapshot, self.llm)
                    warm(self.snapshot, *built.values())
                    self._retrievers.update(built)
                except QueryError as exc:
                    raise RequestError(str(exc), status=409, param="model") from None
            return ask_record(question.strip(), method, self._retrievers[method], self.llm, k)


def _question_of(messages: Any) -> str:
    """The text of the last user message (string content or a list of text parts)."""
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty list", param="messages")
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content
                                   if isinstance(p, dict) and p.get("type") == "text")
            if isinstance(content, str) and content.strip():
                return content
            break
    raise RequestError("no user message with text content in 'messages'", param="messages")


def chat_content(record: dict[str, Any]) -> str:
    """The assistant message: the cited answer, then the sources it cites."""
    cited = [e for e in record["evidence"] if "id" in e and any(
        e["id"] in c["evidence_ids"] for c in record["claims"])]
    lines = [record["answer"]]
    if cited:
        lines += ["", "Sources:"] + [f"- {e['citation']} ({e['id']})" for e in cited]
    return "\n".join(lines)


def create_app(service: EdaqaService) -> Any:
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    def error(exc: RequestError, openai_shape: bool) -> JSONResponse:
        if openai_shape:
            body = {"error": {"message": str(exc), "type": "invalid_request_error",
                              "param": exc.param, "code": exc.code}}
        else:
            body = {"error": str(exc)}
        return JSONResponse(body, status_code=exc.status)

    async def body_of(request: Request) -> dict[str, Any]:
        try:
            body = json.loads(await request.body() or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise RequestError("the request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise RequestError("the request body must be a JSON object")
        return body

    async def ask(request: Request) -> JSONResponse:
        try:
            body = await body_of(request)
            record = await run_in_threadpool(service.ask, body.get("question"),
                                             body.get("method"), body.get("k"))
        except RequestError as exc:
            return error(exc, openai_shape=False)
        return JSONResponse(record)

    async def models(request: Request) -> JSONResponse:
        del request
        return JSONResponse({"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "edaqa"} for m in service.methods]})

    async def chat(request: Request) -> Any:
        try:
            body = await body_of(request)
            question = _question_of(body.get("messages"))
            if "model" not in body:
                raise RequestError("'model' is required (a method name; see GET /v1/models)",
                                   param="model")
            record = await run_in_threadpool(service.ask, question, body.get("model"))
        except RequestError as exc:
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
        return JSONResponse({"status": "ok", "methods": service.methods,
                             "default_method": service.default_method, "answerer": service.answerer})

    return Starlette(routes=[
        Route("/ask", ask, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
    ])


def _cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    try:
        service = EdaqaService(args.storage, args.answers, args.method, args.k)
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"edaqa serve: http://{args.host}:{args.port} (OpenAI base URL "
          f"http://{args.host}:{args.port}/v1; models: {', '.join(service.methods)}; "
          f"answers: {service.answerer})", file=sys.stderr, flush=True)
    uvicorn.run(create_app(service), host=args.host, port=args.port, log_level=args.log_level)
    return 0


def add_serve_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("serve", help="serve cited answers over HTTP (also OpenAI-compatible)",
                       description="HTTP API: POST /ask, GET /v1/models, POST /v1/chat/completions "
                       "(model = method).")
    storage_argument(p)
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--method", default=None, help="default method (default: edaqa when built)")
    p.add_argument("--k", type=int, default=5, help="evidence items per question (default 5)")
    answers_argument(p)
    p.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(func=_cmd_serve)
