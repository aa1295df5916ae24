"""What ``edaqa serve`` checks before a request reaches a route: who may ask, and how much.

A server a team shares meets bad requests (truncated or deeply nested JSON, huge bodies,
wrong types, binary data) and hostile ones (a web page that posts to 127.0.0.1 across sites,
or resolves its own name to 127.0.0.1: DNS rebinding). Each gets a 4xx in the route's error
shape and costs the server nothing else:

* ``GuardMiddleware`` (ASGI, before routing): on a loopback bind, the Host header must name
  the loopback address and port the server listens on (421 otherwise); when a token is set
  (``EDAQA_API_TOKEN``), every route but ``/health`` and the answer page itself (``/``: the
  page holds no data and asks the reader for the token) needs ``Authorization: Bearer TOKEN``
  (401); a body over ``MAX_BODY_BYTES`` is refused from its Content-Length (413).
* ``read_json`` (in a route): the body must be declared ``application/json`` (415: a
  cross-site form or ``text/plain`` POST cannot send it without a CORS preflight, which this
  server never answers), at most ``MAX_BODY_BYTES`` as read (413, whatever Content-Length
  claimed), valid UTF-8 JSON (400), an object (400), nested at most ``MAX_JSON_DEPTH`` deep (400).
* ``check_bind``: a bind other than loopback needs a token, or ``--insecure-no-auth`` said
  out loud: the index and the model behind it are then open to the network.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

from edaqa_pipeline.service.errors import ServiceError

MAX_BODY_BYTES = 256 * 1024  # a chat of many turns fits; a request is never a document
MAX_JSON_DEPTH = 16  # the deepest valid request (a chat message's content parts) is 4
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
UNAUTHORIZED, TOO_LARGE, UNSUPPORTED_TYPE, MISDIRECTED = 401, 413, 415, 421
OPEN_PATHS = ("/health", "/")  # what a load balancer probes; the page that asks for the token


def loopback_authorities(port: int) -> set[str]:
    """The Host header values a client on this machine sends to a loopback server on ``port``."""
    names = ("127.0.0.1", "localhost", "[::1]")
    return {f"{n}:{port}" for n in names} | (set(names) if port == 80 else set())


def check_bind(host: str, token: str | None, insecure_no_auth: bool) -> None:
    """``ServiceError`` when ``host`` is not loopback and neither a token nor
    ``insecure_no_auth`` is given."""
    if host not in LOOPBACK_HOSTS and not token and not insecure_no_auth:
        raise ServiceError(f"--host {host} serves the network: set EDAQA_API_TOKEN (clients send "
                           "'Authorization: Bearer TOKEN'), or pass --insecure-no-auth to serve "
                           "without authentication")


def json_depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


async def read_json(request: Any) -> dict[str, Any]:
    """The JSON object a Starlette ``request`` carries, or ``ServiceError`` (module docstring)."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise ServiceError(f"Content-Type must be application/json, not {media_type or 'missing'!r}",
                           status=UNSUPPORTED_TYPE)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise ServiceError(f"the request body is over {MAX_BODY_BYTES} bytes", status=TOO_LARGE)
    try:
        parsed = json.loads(bytes(body) or b"null")
    except (ValueError, RecursionError):  # bad JSON or bytes, an integer over Python's digit limit
        raise ServiceError("the request body is not valid JSON (or holds an integer of over 4,300 digits)") from None
    if not isinstance(parsed, dict):
        raise ServiceError("the request body must be a JSON object")
    if json_depth(parsed) > MAX_JSON_DEPTH:
        raise ServiceError(f"the request body nests deeper than {MAX_JSON_DEPTH} levels")
    return parsed


def error_body(path: str, exc: ServiceError) -> dict[str, Any]:
    """The error shape of the route at ``path``: OpenAI's on ``/v1``, ``{"error"}`` elsewhere."""
    if path.startswith("/v1"):
        return {"error": {"message": str(exc), "type": "invalid_request_error",
                          "param": exc.param, "code": exc.code}}
    return {"error": str(exc)}


class GuardMiddleware:
    """Host, token and body-size checks in front of every route (module docstring)."""

    def __init__(self, app: Any, *, host: str, port: int, token: str | None) -> None:
        self.app, self.token = app, token
        # on loopback only a local name reaches us honestly; elsewhere the token guards
        self.hosts = loopback_authorities(port) if host in LOOPBACK_HOSTS else None

    def _refusal(self, scope: dict[str, Any]) -> ServiceError | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.hosts is not None and headers.get("host", "").lower() not in self.hosts:
            return ServiceError(f"Host {headers.get('host', '')!r} is not this server's "
                                "loopback address", status=MISDIRECTED)
        if self.token and scope["path"] not in OPEN_PATHS:
            given = headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return ServiceError("a valid 'Authorization: Bearer TOKEN' header is required "
                                    "(EDAQA_API_TOKEN)", status=UNAUTHORIZED)
        length = headers.get("content-length", "0")
        if not length.isdigit():
            return ServiceError("Content-Length is not a number")
        if int(length) > MAX_BODY_BYTES:
            return ServiceError(f"the request body is over {MAX_BODY_BYTES} bytes", status=TOO_LARGE)
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(scope)
            if refusal is not None:
                from starlette.responses import JSONResponse

                response = JSONResponse(error_body(scope["path"], refusal), status_code=refusal.status,
                                        headers={"WWW-Authenticate": "Bearer"}
                                        if refusal.status == UNAUTHORIZED else None)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
