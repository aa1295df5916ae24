"""Information-theoretic adaptive top-K (ChipMind Algorithm 1).

Start from the top ``k0`` candidates and add ``delta_k`` at a time while the Marginal
Information Gain ``MIG_t = 1 - cos(emb(summary(S_t)), emb(summary(S_t + dS)))`` exceeds
``tau``. The paper summarises with an LLM; offline the summary is extractive: the ``m`` summary
units (statement vectors) of the set most similar to the query, embedded as the normalised mean
of their precomputed vectors, so a summary changes only when new passages hold sentences more
relevant than those already gathered (MIG is exactly 0 for a redundant expansion).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def summary_embedding(unit_vectors: np.ndarray, query: np.ndarray, m: int) -> np.ndarray:
    """Embedding of the extractive summary of a set: the normalised mean of the ``m`` unit
    vectors most similar to ``query`` (ties: first units first)."""
    if unit_vectors.shape[0] == 0:
        return np.zeros_like(query)
    sims = unit_vectors @ query
    order = sorted(range(len(sims)), key=lambda i: (-sims[i], i))[:m]
    mean = unit_vectors[order].mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean


def mig(base: np.ndarray, new: np.ndarray) -> float:
    """Marginal information gain proxy: cosine distance between two summary embeddings."""
    nb, nn = float(np.linalg.norm(base)), float(np.linalg.norm(new))
    if nb == 0 or nn == 0:
        return 1.0 if nb != nn else 0.0
    return max(0.0, float(1.0 - float(base @ new) / (nb * nn)))


def adaptive_k(
    ranked: Sequence[int],
    units: Callable[[Sequence[int]], np.ndarray],
    query: np.ndarray,
    *,
    k0: int,
    delta_k: int,
    tau: float,
    k_max: int,
    m: int,
    summarize: Callable[[Sequence[int]], np.ndarray] | None = None,
) -> tuple[list[int], list[float]]:
    """Algorithm 1: (S, MIG values). ``units(items)`` gives the summary units' vectors of a
    set; ``summarize`` (optional) replaces the extractive summary embedding (LLM mode)."""
    limit = min(k_max, len(ranked))
    chosen = list(ranked[: min(k0, limit)])
    migs: list[float] = []

    def emb(items: Sequence[int]) -> np.ndarray:
        return summarize(items) if summarize is not None else summary_embedding(units(items), query, m)

    base = emb(chosen)
    while len(chosen) < limit:
        delta = list(ranked[len(chosen): min(len(chosen) + delta_k, limit)])
        new = emb(chosen + delta)
        gain = mig(base, new)
        migs.append(gain)
        if gain <= tau:
            break
        chosen += delta
        base = new
    return chosen, migs
