"""The MCP surface of the service: search, cited answers and source lines for coding agents.

An engineer writing a flow script with an agent in an editor asks through the Model Context
Protocol (the official Python SDK, ``mcp`` 2.x: ``MCPServer``). ``edaqa mcp`` serves it over
stdio (what editors launch) or streamable HTTP on loopback. Every tool calls the same
``EdaqaService`` as ``edaqa ask`` and ``edaqa serve`` (through ``AnswerServer``: its default
method and k, its answerer), so an agent gets the record a
person gets:

* ``search``: ranked evidence with citations and text, no answer (cheap; for an agent that
  reads and decides itself);
* ``ask``: the cited answer: verified claims, their narrowed citations, the answerer, and the
  numbered evidence;
* ``read_lines``: the indexed lines behind a citation (at most ``sources.MAX_LINES``);
* ``list_documents``, ``list_methods``, ``list_releases``.

``search`` and ``ask`` take a ``release`` on a storage root that holds several releases of the
manuals (``corpus.releases``); without one, the release the question names, else the newest.

A bad argument (unknown method or document, empty question, bad k or range) is the tool's
error result with the ``ServiceError`` message, never a crash; the server keeps serving.
The HTTP transport sits behind the HTTP API's guard (``guard.py``): on loopback the Host
header is checked (DNS rebinding) and so is the Origin (the SDK's check); off loopback it
needs ``EDAQA_API_TOKEN`` as a bearer token on every request; bodies over the API's size
limit are refused.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from edaqa_pipeline.service.errors import ServiceError
from edaqa_pipeline.service.guard import (
    LOOPBACK_HOSTS,
    MAX_BODY_BYTES,
    GuardMiddleware,
    loopback_authorities,
)
from edaqa_pipeline.service.requests import MAX_K
from edaqa_pipeline.service.sources import MAX_LINES

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from edaqa_pipeline.service.http import AnswerServer

TRANSPORTS = ("stdio", "http")
INSTRUCTIONS = (
    "EDAQA answers questions about EDA tool documentation (OpenROAD manuals, datasheets) with "
    "citations to exact source lines. Use `ask` for an answer whose every claim is verified "
    "against the cited lines; use `search` to read the ranked evidence yourself; use "
    "`read_lines` to see the lines around a citation such as cts.md:L73-L75."
)

Question = Annotated[str, Field(description="the question in plain words, e.g. 'What is the "
                                            "default of -sink_clustering_size in clock_tree_synthesis?'")]
Method = Annotated[str | None, Field(description="retrieval method (list_methods); omit for the "
                                                 "server's default, normally edaqa")]
K = Annotated[int | None, Field(strict=True, description=f"evidence items to retrieve (1-{MAX_K}); omit for "
                                            "the server's default")]
ReleaseName = Annotated[str | None, Field(description="the release of the documentation the "
                                          "question is about (list_releases); omit for the "
                                          "release the question names, else the newest")]


def _checked(call: Any, *args: Any) -> Any:
    """``call(*args)``, a ``ServiceError`` turned into the tool's error result (its message)."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return call(*args)
    except ServiceError as exc:
        raise ToolError(str(exc)) from None


def create_mcp_server(server: AnswerServer) -> MCPServer:
    """The MCP server of ``server``'s tools (listed in the module docstring)."""
    from mcp.server.mcpserver import MCPServer

    app = MCPServer(name="edaqa", instructions=INSTRUCTIONS, log_level="WARNING")
    service = server.service

    @app.tool()
    def search(question: Question, method: Method = None, k: K = None,
               release: ReleaseName = None) -> dict[str, Any]:
        """Retrieve the evidence a method ranks highest for a question: each item's citation
        (document and lines, or PDF page), text and score, best first. No answer is written."""
        result = _checked(server.search, question, method, k, release)
        return {"question": question, "method": result.method,
                "evidence": [item.to_json() for item in result.items]}

    @app.tool()
    def ask(question: Question, method: Method = None, k: K = None,
            release: ReleaseName = None) -> dict[str, Any]:
        """Answer a question from the documents. Returns the answer text with inline citations,
        its claims (each verified against the cited lines, with narrowed citations), which
        answerer wrote it, whether the documents do not answer it, and the evidence items."""
        return _checked(partial(server.ask, release=release), question, method, k)

    @app.tool()
    def read_lines(
        document: Annotated[str, Field(description="an indexed document, as list_documents "
                                                   "and citations name it (e.g. cts.md)")],
        start: Annotated[int, Field(strict=True, description="first line, 1-based")],
        end: Annotated[int, Field(strict=True, description=f"last line, inclusive; at most {MAX_LINES} lines")],
    ) -> dict[str, Any]:
        """The indexed text of lines start..end of a Markdown document: what a citation such
        as cts.md:L73-L75 points at. Widen the range a few lines to see the context."""
        return _checked(service.read_lines, document, start, end).to_json()

    @app.tool()
    def list_documents() -> dict[str, Any]:
        """The documents the index holds (names as citations give them)."""
        return {"storage": str(service.storage), "documents": service.documents}

    @app.tool()
    def list_releases() -> dict[str, Any]:
        """The releases of the documentation the index holds (name, date), oldest first, and
        the newest (what a question that names none is about); empty for a single corpus."""
        known = service.releases
        return {"newest": known.newest, "releases": [{"name": r.name, "date": r.date} for r in known.items]}

    @app.tool()
    def list_methods() -> dict[str, Any]:
        """The retrieval methods built here and the default one."""
        return {"methods": service.methods, "default": server.default_method,
                "answerer": server.answerer}

    return app


def check_transport(transport: str, host: str, token: str | None = None) -> None:
    """``ServiceError`` unless ``transport`` is ``stdio``, or ``http`` on a loopback ``host``
    or with a token (``EDAQA_API_TOKEN``) off it."""
    if transport not in TRANSPORTS:
        raise ServiceError(f"transport {transport!r}: choose from {', '.join(TRANSPORTS)}")
    if transport == "http" and host not in LOOPBACK_HOSTS and not token:
        raise ServiceError(f"edaqa mcp --host {host} serves the network: set EDAQA_API_TOKEN "
                           "(clients send 'Authorization: Bearer TOKEN'), or serve loopback only "
                           f"({', '.join(LOOPBACK_HOSTS)})")


def run_mcp(server: AnswerServer, transport: str, host: str, port: int, token: str | None = None) -> None:
    """Serve ``server`` over ``transport`` (``stdio`` or ``http``: streamable HTTP at
    ``http://host:port/mcp`` behind the HTTP API's guard: Host header on loopback, bearer
    ``token`` when given, body size)."""
    import anyio

    check_transport(transport, host, token)
    app = create_mcp_server(server)
    if transport == "stdio":
        anyio.run(app.run_stdio_async)
        return
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    security = None
    if host in LOOPBACK_HOSTS:  # the SDK's Origin check too (a cross-site page's POST)
        hosts = sorted(loopback_authorities(port))
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                             allowed_origins=[f"http://{h}" for h in hosts])
    http_app = app.streamable_http_app(transport_security=security, host=host,
                                       max_request_body_size=MAX_BODY_BYTES)
    uvicorn.run(GuardMiddleware(http_app, host=host, port=port, token=token), host=host, port=port,
                log_level="warning")
