"""The one exception the LLM layer raises.

Callers (assets, the CLI) should not have to know about openai, httpx or instructor exception
types: every final failure surfaces as an ``LLMError`` that names what failed, where, and why,
and never carries the API key.
"""

from __future__ import annotations


class LLMError(RuntimeError):
    """A structured LLM call failed for good (after the last retry) or was misconfigured."""

    def __init__(
        self,
        message: str,
        *,
        task: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        attempts: int = 0,
        cause: str | None = None,
    ) -> None:
        super().__init__(message)
        self.task = task
        self.provider = provider
        self.model = model
        self.attempts = attempts
        self.cause = cause

    def one_line(self) -> str:
        """What a user is told when a model step falls back: the cause and the first line."""
        return f"the model failed ({self.cause or 'error'}): {str(self).splitlines()[0][:300]}"


def redact(text: str, *secrets: str | None) -> str:
    """Replace every occurrence of each non-trivial secret in ``text`` with ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text
