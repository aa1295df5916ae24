"""The HTTP surface of the service: cited answers natively and as an OpenAI-compatible API.

A Starlette app (run by ``edaqa serve`` under uvicorn). It lives beside the service rather
than in the CLI because it is a surface of its own: the CLI only parses ``edaqa serve``'s
arguments and starts it, and the other server surfaces (an MCP server, an answer page) sit
beside it and call the same ``EdaqaService``. Routes:

* ``POST /ask`` ``{"question", "method"?, "k"?, "release"?}`` -> the ``edaqa ask --json`` record;
* ``GET /v1/models`` -> the built methods as models;
* ``POST /v1/chat/completions`` ``{"model": METHOD, "messages": [...], "stream"?,
  "temperature"?, "max_tokens"?}`` -> the answer to the last user message (a follow-up made
  standalone first) as an assistant message, citations inline and sources listed, so any
  OpenAI client or chat front end can ask (``chat.py``); streamed as server-sent events
  claim by claim, each claim sent once it has passed verification, with the structured
  citations (``citations``) and the record (``edaqa``) on the final chunk;
* ``GET /releases`` -> the releases of the manuals the index holds and the newest (the
  default); a ``release`` field in ``/ask`` and chat bodies pins a question to one;
* ``GET /health``.

Bad requests get the ``ServiceError``'s status with a message (OpenAI's ``{"error":
{"message", "type", "param", "code"}}`` shape on the ``/v1`` routes); ``guard.py`` checks the
Host header, the bearer token and the body (type, size, depth) before a route reads it.

Every request has a deadline (``--deadline-s``): a model call does not start after it, waits
for a model slot only until it, and is cancelled at it (its connection closed, so the slot is
free for the next request); the request then gets a 504. Requests are answered
concurrently, each in a worker thread: the retrievers hold no per-query
state and the encoders and indexes are read-only, so offline answers use every core. Model
calls are bounded by the LLM client's request slots (``llm/slots.py``), not by a lock here: a
single-slot local model queues its requests there while retrieval of other requests goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from functools import partial
from typing import TYPE_CHECKING, Any

from edaqa_pipeline.service.answer_page import page_routes
from edaqa_pipeline.service.chat import (
    ChatRequest,
    ClaimBudget,
    chat_request,
    claim_of,
    reply_content,
    sources_text,
    structured_citations,
)
from edaqa_pipeline.service.clients import answer_client, answerer_name
from edaqa_pipeline.service.core import EdaqaService
from edaqa_pipeline.service.errors import CONFLICT, GATEWAY_TIMEOUT, NOT_FOUND, ServiceError
from edaqa_pipeline.service.guard import GuardMiddleware, error_body, read_json
from edaqa_pipeline.service.requests import DEFAULT_DEADLINE_S, check_k

if TYPE_CHECKING:
    from edaqa_pipeline.generation.answer_claims import AnswerClaim, ClaimListener
    from edaqa_pipeline.generation.followup import Turn
    from edaqa_pipeline.retrieval.record import Retrieval


def default_method_of(methods: list[str], chosen: str | None, storage: Any) -> str:
    """The method a server answers with when a request names none: ``chosen``, else ``edaqa``
    when built, else the first built one; 409 when it is not built or nothing is."""
    from edaqa_pipeline.registry import DEFAULT_METHOD

    if not methods:
        raise ServiceError(f"no method is built under {storage}; run edaqa index first", status=CONFLICT)
    method = chosen or (DEFAULT_METHOD if DEFAULT_METHOD in methods else methods[0])
    if method not in methods:
        raise ServiceError(f"method {method!r} is not built under {storage} (built: {', '.join(methods)})",
                           status=CONFLICT)
    return method


class AnswerServer:
    """The service as ``edaqa serve`` and ``edaqa mcp`` offer it: its default method and k,
    and one answerer shared by concurrent requests."""

    def __init__(self, service: EdaqaService, answers: str | None, default_method: str | None,
                 k: int, deadline_s: float = DEFAULT_DEADLINE_S) -> None:
        self.service = service
        self.default_method = default_method_of(service.methods, default_method, service.storage)
        self.llm = answer_client(answers)
        self.k, self.deadline_s = check_k(k), check_deadline(deadline_s)
        service.warm(answerer=self.llm)

    @classmethod
    def open(cls, storage: str, answers: str | None, default_method: str | None,
             k: int, deadline_s: float = DEFAULT_DEADLINE_S) -> AnswerServer:
        return cls(EdaqaService.open(storage), answers, default_method, k, deadline_s)

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

    def ask(self, question: Any, method: Any = None, k: Any = None, *, earlier: tuple[Turn, ...] = (),
            temperature: float = 0.0, max_tokens: int | None = None,
            on_claim: ClaimListener | None = None, release: Any = None) -> dict[str, Any]:
        """The ``ask --json`` record of one request (any number run at once), answered within
        the server's deadline (504 past it; see ``service.answer`` for the rest)."""
        from edaqa_pipeline.llm.scope import request_scope

        checked = self.request(question, method, k)
        self.service.check_release(release)
        with request_scope(deadline_s=self.deadline_s) as scope:
            record = self.service.answer(*checked, self.llm, earlier=earlier, temperature=temperature,
                                         max_tokens=max_tokens, on_claim=on_claim, release=release)
            if scope.expired:
                raise self.past_deadline()
        return record

    def past_deadline(self) -> ServiceError:
        return ServiceError(f"the request ran past its {self.deadline_s:g} s deadline; its model "
                            "call was cancelled", status=GATEWAY_TIMEOUT, code="timeout")

    def chat(self, request: ChatRequest, method: Any, on_claim: ClaimListener | None = None) -> dict[str, Any]:
        """The record of a chat request (``chat.py``), system messages it ignored listed."""
        record = self.ask(request.question, method, earlier=request.earlier,
                          temperature=request.temperature, max_tokens=request.max_tokens,
                          on_claim=on_claim, release=request.release)
        return {**record, **({"ignored": list(request.ignored)} if request.ignored else {})}

    def search(self, question: Any, method: Any = None, k: Any = None, release: Any = None) -> Retrieval:
        """The ranked evidence of one request, without an answer."""
        return self.service.retrieve(*self.request(question, method, k), self.llm, release=release)


