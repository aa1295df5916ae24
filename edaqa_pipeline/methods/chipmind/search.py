"""One retrieval step of ChipMind over the ChipKG: seed, Personalized PageRank, adaptive K,
CSA filter (paper 3.3; the reasoning loop around it is ``reasoning``).

The seeding and the PPR ranking of passages are the shared ``graphs.chipkg.passages``
(``PassageRanker``, seeds from ``ChipMindConfig.seeds``); this module adds ChipMind's own
steps: the adaptive K of Algorithm 1, the belief-state summaries and the CSA filter.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edaqa_pipeline.graphs.chipkg.graph import KGGraph
from edaqa_pipeline.graphs.chipkg.passages import PassageRanker
from edaqa_pipeline.llm import LLMError
from edaqa_pipeline.methods.chipmind.adaptive import adaptive_k, summary_embedding
from edaqa_pipeline.methods.chipmind.anchors import compatible
from edaqa_pipeline.methods.chipmind.config import GENERATIVE_TEMPERATURE, ChipMindConfig
from edaqa_pipeline.methods.chipmind.tasks import SummaryOut
from edaqa_pipeline.model import EvidenceItem


@dataclass
class Step:
    """One retrieval (the question or a sub-query): candidates after adaptive K, those the
    CSA filter kept, the MIG values, PPR scores (normalised by the step's best)."""

    query: str
    target: tuple[str, str]
    also: tuple[str, ...]  # further target entities (the other entities the query names)
    candidates: list[int]
    kept: list[int]
    migs: list[float]
    fell_back: bool
    scores: dict[int, float] = field(default_factory=dict)
    llm_ms: float = 0.0  # time in the belief-state summaries (model mode)
    model_fallbacks: list[str] = field(default_factory=list)  # why a model step fell back


@dataclass
class KGSearch:
    snapshot: Any  # IndexSnapshot
    graph: KGGraph
    config: ChipMindConfig
    llm: Any  # LLMClient (OfflineClient for the rules)
    uses_model: bool = False

    def __post_init__(self) -> None:
        g = self.graph
        self._emb_pos = {int(r): i for i, r in enumerate(g.embedded_rows)}
        self.passages = PassageRanker(self.snapshot, g)
        self._units: dict[int, np.ndarray] = {}
        names = g.nodes["canonical"].to_list()
        self._stmt_mentions = {st: frozenset(names[e] for e in ents) for st, ents in g.statement_mentions.items()}

    # -- passages --

    def known(self, name: str) -> bool:
        return name.lower() in self.graph.entity_by_name

    def text(self, node: int) -> str:
        snap = self.passages.chunk_row(node)
        return self.snapshot.chunk_records[snap]["text"] if snap >= 0 else ""

    def item(self, node: int, score: float, path: str) -> EvidenceItem:
        return self.snapshot.chunk_item(self.passages.chunk_row(node), score, path)

    def units(self, node: int) -> np.ndarray:
        """Summary units of a passage: its statements' vectors (else the chunk vector)."""
        got = self._units.get(node)
        if got is None:
            rows = [self._emb_pos[s] for s in self.graph.passage_statements.get(node, []) if s in self._emb_pos]
            snap = self.passages.chunk_row(node)
            if rows:
                got = self.graph.vectors[rows]
            elif snap >= 0:
                got = self.snapshot.chunk_vectors[snap: snap + 1]
            else:
                got = np.zeros((0, self.snapshot.dim), np.float32)
            self._units[node] = got
        return got

    # -- the step --

    def rank(self, qvec: np.ndarray, query: str, depth: int) -> list[tuple[int, float]]:
        """Passage nodes by PPR mass for one (sub-)query: [(passage node row, score)] (the
        shared ``graphs.chipkg.passages`` ranking with this config's seeds)."""
        return self.passages.rank(qvec, query, depth, self.config.seeds)

    def summarize(self, query: str, qvec: np.ndarray, items: Sequence[int], spent: list[float],
                  notes: list[str]) -> np.ndarray:
        """Algorithm 1's belief-state summary with a model: the summary text's embedding
        (milliseconds appended to ``spent``). A model that fails gives the extractive summary
        instead (as offline), and one line on why joins ``notes``."""
        started = time.perf_counter()
        try:
            out = self.llm.complete_structured(
                "chipmind_summary", {"query": query, "passages": [self.text(i) for i in items],
                                     "sentences": [], "m": self.config.summary_sentences},
                SummaryOut, temperature=GENERATIVE_TEMPERATURE)
        except LLMError as exc:
            notes.append(f"belief-state summary fell back to the extractive one: {exc.one_line()}")
            units = np.concatenate([self.units(i) for i in items]) if items else np.zeros((0, qvec.shape[0]), np.float32)
            return summary_embedding(units, qvec, self.config.summary_sentences)
        finally:
            spent.append((time.perf_counter() - started) * 1000)
        return self.snapshot.base.encode([out.summary])[0]

    def cut(self, ranked: list[int], qvec: np.ndarray, query: str, k: int,
            spent: list[float], fallbacks: list[str]) -> tuple[list[int], list[float]]:
        """AdaptiveKRetrieve: Algorithm 1 over the ranked passages (fixed K when disabled)."""
        cfg = self.config
        if not cfg.adaptive_k:
            return ranked[: min(cfg.fixed_k, k)], []
        empty = np.zeros((0, qvec.shape[0]), np.float32)
        return adaptive_k(
            ranked, lambda items: np.concatenate([self.units(i) for i in items]) if items else empty,
            qvec, k0=cfg.k0, delta_k=cfg.delta_k, tau=cfg.tau, k_max=min(cfg.k_max, k),
            m=cfg.summary_sentences,
            summarize=(lambda items: self.summarize(query, qvec, items, spent, fallbacks))
            if self.uses_model else None,
        )

    def compatible(self, node: int, target: tuple[str, str], also: tuple[str, ...] = ()) -> bool:
        """A statement of the passage is compatible with the target anchor or, for the further
        entities ``also``, with (target type, that entity)."""
        targets = [target, *((target[0], e) for e in also)]
        stmts = self.graph.passage_statements.get(node, [])
        for s in stmts:
            anchor = self.graph.anchors.get(s)
            mentioned = self._stmt_mentions.get(s, frozenset())
            if anchor and any(compatible(anchor, t, mentioned) for t in targets):
                return True
        if not stmts:  # no statement: judge by the text
            text = self.text(node).lower()
            return not target[1] or any(t[1].lower() in text for t in targets)
        return False

    def filter(self, cand: list[int], target: tuple[str, str], also: tuple[str, ...] = ()) -> tuple[list[int], bool]:
        """CSAGuidedFilter: (kept, fell_back): the compatible candidates, all of them when none
        is compatible."""
        if not self.config.anchor_filter:
            return cand, False
        kept = [c for c in cand if self.compatible(c, target, also)]
        return (kept, False) if kept else (cand, True)

    def step(self, query: str, qvec: np.ndarray, target: tuple[str, str], k: int,
             also: tuple[str, ...] = ()) -> Step:
        """Rank, cut and filter for one (sub-)query."""
        depth = max(self.config.k_max, k, self.config.fixed_k)
        ranked = self.rank(qvec, query, depth)
        top = max((s for _, s in ranked), default=1.0) or 1.0
        spent: list[float] = []
        fallbacks: list[str] = []
        cand, migs = self.cut([n for n, _ in ranked], qvec, query, k, spent, fallbacks)
        kept, fell_back = self.filter(cand, target, also)
        scores = {n: s / top for n, s in ranked}
        return Step(query, target, also, cand, kept, migs, fell_back, scores, sum(spent),
                    list(dict.fromkeys(fallbacks)))
