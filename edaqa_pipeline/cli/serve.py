"""``edaqa serve`` and ``edaqa mcp``: start the HTTP and MCP surfaces of the service
(``edaqa_pipeline.service.http``, ``edaqa_pipeline.service.mcp_server``).

This module parses the arguments, opens the service, prints where it listens (on stderr: the
MCP stdio transport owns stdout) and hands the app to uvicorn (which comes with
dagster-webserver) or to the MCP SDK, bound to 127.0.0.1 unless ``--host`` says otherwise.
The routes, their responses and their checks are the app's (``service/http.py``,
``service/guard.py``); the index is loaded once at start and each method's retriever is
built on first use and kept.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from edaqa_pipeline import service
from edaqa_pipeline.cli.query import answers_argument, storage_argument
from edaqa_pipeline.service.requests import DEFAULT_DEADLINE_S


def _cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from edaqa_pipeline.service.guard import check_bind
    from edaqa_pipeline.service.http import SETTINGS_VARIABLE, AnswerServer, create_app, preflight

    token = os.environ.get("EDAQA_API_TOKEN") or None
    settings = {"storage": args.storage, "answers": args.answers, "method": args.method, "k": args.k,
                "deadline_s": args.deadline_s, "host": args.host, "port": args.port}
    try:
        check_bind(args.host, token, args.insecure_no_auth)
        if args.workers < 1:
            raise service.ServiceError(f"--workers must be at least 1, got {args.workers}")
        # one worker is served from this process; more are processes of their own, each
        # opening the index itself, so here only what they would refuse is checked
        server = AnswerServer.open(args.storage, args.answers, args.method, args.k,
                                   args.deadline_s) if args.workers == 1 else None
        methods, answerer = (server.methods, server.answerer) if server else preflight(
            args.storage, args.answers, args.method, args.k, args.deadline_s)
    except service.ServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.insecure_no_auth and not token:
        print(f"warning: serving {args.host} without authentication", file=sys.stderr)
    print(f"edaqa serve: http://{args.host}:{args.port} (OpenAI base URL "
          f"http://{args.host}:{args.port}/v1; models: {', '.join(methods)}; "
          f"answers: {answerer}; workers: {args.workers})", file=sys.stderr, flush=True)
    if server is not None:
        app = create_app(server, host=args.host, port=args.port, token=token)
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    else:
        os.environ[SETTINGS_VARIABLE] = json.dumps(settings)  # read by each worker's app factory
        uvicorn.run("edaqa_pipeline.service.http:app_from_environment", factory=True,
                    workers=args.workers, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    from edaqa_pipeline.service.http import AnswerServer
    from edaqa_pipeline.service.mcp_server import check_transport, run_mcp

    token = os.environ.get("EDAQA_API_TOKEN") or None
    try:  # stdout is the stdio transport's: everything else goes to stderr
        check_transport(args.transport, args.host, token)
        server = AnswerServer.open(args.storage, args.answers, args.method, args.k, args.deadline_s)
    except service.ServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    where = "stdio" if args.transport == "stdio" else f"http://{args.host}:{args.port}/mcp"
    print(f"edaqa mcp: {where} (methods: {', '.join(server.methods)}; answers: {server.answerer})",
          file=sys.stderr, flush=True)
    run_mcp(server, args.transport, args.host, args.port, token)
    return 0


def deadline_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--deadline-s", type=float, default=DEFAULT_DEADLINE_S,
                   help=f"per-request deadline in seconds (default {DEFAULT_DEADLINE_S:g}): a request "
                   "past it gets a 504 and its model call is cancelled")


def port_number(text: str) -> int:
    """A TCP port from the command line: uvicorn would bind 70000 as 70000 % 65536 and the
    server's Host check would then refuse every honest client."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port (1-65535)")
    return port


def add_serve_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("serve", help="serve cited answers over HTTP (also OpenAI-compatible)",
                       description="HTTP API: POST /ask, GET /v1/models, POST /v1/chat/completions "
                       "(model = method).")
    storage_argument(p)
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1); any "
                   "other needs EDAQA_API_TOKEN (clients send 'Authorization: Bearer TOKEN')")
    p.add_argument("--port", type=port_number, default=8000, help="TCP port, 1-65535 (default 8000)")
    p.add_argument("--insecure-no-auth", action="store_true",
                   help="serve a non-loopback --host without EDAQA_API_TOKEN")
    p.add_argument("--method", default=None, help="default method (default: edaqa when built)")
    p.add_argument("--k", type=int, default=5, help="evidence items per question (default 5)")
    deadline_argument(p)
    p.add_argument("--workers", type=int, default=1,
                   help="server processes (default 1); each answers requests concurrently and holds "
                   "its own copy of the index, so N workers use N cores and N times the memory")
    answers_argument(p)
    p.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(func=_cmd_serve)

    p = sub.add_parser("mcp", help="serve search, cited answers and source lines to MCP clients",
                       description="MCP server (tools: search, ask, read_lines, list_documents, "
                       "list_methods) over stdio, as editors launch it, or streamable HTTP at "
                       "http://127.0.0.1:PORT/mcp.")
    storage_argument(p)
    p.add_argument("--transport", default="stdio", choices=["stdio", "http"])
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1); any "
                   "other needs EDAQA_API_TOKEN, sent by clients as 'Authorization: Bearer TOKEN'")
    p.add_argument("--port", type=port_number, default=8765, help="HTTP port, 1-65535 (default 8765)")
    p.add_argument("--method", default=None, help="default method (default: edaqa when built)")
    p.add_argument("--k", type=int, default=5, help="evidence items per question (default 5)")
    deadline_argument(p)
    answers_argument(p)
    p.set_defaults(func=_cmd_mcp)
