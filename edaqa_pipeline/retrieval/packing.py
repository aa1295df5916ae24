"""The evidence budget: which ranked items fit, for every method and every consumer.

The answerer, the ``@2048t`` metrics and ``context_tokens_mean`` must all describe the same
evidence, so packing is defined here, below every layer that needs it (methods, graphs,
generation, evaluation). Tokens are characters / 4 (``text.counting``). Three strategies, one
per shape of ranked evidence:

* :func:`pack_to_budget` (**prefix**, the answerer's rule and every metric's): items in rank
  order while the total stays within the budget; it STOPS at the first item that would
  overflow (it does not skip it to try smaller items further down). The first item always
  counts, cut to the budget if it alone is too long.
* :func:`pack_candidates` (**alternatives**, EDAQA): each candidate offers alternatives in
  preference order (a chunk whole, then the bundle of its answering lines); the first
  alternative that fits and is mostly new (at most ``max_overlap`` of its lines already
  shown) is packed, at most ``k`` items, so no line is shown twice beyond that. An
  alternative shorter than ``min_chars`` takes no slot (a lone heading or list entry left
  most of the budget unused); when nothing but such fragments matched, they are packed.
* :func:`pack_shrinking` (**members**, the element graph's bundles): each candidate is a list
  of members in priority order, rendered to items; one that does not fit loses its
  lowest-priority members first; the first candidate, if even its first member does not
  fit, is that member cut to the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.text.counting import CHARS_PER_TOKEN, EVIDENCE_BUDGET_TOKENS

M = TypeVar("M")
MIN_ROOM_CHARS = 80  # below this much room left, no further alternative is considered


def truncated(item: EvidenceItem, max_chars: int) -> EvidenceItem:
    """``item`` cut to its first ``max_chars`` characters (its line kinds cut with it)."""
    text = item.text[:max_chars]
    return replace(item, text=text, line_kinds=item.line_kinds[: text.count("\n") + 1])


def pack_to_budget(
    items: Sequence[EvidenceItem], budget_tokens: int = EVIDENCE_BUDGET_TOKENS
) -> list[EvidenceItem]:
    """The evidence prefix that fits in ``budget_tokens`` (first item truncated; STOP rule)."""
    budget_chars = budget_tokens * CHARS_PER_TOKEN
    packed: list[EvidenceItem] = []
    used = 0
    for item in items:
        if not packed:
            first = item if len(item.text) <= budget_chars else truncated(item, budget_chars)
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


@dataclass(frozen=True)
class Candidate:
    """One ranked piece of evidence and its alternatives, preferred first."""

    alternatives: Iterable[EvidenceItem]  # read once, in order (may be produced lazily)
    score: float


def item_lines(item: EvidenceItem) -> set[tuple[str, int | str]]:
    """The (document, line) pairs an item shows; PDF items count by page."""
    if item.start_line is None or item.end_line is None:
        return {(item.doc, f"p{item.page}:{item.evidence_id}")}
    return {(item.doc, line) for line in range(item.start_line, item.end_line + 1)}


def pack_candidates(candidates: Sequence[Candidate], k: int, budget_chars: int,
                    max_overlap: float = 0.5, min_chars: int = 0) -> list[EvidenceItem]:
    """The first fitting, mostly new alternative of each candidate in order (module docstring)."""
    shown: set[tuple[str, int | str]] = set()
    used = 0
    items: list[EvidenceItem] = []
    fragments: list[EvidenceItem] = []
    for candidate in candidates:
        if len(items) >= k or budget_chars - used < MIN_ROOM_CHARS:
            break
        for item in candidate.alternatives:
            if len(item.text) < min_chars:
                fragments.append(item)  # alternatives are read once: keep it for the fallback
                continue
            lines = item_lines(item)
            if len(lines & shown) >= max_overlap * len(lines):
                continue  # mostly in the context already: try the narrower alternative
            if used + len(item.text) > budget_chars:
                continue
            used += len(item.text)
            shown |= lines
            items.append(item)
            break
    if not items and fragments:  # only fragments matched: they are better than no evidence
        return pack_candidates([Candidate([f], 0.0) for f in fragments], k, budget_chars, max_overlap)
    return items


def pack_shrinking(candidates: Sequence[Sequence[M]],
                   render: Callable[[int, Sequence[M]], list[EvidenceItem]],
                   k: int, budget_chars: int) -> list[EvidenceItem]:
    """Candidates in rank order under ``budget_chars``, at most ``k`` items. ``render(i,
    members)`` lays out candidate ``i``'s members (priority order) as items; a candidate
    that does not fit loses its last members first (module docstring)."""
    out: list[EvidenceItem] = []
    used = 0
    for index, all_members in enumerate(candidates):
        if len(out) >= k:
            break
        remaining = budget_chars - used
        members = list(all_members)
        items: list[EvidenceItem] = []
        while members:
            items = render(index, members)
            if sum(len(i.text) for i in items) <= remaining:
                break
            members.pop()  # lowest priority first
        if not members:
            if out:
                break
            items = render(index, all_members[:1])
            items = [truncated(items[0], budget_chars)]
        for item in items:
            if len(out) >= k:
                break
            out.append(item)
            used += len(item.text)
        if used >= budget_chars:
            break
    return out