SETTINGS_VARIABLE = "EDAQA_SERVE_SETTINGS"  # how ``edaqa serve --workers N`` configures its workers


def check_deadline(deadline_s: Any) -> float:
    """``deadline_s`` as seconds; 400 unless it is a positive number."""
    if not isinstance(deadline_s, int | float) or isinstance(deadline_s, bool) or not deadline_s > 0:
        raise ServiceError(f"the request deadline must be positive, got {deadline_s}", param="deadline_s")
    return float(deadline_s)


def preflight(storage: str, answers: str | None, method: str | None, k: int = 5,
              deadline_s: float = DEFAULT_DEADLINE_S) -> tuple[list[str], str]:
    """(the built methods, the answerer) of a server that ``AnswerServer.open`` would start
    with these settings, or its ``ServiceError``, without loading the index: what the
    supervisor of several workers checks before they start."""
    from pathlib import Path

    from edaqa_pipeline.registry import available_methods

    if not Path(storage, "manifest.json").exists():
        raise ServiceError(f"{storage} has no index; run edaqa index first", status=NOT_FOUND)
    check_k(k)
    check_deadline(deadline_s)
    methods = available_methods(Path(storage))
    default_method_of(methods, method, storage)
    return methods, answerer_name(answer_client(answers))


def app_from_environment() -> Any:
    """The app of one ``edaqa serve`` worker process, configured by ``SETTINGS_VARIABLE``
    (uvicorn starts workers by importing this factory)."""
    import os

    settings = json.loads(os.environ[SETTINGS_VARIABLE])
    server = AnswerServer.open(settings["storage"], settings["answers"], settings["method"],
                               settings["k"], settings["deadline_s"])
    return create_app(server, host=settings["host"], port=settings["port"],
                      token=os.environ.get("EDAQA_API_TOKEN") or None)


GRACE_S = 1.0  # past the deadline, the worker's own cancellation is waited for this long


def usage_of(record: dict[str, Any]) -> dict[str, int]:
    tokens = record["tokens"]
    return {"prompt_tokens": tokens["prompt_tokens"], "completion_tokens": tokens["completion_tokens"],
            "total_tokens": tokens["prompt_tokens"] + tokens["completion_tokens"]}


