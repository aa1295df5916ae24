"""Which failed model requests are worth sending again, and how long to wait first.

A transient failure (the server busy, restarting, rate-limiting, or a request cancelled for
going idle) may succeed on a second try; a request the server refused (400, 401, 404) will
not, and retrying it only multiplies the cost of a mistake.
"""

from __future__ import annotations

from edaqa_pipeline.llm.streaming import RequestCancelled

RETRYABLE_STATUS = frozenset({408, 409, 429})
MAX_RETRY_AFTER_S = 60.0


def is_transient(cause: BaseException) -> bool:
    import openai

    if isinstance(cause, RequestCancelled | openai.APIConnectionError):  # incl. APITimeoutError
        return True
    if isinstance(cause, openai.APIStatusError):
        return cause.status_code in RETRYABLE_STATUS or cause.status_code >= 500
    return False


def retry_after_s(cause: BaseException) -> float | None:
    response = getattr(cause, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = float(headers.get("retry-after", ""))
    except ValueError:
        return None
    return min(max(value, 0.0), MAX_RETRY_AFTER_S)
