"""The primary paper's function-aware retrieval (paper 000, Algorithm 1, lines 11-17).

* ``fa_units``: the top-M units by the function-aware encoder, expanded to their chunks only
  (the ablation row "+ functional unit organisation"), ordered in the function space.
* ``fa_hybrid``: top-M = 10 units expanded through chunks(e), plus the top-N = 5 chunks by
  the base encoder, deduplicated, reranked by the unified score of equation (5),
  s(c) = alpha sim_base(q, c) + (1 - alpha) sim_func(q, c) with alpha = 0.4, top-K.
* ``fa_hybrid_tuned``: ``fa_hybrid`` with the trained LoRA adapter as f_func.

Until an adapter is trained the function-aware encoder IS the base encoder
(``snapshot.function.is_base``): sim_func == sim_base, and ``fa_hybrid`` differs from ``dense``
only through the candidates the unit path adds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from edaqa_pipeline.retrieval.fusion import fused_score
from edaqa_pipeline.retrieval.record import Retrieval, retrieval
from edaqa_pipeline.retrieval.snapshot import IndexSnapshot
from edaqa_pipeline.retrieval.topk import top_k


@dataclass
class FunctionAwareRetriever:
    """Unit path (+ chunk path for ``fa_hybrid``) with the unified reranker."""

    snapshot: IndexSnapshot
    name: str = "fa_hybrid"
    top_units: int = 10
    """Functional units retrieved by the function-aware encoder and expanded to their source
    chunks (Algorithm 1, line 12, k_p): the paper's top-M = 10 (section 4, "Implementation")."""
    top_chunks: int = 5
    """Chunks retrieved directly by the base encoder (Algorithm 1, line 14, k_c); 0 = the unit
    path only (``fa_units``). The paper's top-N = 5 (section 4, "Implementation"); on dev26
    10 or 20 lower ``fa_hybrid_tuned``'s span_cover@2048t to 0.783-0.799 from 0.813."""
    alpha: float = 0.4
    """Weight of the base-space similarity in the unified reranker, s(c) = alpha sim_base +
    (1 - alpha) sim_func (equation 5, Algorithm 1 line 16; ``fa_units`` ranks by sim_func
    alone): the paper's alpha = 0.4, kept so that the method is the paper's. On dev26
    ``fa_hybrid_tuned`` gives span_cover@2048t 0.796 / 0.802 / 0.813 / 0.814 / 0.825 at alpha
    0 / 0.2 / 0.4 / 0.6 / 0.8 (docs/training.md)."""

    def candidates(self, q_base: np.ndarray, q_func: np.ndarray) -> dict[int, str]:
        """Chunk row -> the path that found it (``unit``, ``chunk`` or ``unit+chunk``)."""
        snap = self.snapshot
        found: dict[int, str] = {}
        if snap.unit_vectors.shape[0]:
            for u in top_k(snap.unit_vectors @ q_func, self.top_units):
                for row in snap.unit_chunk_rows[u]:
                    found.setdefault(row, "unit")
        if self.top_chunks:
            for row in top_k(snap.chunk_vectors @ q_base, self.top_chunks):
                found[row] = "unit+chunk" if found.get(row) == "unit" else "chunk"
        return found

    def retrieve(self, query: str, k: int) -> Retrieval:
        started = time.perf_counter()
        snap = self.snapshot
        q_base = snap.base.encode([query])[0]
        q_func = q_base if snap.function.is_base else snap.function.encode([query])[0]
        encoded = time.perf_counter()
        found = self.candidates(q_base, q_func)
        items = []
        if found:
            rows = np.fromiter(found, dtype=np.int64)
            sim_base = snap.chunk_vectors[rows] @ q_base
            sim_func = snap.function_chunk_vectors[rows] @ q_func
            alpha = self.alpha if self.top_chunks else 0.0  # fa_units ranks in the function space
            fused = fused_score(sim_base, sim_func, alpha)
            items = [snap.chunk_item(int(rows[i]), float(fused[i]), found[int(rows[i])])
                     for i in top_k(fused, k)]
        done = time.perf_counter()
        return retrieval(self.name, query, items, trace={"candidates": len(found)},
                         timings_ms={"encode": (encoded - started) * 1000,
                                     "total": (done - started) * 1000})


def make_fa_units(snapshot: IndexSnapshot, llm: Any = None) -> FunctionAwareRetriever:
    return FunctionAwareRetriever(snapshot, name="fa_units", top_chunks=0)


def make_fa_hybrid(snapshot: IndexSnapshot, llm: Any = None) -> FunctionAwareRetriever:
    return FunctionAwareRetriever(snapshot, name="fa_hybrid")


def make_fa_hybrid_tuned(snapshot: IndexSnapshot, llm: Any = None) -> FunctionAwareRetriever:
    """``fa_hybrid`` with the trained adapter; ``NoTrainedEncoderError`` without one."""
    return FunctionAwareRetriever(snapshot.tuned_view(), name="fa_hybrid_tuned")
