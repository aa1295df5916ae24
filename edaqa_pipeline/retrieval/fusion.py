"""Score and rank fusion shared by the hybrid methods."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

RRF_K = 60


def rrf(rankings: Sequence[Sequence[Hashable]], k: int = RRF_K,
        weights: Sequence[float] | None = None) -> dict[Hashable, float]:
    """(Weighted) reciprocal rank fusion: sum over rankings of w / (k + rank), rank 1-based."""
    scores: dict[Hashable, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def fused_score(sim_base: float, sim_func: float, alpha: float = 0.4) -> float:
    """The primary paper's unified reranker, equation (5): alpha*sim_base + (1-alpha)*sim_func."""
    return alpha * sim_base + (1.0 - alpha) * sim_func


def max_normalised(values: dict[Hashable, float]) -> dict[Hashable, float]:
    """Scores divided by the best one (an empty or all-zero map is returned as is)."""
    best = max(values.values(), default=0.0)
    return {key: v / best for key, v in values.items()} if best > 0 else dict(values)
