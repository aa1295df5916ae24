"""Counters an LLM client keeps so assets can report cost and health as Dagster metadata.

``calls`` counts requests actually sent to the provider (every transport retry and every
validation re-ask is a request, and each one is billed), so ``calls - retries`` is the number
of logical structured calls. A cache hit sends nothing and only bumps ``cache_hits``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


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

    def as_metadata(self) -> dict[str, float | int]:
        """Flat, prefixed numbers suitable for ``MaterializeResult(metadata=...)``."""
        out: dict[str, float | int] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f"llm_{f.name}"] = round(value, 3) if isinstance(value, float) else value
        return out

    def merge(self, other: LLMStats) -> LLMStats:
        """Add ``other`` into this object (in place) and return ``self`` for chaining."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def copy(self) -> LLMStats:
        return LLMStats(**{f.name: getattr(self, f.name) for f in fields(self)})
