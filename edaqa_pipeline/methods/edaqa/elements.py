"""EDAQA's element path: evidence bundles from the element graph (TechDocRAG's steps).

Identifier-aware recall over the element identifier view, expansion along the relations the
query's intent asks for, a summary rerank, and bundles with the members a reader needs (a
table row with its header, every step of a procedure, a whole code block); the steps are the
shared ones of ``graphs.elements``, composed here with EDAQA's settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from edaqa_pipeline.graphs.elements.bundles import pack
from edaqa_pipeline.graphs.elements.expansion import ExpansionLimits, expand
from edaqa_pipeline.graphs.elements.index import ElementIndex
from edaqa_pipeline.graphs.elements.intent import QueryAnalysis
from edaqa_pipeline.graphs.elements.recall import RecallWeights, identifier_recall
from edaqa_pipeline.graphs.elements.rerank import rerank, select_bundles
from edaqa_pipeline.model import EvidenceItem


@dataclass(frozen=True)
class ElementPathConfig:
    """The element path's numbers (``EdaqaConfig.elements``): ``techdoc``'s, but for ``top_l``.
    The dev figures quoted are from docs/edaqa.md (dev26, its check split and ORD-MMBench's
    text questions)."""

    recall: RecallWeights = field(default_factory=RecallWeights)
    """Equation 9's weights and candidate limits, as ``techdoc`` uses them (not tuned)."""
    expansion: ExpansionLimits = field(default_factory=ExpansionLimits)
    """Equation 10's expansion limits, as ``techdoc`` uses them (not tuned)."""
    alpha: float = 0.5
    """Weight of the summary cosine in the rerank (TechDocRAG equation 11), ``techdoc``'s
    value. Dropping it (0) lowers doc_recall@1: MMBench 0.866 -> 0.821, dev26 1.000 -> 0.970."""
    beta: float = 0.35
    """Weight of RelScore (the recall score decayed per hop) in the rerank, ``techdoc``'s
    value. Not tuned."""
    gamma: float = 0.15
    """Weight of the intent's type prior in the rerank, ``techdoc``'s value. Not tuned."""
    top_k: int = 10
    """Elements kept by identifier recall, TechDocRAG's top-10 (Table 3); 20 was flat or up on
    one dev set and down on another."""
    top_l: int = 6
    """Bundles kept after the rerank (TechDocRAG's Table 3 keeps 5); 4, 8 and 10 were each
    flat or up on one dev set and down on another."""
    bundle_chars: int = 2600
    """Characters one bundle may hold: members are taken in priority order while they fit (a
    table that does not fit keeps its header). ``techdoc``'s cap, about a third of the
    8,192-character evidence budget; 1,600 and 4,000 were each flat or up on one dev set and
    down on another."""


def element_items(index: ElementIndex, analysis: QueryAnalysis, e_q: np.ndarray, k: int,
                  budget_chars: int, config: ElementPathConfig) -> list[EvidenceItem]:
    """The element path's ranked evidence items (bundles), at most ``k``, under the budget."""
    seeds = identifier_recall(index, analysis.identifiers, analysis.tokens, config.top_k, config.recall)
    if not seeds:
        return []
    expanded = expand(index, seeds, analysis.policy, config.expansion)
    ranked = rerank(index, expanded, analysis.policy, e_q, config.alpha, config.beta, config.gamma)
    bundles = select_bundles(index, ranked, analysis.policy.bundle, config.top_l, config.bundle_chars)
    return pack(index, bundles, k, budget_chars, "elements")
