"""Summary-level rerank and bundle selection over the element graph (TechDocRAG equation 11
and the first half of step 5), shared by every method that retrieves elements."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edaqa_pipeline.graphs.elements.bundles import Bundle, assemble
from edaqa_pipeline.graphs.elements.expansion import Reached
from edaqa_pipeline.graphs.elements.index import ElementIndex
from edaqa_pipeline.graphs.elements.intent import Policy


def rerank(index: ElementIndex, expanded: dict[int, Reached], policy: Policy, e_q: np.ndarray,
           alpha: float, beta: float, gamma: float) -> list[tuple[int, float, str]]:
    """(node, score, relation that reached it), best first, by
    ``alpha * cos(e_q, e_v) + beta * RelScore(v) + gamma * TypePrior(z_q, type_v)``."""
    rows = np.fromiter(expanded, dtype=np.int64, count=len(expanded))
    cos = index.vectors[rows] @ e_q if rows.size else np.zeros(0)
    ranked = [
        (node, alpha * float(cos[n]) + beta * expanded[node].score
         + gamma * policy.type_prior.get(index.type[node], 0.0), expanded[node].relation)
        for n, node in enumerate(rows.tolist())
    ]
    ranked.sort(key=lambda t: (-t[1], index.ordinal[t[0]], t[0]))
    return ranked


def select_bundles(index: ElementIndex, ranked: Sequence[tuple[int, float, str]], roles: Sequence[str],
                   top_l: int, max_chars: int) -> list[Bundle]:
    """The ``top_l`` bundles, in rank order, whose core no earlier bundle already shows."""
    bundles: list[Bundle] = []
    covered: set[int] = set()
    for node, score, relation in ranked:
        if len(bundles) >= top_l:
            break
        if node in covered:
            continue
        bundle = assemble(index, node, score, relation, roles, max_chars)
        bundles.append(bundle)
        for m in bundle.members:
            covered |= index.coverage(m.node, m.header_only)
    return bundles
