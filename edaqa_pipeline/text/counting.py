"""Token counting: one approximation for every budget (chunk bounds, packing, LLM estimates).

Tokens = characters / 4, rounded up. The encoders and the LLM have their own tokenizers; this
count is what the 2,048-token evidence budget and the chunk bound are defined in, so every
stage and every metric agrees on it.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4
EVIDENCE_BUDGET_TOKENS = 2048


def approx_tokens(text: str) -> int:
    """ceil(len(text) / 4)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def chars_for_tokens(n_tokens: int) -> int:
    return n_tokens * CHARS_PER_TOKEN
