"""The one error type of the service, shared by every surface that calls it.

A caller (the CLI, the HTTP server, an MCP tool) needs two things from a failure it did not
cause by a bug: a one-line message the user can act on, and how to classify it. ``status`` is
HTTP-shaped so the server can answer with it directly and the CLI can ignore it: 400 the
request itself is wrong (empty question, k out of range, bad range of lines), 404 the thing
asked for does not exist here (an unknown or unbuilt method, a document that is not indexed,
a storage root without an index), 409 it exists but cannot be used in this state (a method
whose retriever cannot be built, an index built with another encoder, a model that is asked
for but not configured), 504 it ran past the server's deadline. ``param`` and ``code`` fill OpenAI's error shape on the ``/v1``
routes.
"""

from __future__ import annotations

BAD_REQUEST = 400
NOT_FOUND = 404
CONFLICT = 409
GATEWAY_TIMEOUT = 504


class ServiceError(RuntimeError):
    """A problem the caller can fix, described in one line."""

    def __init__(self, message: str, status: int = BAD_REQUEST, param: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.param, self.code = status, param, code
