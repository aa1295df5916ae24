"""The answer page of ``edaqa serve``: a question box, the cited answer, the cited sources.

One self-contained HTML file (``static/answer_page.html``: no build step, nothing fetched from
elsewhere, so it works offline) asks ``POST /ask`` and shows each claim with its citations;
a citation opens its source: Markdown lines with their numbers, the cited ones highlighted,
or the PDF page with the cited block marked. The routes it needs besides ``/ask``:

* ``GET /`` the page (open without a token, like ``/health``: it holds no data; when the server
  requires a token the page asks for it once and sends it on every request);
* ``GET /source?document=D&start=S&end=E`` the cited lines S-E with up to
  ``sources.CONTEXT_LINES`` lines around them (``sources.view_json``);
* ``GET /source/page?document=D&page=P[&chunk=ID][&claim=TEXT]`` the PDF page as PNG with the
  blocks of the cited chunk that hold the claim marked (``pdf_pages``); the marks' pixel boxes
  are in the ``X-Edaqa-Marks`` header (JSON), so the page can scroll to them;
* ``POST /vote`` ``{question, method, answer, citations, vote}`` appends a vote to the storage
  root's ``feedback/votes.jsonl`` (``votes``).

Bad requests get a 4xx with ``{"error": message}``, as ``/ask`` does. The page is sent with a
Content-Security-Policy that allows only its own inline script and style (by hash), requests
to this server and images it made itself (``blob:``), and no framing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

from edaqa_pipeline.service.errors import ServiceError
from edaqa_pipeline.service.guard import error_body, read_json
from edaqa_pipeline.service.sources import view_json

if TYPE_CHECKING:
    from edaqa_pipeline.service.http import AnswerServer

PAGE_FILE = "answer_page.html"
CONFIG_MARK = "__EDAQA_PAGE_CONFIG__"
MAX_PARAM_CHARS = 1000  # a document key or chunk id


def page_html(auth_required: bool) -> str:
    """The answer page, told whether the server requires a bearer token."""
    html = (resources.files("edaqa_pipeline.service") / "static" / PAGE_FILE).read_text("utf-8")
    return html.replace(CONFIG_MARK, json.dumps({"auth_required": auth_required}))


def content_security_policy(html: str) -> str:
    """A policy that allows ``html``'s own inline scripts and styles (by hash) and nothing
    from elsewhere."""
    def hashes(tag: str) -> str:
        bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.S)  # executable ones only
        return " ".join("'sha256-" + base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()
                        + "'" for b in bodies)

    return (f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; "
            "img-src blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


def _param(request: Any, name: str, *, required: bool = True) -> str | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        if required:
            raise ServiceError(f"the query parameter {name!r} is required", param=name)
        return None
    if len(value) > MAX_PARAM_CHARS:
        raise ServiceError(f"the query parameter {name!r} is over {MAX_PARAM_CHARS} characters",
                           param=name)
    return value


def _line(value: str | None) -> Any:
    """A line-number parameter as an int when it is one (``check_range`` says why not)."""
    return int(value) if value is not None and re.fullmatch(r"\d{1,9}", value) else value


def page_routes(server: AnswerServer, auth_required: bool = False) -> list[Any]:
    """The answer page's routes (module docstring) over ``server``'s service."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    from edaqa_pipeline.service.pdf_pages import render_page
    from edaqa_pipeline.service.votes import check_vote, record_vote

    html = page_html(auth_required)
    page_headers = {"Content-Security-Policy": content_security_policy(html),
                    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                    "Cache-Control": "no-store"}
    service = server.service

    def error(exc: ServiceError) -> JSONResponse:
        return JSONResponse(error_body("/", exc), status_code=exc.status)

    async def page(request: Request) -> HTMLResponse:
        del request
        return HTMLResponse(html, headers=page_headers)

    async def source(request: Request) -> JSONResponse:
        try:
            document = _param(request, "document")
            start, end = _line(_param(request, "start")), _line(_param(request, "end"))
            cited, window = await run_in_threadpool(service.read_context, document, start, end)
        except ServiceError as exc:
            return error(exc)
        return JSONResponse(view_json(cited, window))

    async def pdf_page(request: Request) -> Response:
        try:
            document = service.check_document(_param(request, "document"))
            page_number = _param(request, "page")
            chunk = _param(request, "chunk", required=False)
            claim = request.query_params.get("claim", "")
            image = await run_in_threadpool(render_page, service.storage, document, page_number,
                                            chunk, claim)
        except ServiceError as exc:
            return error(exc)
        return Response(image.png, media_type="image/png", headers={
            "X-Edaqa-Marks": json.dumps([list(box) for box in image.boxes]),
            "Cache-Control": "no-store"})

    async def vote(request: Request) -> JSONResponse:
        try:
            body = await read_json(request)
            service.check_method(check_vote(body)["method"])
            record = await run_in_threadpool(record_vote, service.storage, body)
        except ServiceError as exc:
            return error(exc)
        return JSONResponse({"recorded": record}, status_code=201)

    return [
        Route("/", page, methods=["GET"]),
        Route("/source", source, methods=["GET"]),
        Route("/source/page", pdf_page, methods=["GET"]),
        Route("/vote", vote, methods=["POST"]),
    ]
