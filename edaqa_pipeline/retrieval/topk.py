"""Top-k selection: one deterministic helper for every ranking step."""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int) -> list[int]:
    """Indexes of the ``k`` highest scores, best first; ties broken by the lower index, so a
    ranking never depends on the sort algorithm or the platform."""
    if k <= 0 or scores.size == 0:
        return []
    k = min(k, scores.size)
    part = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in part[np.lexsort((part, -scores[part]))]]
