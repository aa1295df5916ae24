"""Vectors of the ChipKG's entity and statement nodes, stored in the nodes table.

Vectors come from the one incremental embedder (``retrieval.embedder.Embedder``): a node keeps
its vector when its (kind, node id, text hash, encoder id) is unchanged since the previous
build, and every other node of the build is encoded in one batch with length-bucketed padding,
so an incremental build gives the same bytes as a full one. The width is the encoder's.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from edaqa_pipeline.retrieval.embedder import Embedder, text_hash, vector_series, vectors_of
from edaqa_pipeline.retrieval.encoders import Encoder

EMBEDDED_KINDS = ("entity", "statement")
VECTOR_COLUMNS = ("text_hash", "encoder_id", "vector")


def with_vectors(nodes: pl.DataFrame, encoder: Encoder, previous: pl.DataFrame | None = None
                 ) -> tuple[pl.DataFrame, Embedder]:
    """``nodes`` plus ``text_hash``, ``encoder_id`` and ``vector`` (null for surface, value and
    passage nodes); vectors of ``previous`` (the last nodes table) are reused by key."""
    known = None
    if previous is not None and set(VECTOR_COLUMNS) <= set(previous.columns):
        known = previous.filter(pl.col("vector").is_not_null())
    embedder = Embedder.from_frames(encoder, known, id_column="node_id")
    parts = []
    for kind in EMBEDDED_KINDS:
        sub = nodes.filter(pl.col("kind") == kind)
        ids, texts = sub["node_id"].to_list(), sub["text"].to_list()
        vectors = embedder.embed(kind, ids, texts)
        parts.append(sub.with_columns(
            pl.Series("text_hash", [text_hash(t) for t in texts], dtype=pl.String()),
            pl.Series("encoder_id", [encoder.encoder_id] * len(ids), dtype=pl.String()),
            vector_series("vector", vectors, encoder.dim),
        ))
    rest = nodes.filter(~pl.col("kind").is_in(list(EMBEDDED_KINDS)))
    out = pl.concat([*parts, rest], how="diagonal_relaxed").sort("node_id")
    return out, embedder


def node_vectors(nodes: pl.DataFrame) -> tuple[list[str], np.ndarray]:
    """(node ids, vectors) of the nodes that have a vector (none when the table has no
    vector column)."""
    if "vector" not in nodes.columns:
        return [], np.zeros((0, 0), np.float32)
    embedded = nodes.filter(pl.col("vector").is_not_null()).select("node_id", "vector")
    return embedded["node_id"].to_list(), vectors_of(embedded)


def vector_problems(nodes: pl.DataFrame, dim: int) -> list[str]:
    """Embedded nodes without a vector, or vectors of another width or not finite."""
    problems = []
    if "vector" not in nodes.columns:
        return ["the nodes table has no vector column"]
    missing = nodes.filter(pl.col("kind").is_in(list(EMBEDDED_KINDS)) & pl.col("vector").is_null()).height
    if missing:
        problems.append(f"{missing} entity/statement nodes have no vector")
    _, vectors = node_vectors(nodes)
    if vectors.size and vectors.shape[1] != dim:
        problems.append(f"vectors are {vectors.shape[1]} wide, the encoder's width is {dim}")
    if vectors.size and not np.isfinite(vectors).all():
        problems.append(f"{int((~np.isfinite(vectors)).any(axis=1).sum())} vectors contain NaN/inf")
    return problems
