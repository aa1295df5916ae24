"""Score and rank fusion: the one definition every method fuses rankings with.

* :func:`rrf`: (weighted) reciprocal rank fusion of rankings of the same keys (chunk rows,
  node ids), summed per key: the ``hybrid_rrf`` baseline, the hardware-KG method, EDAQA's
  ``fusion="rrf"`` setting.
* :func:`rrf_merge`: the same weights applied to lists of *distinct* candidates (EDAQA's
  chunk candidates and element bundles are different objects, so nothing is summed): one
  list, best first.
* :func:`weighted_score_fusion`: a weighted sum of each ranking's scores, min-max normalised
  over its own list (EDAQA's default ``fusion="score"``).
* :func:`fused_score`: the primary paper's unified reranker (its equation 5).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

RRF_K = 60
T = TypeVar("T")


def rrf_weight(rank: int, k: int = RRF_K, weight: float = 1.0) -> float:
    """What a 1-based ``rank`` contributes: ``weight / (k + rank)``."""
    return weight / (k + rank)


def rrf(rankings: Sequence[Sequence[Hashable]], k: int = RRF_K,
        weights: Sequence[float] | None = None) -> dict[Hashable, float]:
    """(Weighted) reciprocal rank fusion: sum over rankings of w / (k + rank), rank 1-based."""
    scores: dict[Hashable, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + rrf_weight(rank, k, weight)
    return scores


def rrf_merge(rankings: Sequence[Sequence[T]], weights: Sequence[float],
              k: int = RRF_K) -> list[tuple[float, T]]:
    """Distinct candidates from several rankings in one list by weighted reciprocal rank,
    best first, as (score, candidate); equal scores keep the better rank, then the earlier
    ranking. A ranking of weight 0 contributes nothing."""
    scored: list[tuple[float, int, int, T]] = []
    for source, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        if weight <= 0:
            continue
        for rank, candidate in enumerate(ranking, 1):
            scored.append((rrf_weight(rank, k, weight), source, rank, candidate))
    scored.sort(key=lambda t: (-t[0], t[2], t[1]))
    return [(score, candidate) for score, _, _, candidate in scored]


def weighted_score_fusion(rankings: Mapping[str, Sequence[tuple[Hashable, float]]],
                          weights: Mapping[str, float]) -> dict[Hashable, float]:
    """Sum over rankings of ``weights[name]`` x the key's score min-max normalised over that
    ranking's own list (1 when the list has one score)."""
    fused: dict[Hashable, float] = {}
    for name, ranking in rankings.items():
        if not ranking:
            continue
        values = [s for _, s in ranking]
        top, low = max(values), min(values)
        for key, s in ranking:
            fused[key] = fused.get(key, 0.0) + weights[name] * ((s - low) / (top - low) if top > low else 1.0)
    return fused


def fused_score(sim_base: float, sim_func: float, alpha: float = 0.4) -> float:
    """The primary paper's unified reranker, equation (5): alpha*sim_base + (1-alpha)*sim_func."""
    return alpha * sim_base + (1.0 - alpha) * sim_func


def max_normalised(values: dict[Hashable, float]) -> dict[Hashable, float]:
    """Scores divided by the best one (an empty or all-zero map is returned as is)."""
    best = max(values.values(), default=0.0)
    return {key: v / best for key, v in values.items()} if best > 0 else dict(values)
