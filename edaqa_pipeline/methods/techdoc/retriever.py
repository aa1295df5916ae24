"""Retriever ``techdoc``: the paper's Algorithm 1 over the element graph, composed from the
shared steps of ``edaqa_pipeline.graphs.elements`` with TechDocRAG's weights.

1. **Query analysis** (``intent.analyze``): identifiers k_q, intent z_q -> policy Omega(z_q)
   (Table 1); through the ``query_intent`` LLM task when the factory gets a model, by the
   offline rules otherwise. The query embedding e_q is computed in a background thread while
   steps 2-3 run.
2. **Identifier-aware recall** (equation 9, ``recall.identifier_recall``): the top-10
   elements by ``1.0 * BM25/max + 0.5 * IdMatch + 0.3 * MetaMatch`` over the identifier view
   (BM25 = the shared ``LexicalIndex``, k1 = 1.2, b = 0.75); candidates: the BM25 top-50 plus
   every element carrying a matched identifier.
3. **Intent-aware expansion** (equation 10, ``expansion.expand``): breadth-first along the
   policy's relations up to its hops (2; version and default: 1), 8 neighbours per element
   and hop, 300 elements at most, RelScore halved per hop.
4. **Summary-level rerank** (equation 11, here):
   ``alpha * cos(e_q, e_v) + beta * RelScore(v) + gamma * TypePrior(z_q, type_v)``; the top-5
   elements not already inside an earlier bundle are kept (top_l = 5).
5. **Raw bundling** (equation 12, ``bundles.assemble``): each kept element with the members
   its intent's roles ask for, cut at ``bundle_chars`` = 2600 characters.
6. **Pack** (equation 13, ``bundles.pack``): bundles in rank order under the 2048-token budget
   (characters / 4, the evaluation's count), at most ``k`` items; an item's ``element_ids``
   are its member elements (``chunk_id`` is empty: an item is no row of ``chunks``), its
   ``path`` is ``techdoc:<relation>`` (``recall`` for a recalled element, else the relation
   that brought the item in).

``retrieve`` returns a ``Retrieval``: the items, a JSON-able trace (intent, identifiers,
recalled / reranked elements, bundles) and per-step timings.

Weights (the paper gives none): lam = (1.0, 0.5, 0.3); alpha, beta, gamma = 0.5, 0.35, 0.15;
chosen before looking at ORD-QA results so that a semantic match dominates, the graph evidence
of recall counts about as much as two hops of distance, and the type prior breaks ties;
``docs/techdoc.md`` reports the sensitivity. ``claim_provenance`` (Pi_q, equation 15) is in
``provenance.py``.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from edaqa_pipeline.graphs.elements.bundles import Bundle, pack
from edaqa_pipeline.graphs.elements.expansion import ExpansionLimits, Reached, expand
from edaqa_pipeline.graphs.elements.index import ElementIndex, load_index
from edaqa_pipeline.graphs.elements.intent import POLICIES, Policy, QueryAnalysis, analyze
from edaqa_pipeline.graphs.elements.recall import RecallWeights, identifier_recall
from edaqa_pipeline.graphs.elements.rerank import rerank, select_bundles
from edaqa_pipeline.retrieval.record import Retrieval, retrieval
from edaqa_pipeline.retrieval.workers import encoding_pool
from edaqa_pipeline.text.counting import CHARS_PER_TOKEN, EVIDENCE_BUDGET_TOKENS


@dataclass(frozen=True)
class Weights:
    """Every number TechDocRAG's ranking depends on (module docstring).

    The paper (003) gives the retrieval depths (Table 3) but no weights; the weights here were
    set once, before any evaluation, and not tuned. On dev26 (``data/dev/openroad_dev.jsonl``)
    the summary rerank they drive gives span_cover / span_all @2048t 0.885 / 0.770 against
    0.876 / 0.760 in recall order (docs/techdoc.md).
    """

    recall: RecallWeights = field(default_factory=RecallWeights)
    """Equation 9's weights lam = (1.0, 0.5, 0.3) of BM25, IdMatch and MetaMatch, and its
    candidate limits (``graphs.elements.recall``; not tuned)."""
    expansion: ExpansionLimits = field(default_factory=ExpansionLimits)
    """How far equation 10's expansion reaches: neighbours per hop, RelScore decay per hop,
    elements in all (``graphs.elements.expansion``; not tuned). The hops per intent are
    Table 1's (``intent.POLICIES``)."""
    alpha: float = 0.5
    """Weight of the summary cosine cos(e_q, e_v) in equation 11, the largest, so that a
    semantic match dominates the rerank. Not tuned."""
    beta: float = 0.35
    """Weight of RelScore in equation 11: a recalled seed adds up to 0.35, an element one hop
    away half that. Not tuned."""
    gamma: float = 0.15
    """Weight of TypePrior(z_q, type_v) in equation 11, the smallest: the element type the
    intent targets (Table 1's primary target) breaks near-ties. Not tuned."""
    top_k: int = 10
    """Elements kept by identifier recall (equation 9's TopK): Table 3's top-10."""
    top_l: int = 5
    """Bundles kept after the rerank (equation 11's TopL), each core not inside an earlier
    bundle: Table 3's top-5."""
    bm25_k1: float = 1.2
    """BM25 term-frequency saturation of the identifier view. The paper gives none: the
    customary value, the shared ``LexicalIndex``'s default; not tuned."""
    bm25_b: float = 0.75
    """BM25 length normalisation of the identifier view. The paper gives none: the customary
    value, the shared ``LexicalIndex``'s default; not tuned."""


