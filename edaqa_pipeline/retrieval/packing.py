"""The evidence budget: which ranked items an answerer gets (one rule for every consumer).

The answerer, the ``@2048t`` metrics and ``context_tokens_mean`` must all describe the same
evidence, so the packing is defined once, here, below every layer that needs it (methods,
generation, evaluation). Tokens are characters / 4 (``text.counting``).

:func:`pack_to_budget` keeps items in rank order while the total stays within the budget and
STOPS at the first item that would overflow (it does not skip it to try smaller items further
down). The first item always counts, truncated to the budget if it alone is too long.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.text.counting import CHARS_PER_TOKEN, EVIDENCE_BUDGET_TOKENS


def pack_to_budget(
    items: Sequence[EvidenceItem], budget_tokens: int = EVIDENCE_BUDGET_TOKENS
) -> list[EvidenceItem]:
    """The evidence prefix that fits in ``budget_tokens`` (first item truncated; STOP rule)."""
    budget_chars = budget_tokens * CHARS_PER_TOKEN
    packed: list[EvidenceItem] = []
    used = 0
    for item in items:
        if not packed:
            first = (
                item
                if len(item.text) <= budget_chars
                else replace(item, text=item.text[:budget_chars])
            )
            packed.append(first)
            used = len(first.text)
            continue
        if used + len(item.text) > budget_chars:
            break
        packed.append(item)
        used += len(item.text)
    return packed


def context_tokens(items: Sequence[EvidenceItem]) -> float:
    """Characters / 4 of the items' texts (not rounded: the metric averages it)."""
    return sum(len(i.text) for i in items) / CHARS_PER_TOKEN
