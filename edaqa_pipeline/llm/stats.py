"""Counters an LLM client keeps so assets can report cost and health as Dagster metadata.

``calls`` counts requests actually sent to the provider (every transport retry and every
validation re-ask is a request, and each one is billed), so ``calls - retries`` is the number
of logical structured calls. A cache hit sends nothing and only bumps ``cache_hits``.
``cancelled`` counts requests closed by the client (deadline or idle timeout);
``estimated_usage`` the requests whose server sent no ``usage`` (tokens counted from the
stream, prompt tokens estimated at four characters per token); ``max_completion_tokens`` is
the longest single completion, which never exceeds the task's output budget.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, fields

_MAXIMA = frozenset({"max_completion_tokens"})


@dataclass
class LLMStats:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    errors: int = 0
    retries: int = 0
    fallbacks: int = 0
    cancelled: int = 0
    estimated_usage: int = 0
    max_completion_tokens: int = 0

    def as_metadata(self) -> dict[str, float | int]:
        """Flat, prefixed numbers suitable for ``MaterializeResult(metadata=...)``."""
        out: dict[str, float | int] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f"llm_{f.name}"] = round(value, 3) if isinstance(value, float) else value
        return out

    def merge(self, other: LLMStats) -> LLMStats:
        """Add ``other`` into this object (in place; maxima take the max) and return ``self``."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            setattr(self, f.name, max(mine, theirs) if f.name in _MAXIMA else mine + theirs)
        return self

    def copy(self) -> LLMStats:
        return LLMStats(**{f.name: getattr(self, f.name) for f in fields(self)})


@dataclass
class Usage:
    """Tokens and requests of the calls made inside one ``track_usage()`` block."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    fallbacks: int = 0  # calls the client answered with its offline fallback

    def to_json(self) -> dict[str, int]:
        return {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cache_hits": self.cache_hits}


_CURRENT: contextvars.ContextVar[Usage | None] = contextvars.ContextVar("edaqa_llm_usage", default=None)


@contextlib.contextmanager
def track_usage() -> Iterator[Usage]:
    """Collect the usage of the LLM calls this thread (or async task) makes in the block.

    A client's ``stats`` add up everything it did; this answers "what did this one answer
    cost" even when a server (``edaqa serve``) shares one client between requests."""
    usage = Usage()
    token = _CURRENT.set(usage)
    try:
        yield usage
    finally:
        _CURRENT.reset(token)


def record_usage(*, requests: int = 0, prompt_tokens: int = 0, completion_tokens: int = 0,
                 cache_hits: int = 0, fallbacks: int = 0) -> None:
    """Called by the providers for every request (and cache hit) they serve."""
    usage = _CURRENT.get()
    if usage is not None:
        usage.fallbacks += fallbacks
        usage.requests += requests
        usage.prompt_tokens += prompt_tokens
        usage.completion_tokens += completion_tokens
        usage.cache_hits += cache_hits
