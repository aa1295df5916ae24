"""Merging EDAQA's two evidence rankings and packing them under the token budget.

The chunk ranking (fused recall paths) and the element ranking (bundles of the element graph)
are merged by weighted reciprocal rank; each candidate has alternatives in preference order
(a chunk: whole, then its answering bundle; an alternative may be produced lazily, when the
ones before it were refused, so each candidate is packed once). Packing walks the merged order and keeps the
first alternative that fits the budget and is mostly new (at most ``max_overlap`` of its lines
already shown), at most ``k`` items: no line is shown twice beyond that, and what the reader
(or the answer model) gets is exactly what the metrics measure. An alternative shorter than
``min_chars`` is never packed: the element path's ``contains`` members can be a lone heading or
list entry of 11-60 characters, and each took one of the ``k`` slots while most of the token
budget stayed unused. When nothing but fragments matched, they are packed after all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from edaqa_pipeline.model import EvidenceItem


@dataclass(frozen=True)
class Candidate:
    """One ranked piece of evidence and its alternatives, preferred first."""

    alternatives: Iterable[EvidenceItem]  # read once, in order
    score: float


def item_lines(item: EvidenceItem) -> set[tuple[str, int | str]]:
    """The (document, line) pairs an item shows; PDF items count by page."""
    if item.start_line is None or item.end_line is None:
        return {(item.doc, f"p{item.page}:{item.evidence_id}")}
    return {(item.doc, line) for line in range(item.start_line, item.end_line + 1)}


def merge(rankings: Sequence[Sequence[Iterable[EvidenceItem]]], weights: Sequence[float],
          k: int = 60) -> list[Candidate]:
    """Weighted reciprocal-rank merge of candidate lists (one per source), best first; equal
    scores keep the earlier source's order."""
    scored: list[tuple[float, int, int, Iterable[EvidenceItem]]] = []
    for source, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        if weight <= 0:
            continue
        for rank, alternatives in enumerate(ranking, 1):
            scored.append((weight / (k + rank), source, rank, alternatives))
    scored.sort(key=lambda t: (-t[0], t[2], t[1]))
    return [Candidate(alternatives, score) for score, _, _, alternatives in scored]


def pack(candidates: Sequence[Candidate], k: int, budget_chars: int,
         max_overlap: float = 0.5, min_chars: int = 0) -> list[EvidenceItem]:
    """The first fitting, mostly new alternative of each candidate in order (module docstring)."""
    shown: set[tuple[str, int | str]] = set()
    used = 0
    items: list[EvidenceItem] = []
    fragments: list[EvidenceItem] = []
    for candidate in candidates:
        if len(items) >= k or budget_chars - used < 80:
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
        return pack([Candidate([f], 0.0) for f in fragments], k, budget_chars, max_overlap)
    return items