def trace_of(index: ElementIndex, analysis: QueryAnalysis, seeds: list[tuple[int, float]], expanded: int,
             ranked: list[tuple[int, float, str]], bundles: list[Bundle]) -> dict[str, Any]:
    """What one query did, as JSON-able data (``Retrieval.trace``)."""
    return {
        "intent": analysis.intent,
        "model_fallbacks": [analysis.fallback] if analysis.fallback else [],
        "identifiers": list(analysis.identifiers),
        "recalled": [[index.ids[i], round(s, 6)] for i, s in seeds],
        "expanded": expanded,
        "reranked": [[index.ids[n], round(s, 6)] for n, s, _ in ranked[:20]],
        "bundles": [{"core": index.ids[b.core], "score": round(b.score, 6), "relation": b.relation,
                     "members": [[index.ids[m.node], m.role, m.relation, m.header_only] for m in b.members]}
                    for b in bundles],
    }


class TechDocRetriever:
    """Coarse-to-fine element retrieval (module docstring); implements ``Retriever``.

    Holds nothing per query: one retriever may serve concurrent queries."""

    name = "techdoc"

    def __init__(self, index: ElementIndex, encoder: Any, *, weights: Weights | None = None,
                 budget_tokens: int = EVIDENCE_BUDGET_TOKENS, bundle_chars: int = 2600,
                 parallel_encode: bool = True, llm: Any = None, expansion: bool = True,
                 rerank: bool = True, bundling: bool = True) -> None:
        self.index = index
        self.encoder = encoder
        self.weights = weights or Weights()
        self.budget_chars = budget_tokens * CHARS_PER_TOKEN
        self.bundle_chars = bundle_chars
        self.llm = llm
        # ablation switches (paper Table 8): without intent-aware expansion, without summary
        # reranking (recall order), without raw bundling (the element alone)
        self.expansion, self.rerank, self.bundling = expansion, rerank, bundling
        self._pool = encoding_pool() if parallel_encode else None

    def _encode(self, query: str) -> np.ndarray:
        return np.asarray(self.encoder.encode([query])[0], dtype=np.float32)

    def rank(self, expanded: dict[int, Reached], policy: Policy, e_q: np.ndarray) -> list[tuple[int, float, str]]:
        """Step 4, equation 11: (node, score, relation that reached it), best first."""
        w = self.weights
        alpha, beta, gamma = (w.alpha, w.beta, w.gamma) if self.rerank else (0.0, 1.0, 0.0)
        return rerank(self.index, expanded, policy, e_q, alpha, beta, gamma)

    def select(self, ranked: list[tuple[int, float, str]], policy: Policy) -> list[Bundle]:
        """Step 5: the top_l bundles whose core no earlier bundle shows."""
        roles = policy.bundle if self.bundling else ()
        return select_bundles(self.index, ranked, roles, self.weights.top_l, self.bundle_chars)

    def retrieve(self, query: str, k: int) -> Retrieval:
        started = time.perf_counter()
        marks: dict[str, float] = {}

        def mark(step: str) -> None:
            marks[step] = time.perf_counter()

        future: Future[np.ndarray] | None = self._pool.submit(self._encode, query) if self._pool else None
        w = self.weights
        analysis = analyze(query, self.llm)
        mark("analysis")
        seeds = identifier_recall(self.index, analysis.identifiers, analysis.tokens, w.top_k, w.recall)
        mark("recall")
        policy = analysis.policy if self.expansion else replace(analysis.policy, max_hops=0)
        expanded = expand(self.index, seeds, policy, w.expansion)
        mark("expansion")
        e_q = future.result() if future is not None else self._encode(query)
        mark("query_encoding_wait")
        ranked = self.rank(expanded, analysis.policy, e_q)
        mark("rerank")
        bundles = self.select(ranked, analysis.policy)
        mark("bundling")
        items = pack(self.index, bundles, k, self.budget_chars, self.name)
        mark("packing")
        timings, last = {}, started
        for step, at in marks.items():
            timings[step] = (at - last) * 1000
            last = at
        timings["total"] = (last - started) * 1000
        return retrieval(self.name, query, items, timings_ms=timings,
                         trace=trace_of(self.index, analysis, seeds, len(expanded), ranked, bundles))


def make_techdoc(snapshot: Any, llm: Any = None, *, weights: Weights | None = None, **options: Any) -> TechDocRetriever:
    """The ``techdoc`` retriever over an ``IndexSnapshot`` (registry factory): the element
    index of ``snapshot`` (``graphs.elements.index.load_index``), queries encoded with the
    snapshot's base encoder; ``llm`` (an ``LLMClient``, None = offline) drives the query
    analysis. ``options``: the ``TechDocRetriever`` switches (ablations, budget)."""
    weights = weights or Weights()
    index = load_index(snapshot, k1=weights.bm25_k1, b=weights.bm25_b)
    return TechDocRetriever(index, snapshot.base, weights=weights, llm=llm, **options)


__all__ = ["POLICIES", "TechDocRetriever", "Weights", "make_techdoc", "trace_of"]
