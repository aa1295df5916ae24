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
    recall: RecallWeights = field(default_factory=RecallWeights)
    expansion: ExpansionLimits = field(default_factory=ExpansionLimits)
    alpha: float = 0.5
    beta: float = 0.35
    gamma: float = 0.15
    top_k: int = 10
    top_l: int = 6
    bundle_chars: int = 2600


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
