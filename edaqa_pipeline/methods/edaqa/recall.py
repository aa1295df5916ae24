"""EDAQA's chunk recall paths and their fusion (see ``retriever``'s module docstring)."""

from __future__ import annotations

import time

import numpy as np

from edaqa_pipeline.graphs.chipkg.passages import PassageRanker, PPRSeeds
from edaqa_pipeline.methods.edaqa.index import ChunkIdentifierIndex
from edaqa_pipeline.retrieval.encoders import query_vector
from edaqa_pipeline.retrieval.fusion import rrf, weighted_score_fusion
from edaqa_pipeline.retrieval.snapshot import IndexSnapshot
from edaqa_pipeline.retrieval.topk import top_k

Paths = dict[str, list[tuple[int, float]]]


def lap(t: float) -> tuple[float, float]:
    now = time.perf_counter()
    return now, (now - t) * 1000


def chunk_paths(snapshot: IndexSnapshot, space: IndexSnapshot, identifiers: ChunkIdentifierIndex,
                query: str, query_ids: list[str], weights: dict[str, float], depth: int,
                top_units: int) -> tuple[Paths, dict[str, float]]:
    """(chunk row, path score) lists, best first, of every path with a weight, and the time
    each took (ms). ``space`` is the snapshot in the function-aware encoder's space."""
    paths: Paths = {}
    timings: dict[str, float] = {}
    t = time.perf_counter()
    if weights["lexical"]:
        paths["lexical"] = snapshot.lexical_chunks(query, depth)
    t, timings["lexical"] = lap(t)
    if weights["identifier"]:
        scores = identifiers.scores(query_ids)
        ranked = sorted(scores, key=lambda r: (-scores[r], r))[:depth]
        paths["identifier"] = [(r, scores[r]) for r in ranked]
    t, timings["identifier"] = lap(t)
    if weights["dense"] or weights["units"]:
        q = query_vector(space.function, query)
        t, timings["encode"] = lap(t)
        if weights["dense"]:
            sims = space.function_chunk_vectors @ q
            paths["dense"] = [(r, float(sims[r])) for r in top_k(sims, depth)]
        if weights["units"] and space.unit_vectors.shape[0]:
            unit_sims = space.unit_vectors @ q
            best: dict[int, float] = {}
            for u in top_k(unit_sims, top_units):
                for r in space.unit_chunk_rows[u]:
                    best.setdefault(r, float(unit_sims[u]))
            paths["units"] = list(best.items())[:depth]
        t, timings["dense"] = lap(t)
    return paths, timings


def fuse(paths: Paths, weights: dict[str, float], method: str, rrf_k: int) -> dict[int, float]:
    """Weighted RRF over the paths' rankings (``rrf``), or a weighted sum of each path's
    scores min-max normalised over its own list (``score``); both ``retrieval.fusion``."""
    names = [n for n in paths if paths[n]]
    if method == "rrf":
        return rrf([[r for r, _ in paths[n]] for n in names], k=rrf_k, weights=[weights[n] for n in names])
    return weighted_score_fusion({n: paths[n] for n in names}, weights)  # type: ignore[return-value]


def chipkg_path(ranker: PassageRanker, qvec: np.ndarray, query: str, depth: int) -> list[tuple[int, float]]:
    """The chunks of the ChipKG's passages ranked by Personalized PageRank for the question
    (``graphs.chipkg.passages``, ChipMind's seeds), with their PPR mass."""
    ranked = ranker.rank(qvec, query, depth, PPRSeeds())
    return [(ranker.chunk_row(node), score) for node, score in ranked]
