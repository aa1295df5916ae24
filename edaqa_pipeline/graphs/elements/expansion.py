"""Intent-aware expansion over the element graph (TechDocRAG equation 10).

From each seed (a recalled element with its score), breadth-first along the relations the
query's policy allows (``intent.Policy.relations``, both edge directions) up to its
``max_hops``. Each reached element gets ``RelScore = seed score / best seed score *
hop_decay ** hops`` (the best seed that reaches it wins) and remembers the relation that
brought it in. At most ``fanout`` neighbours per element and hop, taken in the order: same
document first, then nearest in reading order, so a hub (a command named on hundreds of
elements) cannot flood the candidates; at most ``max_expanded`` elements in all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from edaqa_pipeline.graphs.elements.index import ElementIndex
from edaqa_pipeline.graphs.elements.intent import Policy


@dataclass(frozen=True)
class ExpansionLimits:
    """How far expansion reaches (module docstring). TechDocRAG (paper 003) bounds expansion
    only by the hops of its intent policies (Table 1, ``intent.POLICIES``); these limits were
    set once, before any evaluation, and are not tuned. ``techdoc`` and EDAQA's element path
    both use the defaults."""

    fanout: int = 8
    """Neighbours taken per element and hop (same document, then nearest in reading order
    first), so that a hub named on hundreds of elements cannot flood the candidates. Not
    tuned."""
    hop_decay: float = 0.5
    """Factor on RelScore per hop (RelScore = normalised seed score x hop_decay ** hops): an
    element one hop from its seed counts half as much. Not tuned."""
    max_expanded: int = 300
    """Most elements expansion holds in all, seeds included: a bound on the rerank's work.
    Not tuned."""


class Reached(NamedTuple):
    """An element found by recall (hops 0, relation ``recall``) or by expansion."""

    score: float  # RelScore: normalised seed score x hop_decay ** hops
    relation: str
    hops: int


def neighbours(index: ElementIndex, node: int, relations: frozenset[str], fanout: int) -> list[tuple[int, str]]:
    """The ``fanout`` nearest neighbours of ``node`` along ``relations`` (either direction)."""
    found = [(b, r) for b, r, _ in index.adj[node] if r in relations]
    found.sort(key=lambda t: (index.doc[t[0]] != index.doc[node],
                              abs(index.ordinal[t[0]] - index.ordinal[node]), t[0]))
    return found[:fanout]


def expand(index: ElementIndex, seeds: Sequence[tuple[int, float]], policy: Policy,
           limits: ExpansionLimits = ExpansionLimits()) -> dict[int, Reached]:
    """Every element the seeds reach under ``policy`` (seeds included, hops 0), in the order
    found; ``seeds`` best first, as ``recall.identifier_recall`` returns them."""
    best = seeds[0][1] if seeds else 1.0
    found: dict[int, Reached] = {}
    for node, score in seeds:
        rel = score / (best or 1.0)
        if node not in found or found[node].score < rel:
            found[node] = Reached(rel, "recall", 0)
    for seed, score in seeds:
        frontier = [seed]
        base = score / (best or 1.0)
        for hop in range(1, policy.max_hops + 1):
            nxt = []
            value = base * limits.hop_decay**hop
            for node in frontier:
                for b, r in neighbours(index, node, policy.relations, limits.fanout):
                    if b not in found:
                        if len(found) >= limits.max_expanded:
                            continue
                        found[b] = Reached(value, r, hop)
                        nxt.append(b)
                    elif found[b].score < value:
                        found[b] = Reached(value, r, found[b].hops)
            frontier = nxt
    return found
