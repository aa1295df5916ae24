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
  Given the source lines (``render``), a mostly new alternative whose lines overlap or lie
  within ``join_gap`` lines of a packed item of its document joins it instead
  (:func:`joined`): each line once, one slot for one run of lines, a short piece kept when
  it extends packed lines.
* :func:`pack_shrinking` (**members**, the element graph's bundles): each candidate is a list
  of members in priority order, rendered to items; one that does not fit loses its
  lowest-priority members first; the first candidate, if even its first member does not
  fit, is that member cut to the budget.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.line_structure import source_lines
from edaqa_pipeline.text.counting import CHARS_PER_TOKEN, EVIDENCE_BUDGET_TOKENS

M = TypeVar("M")
MIN_ROOM_CHARS = 80  # below this much room left, no further alternative is considered


def truncated(item: EvidenceItem, max_chars: int) -> EvidenceItem:
    """``item`` cut to its first ``max_chars`` characters; its line kinds, line numbers and
    end line cut with it, so it claims only the lines it still shows."""
    text = item.text[:max_chars]
    if text.endswith("\n"):
        text = text[:-1]  # cut just after a line: nothing of the next line is shown
    count = text.count("\n") + 1
    lines = source_lines(item)[:count]  # [] when the text is not its lines line for line
    end = lines[-1] if lines else item.end_line
    return replace(item, text=text, line_kinds=item.line_kinds[:count], line_numbers=item.line_numbers[:count],
                   line_subjects=item.line_subjects[:count], end_line=end)


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
    """The (document, line) pairs an item shows (a bundle of separate runs: its own lines,
    not the lines between them); PDF items count by page."""
    if item.start_line is None or item.end_line is None:
        return {(item.doc, f"p{item.page}:{item.evidence_id}")}
    if item.line_numbers:
        return {(item.doc, line) for line in item.line_numbers}
    return {(item.doc, line) for line in range(item.start_line, item.end_line + 1)}


Renderer = Callable[[str, Sequence[int]], tuple[str, tuple[str, ...]] | None]
"""The source text and line kinds of some lines of a document (``LineStructure.render``)."""


def _nearest(a: Sequence[int], b: Sequence[int]) -> tuple[int, int]:
    """The closest pair (x from ``a``, y from ``b``) of two sorted line lists."""
    best = (a[0], b[0])
    for x in a:
        at = bisect_left(b, x)
        for y in b[max(at - 1, 0):at + 1]:
            if abs(x - y) < abs(best[0] - best[1]):
                best = (x, y)
    return best


def joined(host: EvidenceItem, other: EvidenceItem, render: Renderer, gap: int) -> EvidenceItem | None:
    """``host`` and ``other`` as one item when they are lines of one Markdown document that
    overlap or lie at most ``gap`` lines apart (measured between the lines they show, so a
    bundle's hole does not count as shown): their lines and the lines between the two
    nearest, as the source has them (``render``), in reading order. The joined item keeps the
    host's rank, path and section (the path that first found it). None when they are apart,
    or a line is not known line for line. It claims no line that neither claimed but the
    ``gap`` lines it shows."""
    first, last, other_first, other_last = host.start_line, host.end_line, other.start_line, other.end_line
    if host.doc != other.doc or host.page is not None or other.page is not None:
        return None
    if first is None or last is None or other_first is None or other_last is None:
        return None
    if other_first > last + gap + 1 or first > other_last + gap + 1:
        return None  # apart: nothing to render
    a, b = source_lines(host), source_lines(other)
    if not a or not b:
        return None
    x, y = _nearest(sorted(a), sorted(b))
    if abs(x - y) > gap + 1:
        return None
    lines = set(a) | set(b) | set(range(min(x, y) + 1, max(x, y)))  # the gap between them
    ordered = sorted(lines)
    rendered = render(host.doc, ordered)
    if rendered is None:
        return None
    text, kinds = rendered
    contiguous = ordered[-1] - ordered[0] + 1 == len(ordered)
    subjects = {**_line_subjects(b, other), **_line_subjects(a, host)}
    return replace(host, chunk_id="", text=text, start_line=ordered[0], end_line=ordered[-1],
                   line_numbers=() if contiguous else tuple(ordered), line_kinds=kinds,
                   line_subjects=tuple(subjects.get(n, "") for n in ordered) if subjects else (),
                   element_ids=tuple(dict.fromkeys((*host.element_ids, *other.element_ids))),
                   score=max(host.score, other.score))


def _line_subjects(lines: list[int], item: EvidenceItem) -> dict[int, str]:
    """Source line -> ``item.line_subjects`` ({} when the item does not carry them)."""
    return dict(zip(lines, item.line_subjects, strict=True)) if len(item.line_subjects) == len(lines) else {}


def _join(items: list[EvidenceItem], item: EvidenceItem, render: Renderer, gap: int) -> tuple[int, EvidenceItem, list[int]] | None:
    """(position, joined item, positions it absorbs) when ``item`` joins packed items: the
    first packed item it joins takes it, then every other packed item the result reaches."""
    for host_at, host in enumerate(items):
        merged = joined(host, item, render, gap)
        if merged is None:
            continue
        absorbed: list[int] = []
        grown = True
        while grown:
            grown = False
            for n, other in enumerate(items):
                if n == host_at or n in absorbed:
                    continue
                more = joined(merged, other, render, gap)
                if more is not None:
                    merged, grown = more, True
                    absorbed.append(n)
        return host_at, merged, absorbed
    return None


def pack_candidates(candidates: Sequence[Candidate], k: int, budget_chars: int,
                    max_overlap: float = 0.5, min_chars: int = 0, render: Renderer | None = None,
                    join_gap: int = -1) -> list[EvidenceItem]:
    """The first fitting, mostly new alternative of each candidate in order (module
    docstring). With ``render`` and ``join_gap`` >= 0, a mostly new alternative that overlaps
    a packed item of its document or lies within ``join_gap`` lines of it joins that item
    (``joined``): no line is shown twice and it takes no slot, so once ``k`` items are packed
    a candidate's first alternative may still join."""
    shown: set[tuple[str, int | str]] = set()
    used = 0
    items: list[EvidenceItem] = []
    fragments: list[EvidenceItem] = []
    joining = render is not None and join_gap >= 0
    for candidate in candidates:
        if budget_chars - used < MIN_ROOM_CHARS or (len(items) >= k and not joining):
            break
        for n, item in enumerate(candidate.alternatives):
            if n and len(items) >= k:
                break  # every slot taken: a narrower alternative is not even cut
            lines = item_lines(item)
            if len(lines & shown) >= max_overlap * len(lines):
                continue  # mostly in the context already: try the narrower alternative
            if joining and items and render is not None:  # ``render`` repeated for the type checker
                found = _join(items, item, render, join_gap)
                if found is not None:
                    at, merged, absorbed = found
                    cost = len(merged.text) - len(items[at].text) - sum(len(items[n].text) for n in absorbed)
                    if used + cost > budget_chars:
                        continue
                    used += cost
                    shown |= item_lines(merged)
                    items[at] = merged
                    items = [it for n, it in enumerate(items) if n not in absorbed]
                    break
            if len(items) >= k:
                break  # every slot taken: only a candidate's first alternative may still join
            if len(item.text) < min_chars:
                fragments.append(item)  # alternatives are read once: keep it for the fallback
                continue
            if used + len(item.text) > budget_chars:
                continue
            used += len(item.text)
            shown |= lines
            items.append(item)
            break
    if not items and fragments:  # only fragments matched: they are better than no evidence
        return pack_candidates([Candidate([f], 0.0) for f in fragments], k, budget_chars, max_overlap,
                               render=render, join_gap=join_gap)
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