async def chat_events(base: dict[str, Any], asked: ChatRequest, work: asyncio.Future[dict[str, Any]],
                      claims: asyncio.Queue[AnswerClaim]) -> AsyncIterator[str]:
    """The server-sent events of a streamed chat reply: each claim as soon as it is verified
    (a model's claims while it writes the rest), then the claims only the final answer has,
    the sources, and a final chunk with ``citations``, ``usage`` and the record."""

    def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {json.dumps({**base, 'object': 'chat.completion.chunk', 'choices': [choice], **extra})}\n\n"

    budget = ClaimBudget(asked.max_tokens)
    sent: list[AnswerClaim] = []

    def piece(claim: AnswerClaim, lead: str = "") -> str | None:
        if claim.text.lower() in {c.text.lower() for c in sent} or not budget.take(claim.rendered()):
            return None
        text = " ".join(p for p in (lead, claim.rendered()) if p)
        sent.append(claim)
        return event({"content": (" " if len(sent) > 1 else "") + text})

    yield event({"role": "assistant", "content": ""})
    while not work.done() or not claims.empty():
        if claims.empty():
            waiting = asyncio.ensure_future(claims.get())
            await asyncio.wait({waiting, work}, return_when=asyncio.FIRST_COMPLETED)
            if not waiting.done():
                waiting.cancel()
                continue
            claim = waiting.result()
        else:
            claim = claims.get_nowait()
        out = piece(claim)
        if out:
            yield out
    try:
        record = work.result()
    except Exception as exc:  # the stream has begun: any failure is its last event
        failure = exc if isinstance(exc, ServiceError) else ServiceError(
            f"the answer failed: {type(exc).__name__}", status=500)
        yield f"data: {json.dumps(error_body('/v1', failure))}\n\n"
        yield "data: [DONE]\n\n"
        return
    if record["not_in_documents"] and not sent:
        yield event({"content": record["answer"]})
    for claim in map(claim_of, record["claims"]):
        out = piece(claim, "" if sent else record.get("lead", ""))
        if out:
            yield out
    if sources_text(record, sent):
        yield event({"content": sources_text(record, sent)})
    yield event({}, "length" if budget.cut else "stop", citations=structured_citations(record, sent),
                usage=usage_of(record), edaqa=record)
    yield "data: [DONE]\n\n"


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


    async def within_deadline(fn: Any, *args: Any) -> dict[str, Any]:
        # the worker cancels its own model call at the deadline; this bounds the rest
        try:
            return await asyncio.wait_for(run_in_threadpool(fn, *args), server.deadline_s + GRACE_S)
        except TimeoutError:
            raise server.past_deadline() from None

    async def ask(request: Request) -> JSONResponse:
        try:
            body = await read_json(request)
            record = await within_deadline(partial(server.ask, release=body.get("release")),
                                           body.get("question"), body.get("method"), body.get("k"))
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
            asked = chat_request(body)
            if not isinstance(body.get("model"), str) or not body["model"]:
                raise ServiceError("'model' is required: a method name (see GET /v1/models)",
                                   param="model")
            server.request(asked.question, body["model"])  # a bad method is a status, not an event
            server.service.check_release(asked.release)
        except ServiceError as exc:
            return error(exc, openai_shape=True)
        base = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "created": int(time.time()),
                "model": body["model"], "system_fingerprint": server.answerer}
        if asked.stream:
            loop = asyncio.get_running_loop()
            claims: asyncio.Queue[AnswerClaim] = asyncio.Queue()

            def on_claim(claim: AnswerClaim) -> None:  # called in the worker thread
                loop.call_soon_threadsafe(claims.put_nowait, claim)

            work = asyncio.ensure_future(within_deadline(server.chat, asked, body["model"], on_claim))
            return StreamingResponse(chat_events(base, asked, work, claims),
                                     media_type="text/event-stream")
        try:
            record = await within_deadline(server.chat, asked, body["model"])
        except ServiceError as exc:
            return error(exc, openai_shape=True)
        content, shown, cut = reply_content(record, asked.max_tokens)
        return JSONResponse({**base, "object": "chat.completion", "usage": usage_of(record),
                             "choices": [{"index": 0, "finish_reason": "length" if cut else "stop",
                                          "message": {"role": "assistant", "content": content}}],
                             "citations": structured_citations(record, shown), "edaqa": record})

    async def releases(request: Request) -> JSONResponse:
        del request
        known = server.service.releases
        return JSONResponse({"newest": known.newest, "releases": [
            {"name": r.name, "date": r.date,
             "documents": len(known.documents_of(r.name, server.service.documents))}
            for r in known.items]})

    async def health(request: Request) -> JSONResponse:
        del request
        return JSONResponse({"status": "ok", "methods": server.methods,
                             "default_method": server.default_method, "answerer": server.answerer})

    app = Starlette(routes=[
        Route("/ask", ask, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
        Route("/releases", releases, methods=["GET"]),
        *page_routes(server, auth_required=bool(token)),
    ])
    return GuardMiddleware(app, host=host, port=port, token=token)
